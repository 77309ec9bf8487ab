"""LLVM IR text → verified LLVM module → -O3 → object code or assembly, and
the small changes that let several modules' objects share one library."""

import re
from functools import cache

import llvmlite.binding as llvm
from llvmlite import ir

from ember.runtime.abi import METADATA_FUNCTION
from ember.runtime.errors import EmberValueError


@cache
def initialize() -> None:
    """Register every target LLVM was built with (once per process)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_asmparser()


def parse(module: ir.Module | str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR (an llvmlite module or its text).

    Raises:
        ValueError: with LLVM's message when the IR does not parse or verify.
    """
    initialize()
    try:
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
    except RuntimeError as e:
        raise EmberValueError(f"invalid LLVM IR: {str(e).strip()}") from None
    return parsed


def optimize(
    module: llvm.ModuleRef, target_machine: llvm.TargetMachine, opt_level: int = 3
) -> None:
    """Run LLVM's default `-O<opt_level>` pipeline (new pass manager) in place.

    Loop and SLP vectorization are on; the module takes the machine's triple and
    data layout so that the cost models are the target's. On a target without an
    OpenMP runtime (`has_openmp`), parallel loops run serially: see
    `define_serial_openmp`.
    """
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    if not has_openmp(target_machine.triple):
        define_serial_openmp(module)
    define_scratch(module)
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    tuning.loop_vectorization = opt_level >= 2
    tuning.slp_vectorization = opt_level >= 2
    tuning.loop_interleaving = opt_level >= 2
    tuning.loop_unrolling = opt_level >= 2
    builder = llvm.create_pass_builder(target_machine, tuning)
    passes = builder.getModulePassManager()
    try:
        passes.run(module, builder)
    finally:
        _dispose(passes, builder, tuning)


def _dispose(
    passes: llvm.ModulePassManager,
    builder: llvm.PassBuilder,
    tuning: llvm.PipelineTuningOptions,
) -> None:
    """Free the -O3 pipeline now, passes before the builder they came from.

    llvmlite 0.50's `ModulePassManager` never frees its pipeline: its MRO puts
    `ObjectRef._dispose` (a no-op) before `NewPassManager._dispose`, so
    `close()` and the garbage collector leave every pass and its state behind,
    about 100 KiB a build. `NewPassManager._dispose` is called directly, then
    the wrapper is detached so nothing frees it twice.
    """
    if not passes.closed:
        llvm.newpassmanagers.NewPassManager._dispose(passes)
        passes.detach()
    builder.close()
    tuning.close()


# Operating systems whose toolchains ship libgomp (or LLVM's libomp, which
# exports the same GOMP_ entry points).
_OPENMP_OSES = frozenset({"linux", "freebsd", "netbsd", "openbsd", "darwin", "macosx"})

# libgomp's entry points as loop-outline-parallel declares them, each defined as
# a team of one thread: the caller's.
_SERIAL_OPENMP = {
    "GOMP_parallel": """define void @GOMP_parallel(ptr %fn, ptr %data, i32 %n, i32 %flags) {
  call void %fn(ptr %data)
  ret void
}""",
    "omp_get_thread_num": "define i32 @omp_get_thread_num() {\n  ret i32 0\n}",
    "omp_get_num_threads": "define i32 @omp_get_num_threads() {\n  ret i32 1\n}",
}


# A heap buffer's block (see convert-memref-to-llvm's SCRATCH_ names): its
# byte capacity at the start, the data `align` bytes on, the slot and `align`
# in the 16 bytes before the data. A slot holds at most one block; a call that
# finds it empty (the first, or one running beside another) allocates.
_SCRATCH = {
    "__ember_scratch_take": """define ptr @__ember_scratch_take(ptr %slot, i64 %bytes, i64 %align) {
entry:
  %cached = atomicrmw xchg ptr %slot, ptr null acquire, align 8
  %has = icmp ne ptr %cached, null
  br i1 %has, label %check, label %fresh
check:
  %capacity = load i64, ptr %cached, align 8
  %fits = icmp uge i64 %capacity, %bytes
  br i1 %fits, label %reuse, label %drop
reuse:
  %data = getelementptr i8, ptr %cached, i64 %align
  ret ptr %data
drop:
  call void @free(ptr %cached)
  br label %fresh
fresh:
  %total = add i64 %bytes, %align
  %block = call ptr @aligned_alloc(i64 %align, i64 %total)
  %failed = icmp eq ptr %block, null
  br i1 %failed, label %none, label %made
none:
  ret ptr null
made:
  store i64 %bytes, ptr %block, align 8
  %new = getelementptr i8, ptr %block, i64 %align
  %at_align = getelementptr i8, ptr %new, i64 -8
  store i64 %align, ptr %at_align, align 8
  %at_slot = getelementptr i8, ptr %new, i64 -16
  store ptr %slot, ptr %at_slot, align 8
  ret ptr %new
}""",
    "__ember_scratch_give": """define void @__ember_scratch_give(ptr %data) {
entry:
  %null = icmp eq ptr %data, null
  br i1 %null, label %done, label %give
give:
  %at_align = getelementptr i8, ptr %data, i64 -8
  %align = load i64, ptr %at_align, align 8
  %at_slot = getelementptr i8, ptr %data, i64 -16
  %slot = load ptr, ptr %at_slot, align 8
  %back = sub i64 0, %align
  %block = getelementptr i8, ptr %data, i64 %back
  %old = atomicrmw xchg ptr %slot, ptr %block acq_rel, align 8
  call void @free(ptr %old)
  br label %done
done:
  ret void
}""",
    "__ember_scratch_drop": """define void @__ember_scratch_drop(ptr %slot) {
  %old = atomicrmw xchg ptr %slot, ptr null acq_rel, align 8
  call void @free(ptr %old)
  ret void
}""",
}


def define_scratch(module: llvm.ModuleRef) -> None:
    """Define the scratch functions `module` declares (internal), over the C
    library's `aligned_alloc` and `free`.

    A kernel's heap buffer is taken from a slot of its module and given back
    to it, so a kernel called again reuses its blocks instead of allocating
    them: where the C heap hands large freed blocks back to the OS, every call
    faulted their pages in again (a 64->64 @56 Winograd kernel built alone:
    1.69 ms a call, 0.17-0.19 with its blocks kept, on a KVM guest). A slot
    keeps one block (the last one given back) until the module's
    `__ember_scratch_release` drops them all, which the runtimes call when
    they let the module go.
    """
    declared = [
        f.name for f in module.functions if f.is_declaration and f.name in _SCRATCH
    ]
    if not declared:
        return
    externals = "declare ptr @aligned_alloc(i64, i64)\ndeclare void @free(ptr)\n"
    shim = llvm.parse_assembly(externals + "\n".join(_SCRATCH[n] for n in declared))
    shim.triple, shim.data_layout = module.triple, module.data_layout
    module.link_in(shim)
    for name in declared:
        module.get_function(name).linkage = llvm.Linkage.internal


def has_openmp(triple: str) -> bool:
    """Whether code for `triple` can call libgomp: an OS that ships it, not wasm.

    Example:
        >>> has_openmp("aarch64-linux-gnu"), has_openmp("wasm32-unknown-unknown")
        (True, False)
    """
    parts = llvm.get_triple_parts(triple)
    return not parts.Arch.startswith("wasm") and parts.OS in _OPENMP_OSES


def define_serial_openmp(module: llvm.ModuleRef) -> None:
    """Define the libgomp functions `module` declares as a one-thread team.

    `GOMP_parallel(fn, data, n, flags)` calls `fn(data)` once on the caller's
    thread, which is thread 0 of 1, so every outlined parallel loop runs its
    whole range serially. The definitions are internal: after inlining nothing
    of them is left, and the object neither imports nor exports a GOMP_ symbol.

    Raises:
        ValueError: the module uses another libgomp or OpenMP function.
    """
    declared = [
        f.name
        for f in module.functions
        if f.is_declaration and f.name.startswith(("GOMP_", "omp_"))
    ]
    unknown = [name for name in declared if name not in _SERIAL_OPENMP]
    if unknown:
        raise EmberValueError(
            f"{module.triple} has no OpenMP runtime, and compiled code calls "
            f"{unknown[0]!r}, which ember cannot run serially"
        )
    if not declared:
        return
    shim = llvm.parse_assembly("\n".join(_SERIAL_OPENMP[name] for name in declared))
    shim.triple, shim.data_layout = module.triple, module.data_layout
    module.link_in(shim)
    for name in declared:
        module.get_function(name).linkage = llvm.Linkage.internal


def emit_object(module: llvm.ModuleRef, target_machine: llvm.TargetMachine) -> bytes:
    """Machine code of `module` as a relocatable object file (ELF on Linux)."""
    return target_machine.emit_object(module)


def emit_assembly(module: llvm.ModuleRef, target_machine: llvm.TargetMachine) -> str:
    """Assembly text of `module`."""
    return target_machine.emit_assembly(module)


_METADATA_JSON = re.compile(
    r'^@"?__ember_metadata\.json"? = [^"\n]*constant \[\d+ x i8\] c"([^"]*)"', re.M
)
# LLVM writes a backslash as two, other unprintable bytes and quotes as \XX.
_ESCAPE = re.compile(r"\\(\\|[0-9A-Fa-f]{2})")
_STR = 11  # the packed ABI's type code of a C string


def prepare_for_library(module: llvm.ModuleRef) -> None:
    """Let `module`'s object be linked into one library beside other modules'.

    Every module with packed functions defines `__ember_metadata`; a library
    gets one, made from all of them by `metadata_object`, so each module's own
    becomes internal. The `__ember_*` globals every module may define
    (`__ember_num_threads`, `__ember_call_packed`) hold process-wide runtime
    state, so they become weak: the linker keeps one, and the loader sets it
    once for all.

    Before:
        @__ember_num_threads = global i32 0
        define i32 @__ember_metadata(ptr %args, ...)

    After:
        @__ember_num_threads = weak global i32 0
        define internal i32 @__ember_metadata(ptr %args, ...)
    """
    try:
        metadata = module.get_function(METADATA_FUNCTION)
    except NameError:
        pass
    else:
        if not metadata.is_declaration:
            metadata.linkage = llvm.Linkage.internal
    for value in module.global_variables:
        if (
            value.name.startswith("__ember_")
            and not value.is_declaration
            and value.linkage == llvm.Linkage.external
        ):
            value.linkage = llvm.Linkage.weak_any


def embedded_metadata(llvm_ir: str) -> str | None:
    """The JSON text `__ember_metadata` returns, read from the module's IR (so
    also for modules compiled for another machine); None without one."""
    match = _METADATA_JSON.search(llvm_ir)
    if match is None:
        return None
    data = _ESCAPE.sub(
        lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1), 16)),
        match.group(1),
    )
    return data.encode("latin-1").rstrip(b"\0").decode("utf-8")


def metadata_object(text: str, target_machine: llvm.TargetMachine) -> bytes:
    """An object file defining `__ember_metadata`, the packed function that
    returns `text` (a library's merged metadata JSON), for `target_machine`.

        @__ember_metadata.json = private unnamed_addr constant [N x i8] c"{...}\\00"
        define i32 @__ember_metadata(ptr %args, ptr %type_codes, i32 %num_args,
                                     ptr %ret, ptr %ret_code) nounwind {
          store ptr @__ember_metadata.json, ptr %ret
          store i32 11, ptr %ret_code
          ret i32 0
        }
    """
    i8, i32, ptr = ir.IntType(8), ir.IntType(32), ir.PointerType()
    module = ir.Module(name=METADATA_FUNCTION)
    data = bytearray(text.encode() + b"\0")
    string = ir.GlobalVariable(
        module, ir.ArrayType(i8, len(data)), f"{METADATA_FUNCTION}.json"
    )
    string.linkage = "private"
    string.unnamed_addr = True
    string.global_constant = True
    # llvmlite is untyped: pyright infers the attribute's type from its `= None`
    string.initializer = ir.Constant(ir.ArrayType(i8, len(data)), data)  # pyright: ignore[reportAttributeAccessIssue]
    function = ir.Function(
        module, ir.FunctionType(i32, [ptr, ptr, i32, ptr, ptr]), METADATA_FUNCTION
    )
    function.attributes.add("nounwind")
    for arg, name in zip(
        function.args,
        ("args", "type_codes", "num_args", "ret", "ret_code"),
        strict=True,
    ):
        arg.name = name
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    builder.store(string, function.args[3])
    builder.store(ir.Constant(i32, _STR), function.args[4])
    builder.ret(ir.Constant(i32, 0))
    parsed = parse(module)
    parsed.triple = target_machine.triple
    parsed.data_layout = str(target_machine.target_data)
    return emit_object(parsed, target_machine)


__all__ = [
    "define_scratch",
    "define_serial_openmp",
    "embedded_metadata",
    "emit_assembly",
    "emit_object",
    "has_openmp",
    "initialize",
    "metadata_object",
    "optimize",
    "parse",
    "prepare_for_library",
]

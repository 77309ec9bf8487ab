"""Loop IR as GPU kernels (CUDA C, OpenCL C) and the launch plan that runs them.

Each top-level loop nest of a function becomes one kernel; its loops bound to
`blockIdx.*` / `threadIdx.*` become the block and thread indices
(`iv = lower + id * step`) and the rest stay loops (`vthread` loops too). The
launch extent of a tag is the largest extent bound to it in the kernel; a
bound loop with a smaller one runs under `if (id < extent)`. Loops bound to the
same tag may nest (TVM's shared-memory copy inside the consumer's thread loops).

    vecadd_kernel0<<<grid=(16,1,1), block=(64,1,1)>>>(A, B, C)

Buffers: function arguments and top-level `global` allocations (the plan's
intermediate device buffers) are kernel parameters; `shared` allocations are
declared once at kernel scope (`__shared__` / `__local`), `local` ones are
per-thread arrays. A barrier (`__syncthreads()` / `barrier(...)`) follows every
write of a shared buffer before a read of it, and opens the body of a loop that
both writes and reads shared memory (the next iteration overwrites what this
one read). Barriers never go inside a guard: where one would be needed there,
building fails.

Checks that fail with a message naming the stage: a nest with no bound loop,
a block of more than `max_num_threads` threads, more `shared` bytes than
`max_shared_memory_per_block`, a `global` allocation inside a kernel.
"""

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ember.backends import backend
from ember.backends.source.faces import bits, is_float
from ember.backends.source.printer import (
    THREAD_ATTR,
    FunctionPrinter,
    SourceError,
    SourceUnit,
    buffer_name,
    c_identifier,
    constant_int,
    loop_label,
    memref_shape,
)
from ember.backends.source.target import DeviceTarget
from ember.dialects import loop

PLAN_FORMAT = "ember.device/1"
_AXES = ("x", "y", "z")


def dtype_name(t: Attribute) -> str:
    """The numpy name of a scalar type (`f32` -> "float32", `i1` -> "bool",
    `ui8` -> "uint8")."""
    if is_float(t):
        return f"float{bits(t)}"
    if bits(t) == 1:
        return "bool"
    unsigned = isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED
    return f"{'u' if unsigned else ''}int{bits(t)}"


def _tag(op: loop.ForOp) -> str | None:
    attr = op.attributes.get(THREAD_ATTR)
    if attr is None:
        return None
    tag = attr.data if isinstance(attr, StringAttr) else str(attr)
    return None if tag == "vthread" else tag  # a vthread runs as a serial loop


def _stage_of(nest: Operation) -> str:
    """The stage a top-level nest computes: the last buffer from outside it that
    it stores to."""
    stored = [
        op.memref
        for op in nest.walk()
        if isinstance(op, memref.StoreOp) and not _inside(op.memref, nest)
    ]
    return buffer_name(stored[-1]) if stored else "?"


def _inside(value: SSAValue, op: Operation) -> bool:
    owner = value.owner
    owner_op = owner if isinstance(owner, Operation) else owner.parent_op()
    return owner_op is not None and op.is_ancestor(owner_op)


def _bound_loops(nest: Operation) -> list[loop.ForOp]:
    return [op for op in nest.walk() if isinstance(op, loop.ForOp) and _tag(op)]


class Kernel:
    """One top-level nest as a kernel: its launch shape, parameters, buffers."""

    def __init__(self, nest: Operation, name: str, stage: str):
        self.nest, self.name, self.stage = nest, name, stage
        self.extents: dict[str, int] = {}
        self.params: list[SSAValue] = []
        self.shared: list[loop.AllocOp] = []
        for op in _bound_loops(nest):
            tag = _tag(op)
            assert tag is not None
            extent = _constant_extent(op, stage)
            self.extents[tag] = max(self.extents.get(tag, 1), extent)

    def dims(self, base: str) -> list[int]:
        return [self.extents.get(f"{base}.{a}", 1) for a in _AXES]

    @property
    def threads(self) -> int:
        n = 1
        for d in self.dims("threadIdx"):
            n *= d
        return n

    def shared_bytes(self) -> int:
        total = 0
        for alloc in self.shared:
            t = alloc.buffer.type
            assert isinstance(t, MemRefType)
            count = 1
            for d in t.get_shape():
                count *= d
            total += count * max(1, bits(t.element_type) // 8)
        return total


def _constant_extent(op: loop.ForOp, stage: str) -> int:
    lower, upper, step = (constant_int(v) for v in (op.lower, op.upper, op.step))
    if lower is None or upper is None or step is None or step <= 0:
        raise SourceError(
            f"stage '{stage}': loop '{loop_label(op)}' bound to {_tag(op)} needs "
            "constant bounds and a positive constant step"
        )
    return max(0, -(-(upper - lower) // step))


class KernelPrinter(FunctionPrinter):
    """Prints one kernel: bound loops as indices, guards, barriers, and shared
    buffers at kernel scope."""

    def __init__(self, unit: SourceUnit, kernel: Kernel, barriers: set[Operation]):
        super().__init__(unit)
        self.kernel = kernel
        self.barriers = barriers

    def before_op(self, op: Operation) -> None:
        if op in self.barriers:
            self.emit(self.face.barrier)

    def emit_bound_for(self, op: loop.ForOp) -> None:
        tag = _tag(op)
        if tag is None:
            self.emit_for(op)
            return
        extent = _constant_extent(op, self.kernel.stage)
        lower, step = constant_int(op.lower), constant_int(op.step)
        index = self.face.thread_index(tag)
        iv = self.bind(op.induction_var, loop_label(op))
        value = index if step == 1 else f"{index} * {step}"
        value = value if lower == 0 else f"{self.expr(op.lower)} + {value}"
        note = "" if tag in index else f"  // {tag}"
        qualifier = self.face.block_index_qualifier if "blockIdx" in tag else ""
        decl = f"{qualifier}{self.ctype(op.induction_var.type)} {iv}"
        self.emit(f"{decl} = {value};{note}")
        if extent < self.kernel.extents[tag]:
            self.emit(f"if ({iv} < {extent}) {{")
            self.emit_body(op.body.block)
            self.emit("}")
        else:
            self.emit_block(op.body.block)

    def emit_alloc(self, op: loop.AllocOp) -> None:
        if op.scope_name == "shared":
            return  # declared at kernel scope
        if op.scope_name == "global":
            raise SourceError(
                f"stage '{op.buffer.name_hint or '?'}' allocates a global buffer "
                f"inside kernel {self.kernel.name}; use cache_read/cache_write with "
                "scope 'shared' or 'local' for a buffer computed inside a kernel"
            )
        super().emit_alloc(op)

    def declare_shared(self, op: loop.AllocOp) -> str:
        """The declaration of shared array `op` at kernel scope."""
        shape = memref_shape(op.buffer.type, "loop.alloc")
        t = op.buffer.type
        assert isinstance(t, MemRefType)
        count = 1
        for d in shape:
            count *= d
        name = self.bind(op.buffer, op.buffer.name_hint or "shared")
        elem = self.face.element_type(t.element_type)
        return f"{self.face.shared_space} {elem} {name}[{count}];"


def build_plan(module: ModuleOp, target: DeviceTarget) -> dict:
    """The launch plan (`runtime/device_module.py`'s format) of loop IR `module`
    for the GPU `target`, its `binary` None (NVRTC fills it for cuda)."""
    return join_pieces([kernel_piece(module, target)], target)


def kernel_piece(module: ModuleOp, target: DeviceTarget) -> dict:
    """The part of a launch plan that loop IR `module` makes, to be joined with
    others into one translation unit (`join_pieces`): its `"kernels"`' source,
    the `"helpers"` and `"features"` they use, and its `"functions"`' plan
    entries. JSON-serializable (a model's kernels are cached as pieces)."""
    face = backend(target.kind).face()
    for op in module.walk():
        refusal = face.refuse(op)
        if refusal is not None:
            raise SourceError(refusal)
    if _largest_buffer(module) < INDEX32_LIMIT:
        face.index_bits = 32
    unit = SourceUnit(face)
    kernels_text: list[str] = []
    functions: dict[str, dict] = {}
    for function in module.ops:
        if not isinstance(function, func.FuncOp) or function.is_declaration:
            continue
        _refuse_symbolic(function, target)
        entry, texts = _function_plan(function, target, unit)
        functions[function.sym_name.data] = entry
        kernels_text += texts
    return {
        "kernels": kernels_text,
        "helpers": unit.helpers,
        "features": sorted(unit.features),
        "functions": functions,
    }


def join_pieces(pieces: list[dict], target: DeviceTarget) -> dict:
    """One launch plan of `kernel_piece`s: one translation unit (the prelude
    of every feature used, each helper once, every kernel), every function."""
    unit = SourceUnit(backend(target.kind).face())
    kernels: list[str] = []
    functions: dict[str, dict] = {}
    for piece in pieces:
        unit.join(piece)
        kernels += piece["kernels"]
        functions.update(piece["functions"])
    return {
        "format": PLAN_FORMAT,
        "kind": target.kind,
        "source": unit.text(kernels),
        "binary": None,
        "source_format": target.backend.source_suffix,
        "functions": functions,
    }


INDEX32_LIMIT = 1 << 30
"""Kernels whose buffers all have fewer elements index in 32 bits (TVM's int32
default); the margin keeps the offsets of guarded-off iterations in range."""


def _refuse_symbolic(function: func.FuncOp, target: DeviceTarget) -> None:
    """A launch plan's grid and buffers are fixed when it is built: a buffer
    of symbolic size (an argument, or a `loop.alloc(%n)`) has no place in it."""
    values = [*function.args]
    values += [op.buffer for op in function.walk() if isinstance(op, loop.AllocOp)]
    for value in values:
        t = value.type
        if isinstance(t, MemRefType) and not t.has_static_shape():
            raise SourceError(
                f"{target.kind}: @{function.sym_name.data} has buffers of symbolic "
                f"sizes ({t}), which GPU kernels do not take yet; build it for "
                "'llvm', or with static shapes"
            )


def _largest_buffer(module: ModuleOp) -> int:
    largest = 0
    for op in module.walk():
        for value in (
            *op.results,
            *(a for r in op.regions for b in r.blocks for a in b.args),
        ):
            if isinstance(value.type, MemRefType):
                count = 1
                for d in value.type.get_shape():
                    count *= max(d, 1)
                largest = max(largest, count)
    return largest


def _function_plan(
    function: func.FuncOp, target: DeviceTarget, unit: SourceUnit
) -> tuple[dict, list[str]]:
    """The plan entry of one function, and its kernels' source."""
    buffers: list[SSAValue] = []  # top-level global allocs: device buffers
    uses: dict[SSAValue, list[Kernel]] = {}  # outside buffer -> its kernels
    kernels: list[Kernel] = []
    fname = c_identifier(function.sym_name.data)
    for op in function.body.block.ops:
        if isinstance(op, arith.ConstantOp | func.ReturnOp):
            continue
        if isinstance(op, loop.AllocOp):
            if op.scope_name == "global":
                memref_shape(op.buffer.type, "loop.alloc")
                buffers.append(op.buffer)
            continue
        if len(op.results) == 1 and not op.regions and op.name.startswith("arith."):
            continue  # index arithmetic, printed in the kernels that use it
        stage = _stage_of(op)
        if not isinstance(op, loop.ForOp) or not _bound_loops(op):
            raise SourceError(
                f"stage '{stage}' has no loop bound to a GPU thread axis; bind its "
                f"loops with s[{stage}].bind(axis, te.thread_axis('blockIdx.x')) "
                "and te.thread_axis('threadIdx.x') (or ember.topi.gpu.schedule_gpu)"
            )
        kernel = Kernel(op, f"{fname}_kernel{len(kernels)}", stage)
        kernels.append(kernel)
        for value in _outside_buffers(op):
            uses.setdefault(value, []).append(kernel)
    local: dict[Kernel, list[loop.AllocOp]] = {k: [] for k in kernels}
    for value, users in uses.items():
        owner = value.owner
        if not isinstance(owner, loop.AllocOp) or owner.scope_name == "global":
            continue
        if len(users) > 1:
            raise SourceError(
                f"stage '{buffer_name(value)}' of scope {owner.scope_name} is "
                f"computed by kernel {users[0].name} and read by {users[-1].name}; "
                "compute_at it inside the thread loops of its reader, or give it "
                "scope global"
            )
        (users[0].shared if owner.scope_name == "shared" else local[users[0]]).append(
            owner
        )
    texts, launches = [], []
    for kernel in kernels:
        kernel.shared += [
            op
            for op in kernel.nest.walk()
            if isinstance(op, loop.AllocOp) and op.scope_name == "shared"
        ]
        _check_limits(kernel, target)
        params = sorted(
            (v for v, users in uses.items() if kernel in users and _is_param(v)),
            key=lambda v: _param_order(v, function, buffers),
        )
        texts.append(_print_kernel(kernel, params, local[kernel], unit))
        launches.append(_launch(kernel, params, function, buffers))
    entry = {
        "args": _plan_args(function),
        "buffers": [
            {
                "shape": memref_shape(b.type, "loop.alloc"),
                "dtype": dtype_name(b.type.element_type),  # type: ignore[union-attr]
            }
            for b in buffers
        ],
        "launches": launches,
    }
    return entry, texts


def _plan_args(function: func.FuncOp) -> list[dict]:
    args = []
    for arg in function.args:
        shape = memref_shape(arg.type, f"@{function.sym_name.data} argument")
        assert isinstance(arg.type, MemRefType)
        attrs = (
            function.arg_attrs.data[arg.index].data
            if function.arg_attrs is not None
            else {}
        )
        # a signless buffer of unsigned integers says so (ember.lower)
        override = attrs.get("ember.dtype")
        args.append(
            {
                "name": buffer_name(arg),
                "shape": shape,
                "dtype": override.data
                if isinstance(override, StringAttr)
                else dtype_name(arg.type.element_type),
                "output": isinstance(attrs.get("ember.output"), UnitAttr),
            }
        )
    return args


def _is_param(value: SSAValue) -> bool:
    """Function arguments and global buffers are passed; shared and local
    buffers are the kernel's own."""
    owner = value.owner
    return not (isinstance(owner, loop.AllocOp) and owner.scope_name != "global")


def _launch(
    kernel: Kernel,
    params: list[SSAValue],
    function: func.FuncOp,
    buffers: list[SSAValue],
) -> dict:
    return {
        "kernel": kernel.name,
        "grid": kernel.dims("blockIdx"),
        "block": kernel.dims("threadIdx"),
        "args": [
            {"arg": function.args.index(v)}
            if v in function.args
            else {"buffer": buffers.index(v)}
            for v in params
        ],
        "shared_bytes": 0,
    }


def _param_order(value: SSAValue, function: func.FuncOp, buffers: list[SSAValue]):
    if value in function.args:
        return (0, function.args.index(value))
    return (1, buffers.index(value))


def _outside_buffers(nest: Operation) -> list[SSAValue]:
    """The buffers defined outside `nest` that it loads or stores, first use first."""
    found: dict[SSAValue, None] = {}
    for op in nest.walk():
        for value in op.operands:
            if isinstance(value.type, MemRefType) and not _inside(value, nest):
                found[value] = None
    return list(found)


def _check_limits(kernel: Kernel, target: DeviceTarget) -> None:
    if kernel.threads > target.max_num_threads:
        dims = " x ".join(str(d) for d in kernel.dims("threadIdx"))
        raise SourceError(
            f"stage '{kernel.stage}': kernel {kernel.name} has {kernel.threads} "
            f"threads per block ({dims}), more than max_num_threads = "
            f"{target.max_num_threads} of target '{target}'; split its threadIdx "
            "loops smaller"
        )
    limits = backend(target.kind).grid_limits
    for base, caps in zip(("blockIdx", "threadIdx"), limits or (), strict=False):
        for axis, extent, limit in zip(_AXES, kernel.dims(base), caps, strict=True):
            if extent > limit:
                raise SourceError(
                    f"stage '{kernel.stage}': kernel {kernel.name} launches "
                    f"{extent} along {base}.{axis}, more than {target.kind}'s "
                    f"{limit}; bind a smaller loop (split it) to that axis"
                )
    shared = kernel.shared_bytes()
    if shared > target.max_shared_memory_per_block:
        names = ", ".join(a.buffer.name_hint or "?" for a in kernel.shared)
        raise SourceError(
            f"stage '{kernel.stage}': kernel {kernel.name} uses {shared} bytes of "
            f"shared memory ({names}), more than max_shared_memory_per_block = "
            f"{target.max_shared_memory_per_block} of target '{target}'; make the "
            "shared tiles smaller"
        )


def _print_kernel(
    kernel: Kernel,
    params: list[SSAValue],
    local_allocs: list[loop.AllocOp],
    unit: SourceUnit,
) -> str:
    face = unit.face
    shared_values: set[SSAValue] = {a.buffer for a in kernel.shared}
    barriers = place_barriers(kernel, shared_values)
    p = KernelPrinter(unit, kernel, barriers)
    stored = {op.memref for op in kernel.nest.walk() if isinstance(op, memref.StoreOp)}
    texts = []
    for value in params:
        t = value.type
        assert isinstance(t, MemRefType)
        name = p.bind(value, buffer_name(value))
        texts.append(face.pointer_param(t.element_type, name, value not in stored))
    shared = [p.declare_shared(alloc) for alloc in kernel.shared]
    for alloc in local_allocs:
        FunctionPrinter.emit_alloc(p, alloc)
    _print_outside_scalars(p, kernel.nest)
    p.emit_op(kernel.nest)
    head = face.kernel_head(kernel.name, texts, kernel.dims("threadIdx"))
    head = face.open_kernel(head, shared)
    return "\n".join([head, *p.lines, "}"])


def _print_outside_scalars(p: KernelPrinter, nest: Operation) -> None:
    """Constants and index arithmetic defined at the function's top level that
    the nest uses."""
    needed: list[Operation] = []

    def need(value: SSAValue) -> None:
        owner = value.owner
        if (
            isinstance(owner, Operation)
            and not nest.is_ancestor(owner)
            and owner not in needed
            and not isinstance(value.type, MemRefType)
        ):
            for operand in owner.operands:
                need(operand)
            needed.append(owner)

    for op in nest.walk():
        for value in op.operands:
            need(value)
    for op in needed:
        p.emit_op(op)


# --- barriers ---------------------------------------------------------------------


def place_barriers(kernel: Kernel, shared: set[SSAValue]) -> set[Operation]:
    """The ops of `kernel` before which a barrier goes (see the module)."""
    barriers: set[Operation] = set()

    def access(op: Operation) -> tuple[set[SSAValue], set[SSAValue]]:
        reads: set[SSAValue] = set()
        writes: set[SSAValue] = set()
        for inner in op.walk():
            if isinstance(inner, memref.LoadOp) and inner.memref in shared:
                reads.add(inner.memref)
            elif isinstance(inner, memref.StoreOp) and inner.memref in shared:
                writes.add(inner.memref)
        return reads, writes

    def place(op: Operation, guard: str | None) -> None:
        if guard is not None:
            raise SourceError(
                f"stage '{kernel.stage}': kernel {kernel.name} needs a barrier "
                f"between writes and reads of shared memory inside {guard}, which "
                "not every thread of the block reaches; choose split factors that "
                "divide the extents (and equal thread extents for the copy stages)"
            )
        barriers.add(op)

    def visit(block: Block, state: tuple[set, set], guard: str | None) -> tuple:
        pending_w, pending_r = state
        for op in block.ops:
            reads, writes = access(op)
            if reads & pending_w or writes & pending_r or writes & pending_w:
                place(op, guard)
                pending_w, pending_r = set(), set()
            if op.regions and reads & writes:
                pending_w, pending_r = descend(op, (pending_w, pending_r), guard)
            else:
                pending_w, pending_r = pending_w | writes, pending_r | reads
        return pending_w, pending_r

    def descend(op: Operation, state: tuple[set, set], guard: str | None) -> tuple:
        if isinstance(op, loop.ForOp):
            body = op.body.block
            tag = _tag(op)
            inner_guard = guard
            if (
                tag is not None
                and _constant_extent(op, kernel.stage) < (kernel.extents[tag])
            ):
                inner_guard = f"the guard of loop '{loop_label(op)}' ({tag})"
            if tag is None:
                # the next iteration overwrites what this one read
                body_reads, body_writes = access(op)
                for inner in body.ops:
                    if access(inner)[1] & body_reads:
                        place(inner, inner_guard)
                        state = (set(), set())
                        break
            end = visit(body, state, inner_guard)
            return state[0] | end[0], state[1] | end[1]
        if isinstance(op, scf.IfOp):
            inner_guard = guard or "an if"
            ends = [visit(r.block, state, inner_guard) for r in op.regions if r.blocks]
            w = set().union(*(e[0] for e in ends), state[0])
            r = set().union(*(e[1] for e in ends), state[1])
            return w, r
        raise SourceError(f"{kernel.name}: cannot place barriers in '{op.name}'")

    reads, writes = access(kernel.nest)
    if reads & writes:
        descend(kernel.nest, (set(), set()), None)
    return barriers


def build_gpu(module: ModuleOp, target: DeviceTarget, entry: str | None):
    """A `DeviceModule` running `module`'s kernels on an `opencl` or `cuda`
    device; for cuda its PTX compiled by NVRTC."""
    plan = build_plan(module, target)
    if entry is not None:
        plan["entry"] = entry
    binary = backend(target.kind).binary(plan["source"], target)
    if binary is not None:
        plan["binary"] = binary
        plan["binary_format"] = target.backend.binary_format
    from ember.runtime.device_module import DeviceModule

    return DeviceModule(plan)


__all__ = [
    "PLAN_FORMAT",
    "Kernel",
    "build_gpu",
    "build_plan",
    "join_pieces",
    "kernel_piece",
    "place_barriers",
]

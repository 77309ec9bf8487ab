"""The `c` target: loop IR as one C99 file of packed functions.

    mod = ember.build(s, [A, B, C], target="c", name="vecadd")
    mod(a, b, c)                     # compiled by the system C compiler
    print(mod.get_source())          # the C file, which compiles alone
    mod.export_library("vecadd.so")  # load_module runs it in any process

The file is, in order: `ember_runtime.h` inlined (ember's C ABI, as shipped
in `ember.runtime.include`, so the file needs no include path and a
microcontroller project takes it as it is), the kernels the printer's C face
writes (`static int32_t ember_<f>_impl(T* restrict arg0, ...)`), one packed
entry per public function, and `__ember_metadata`. An entry checks what the
LLVM entry checks (`passes/func_packed_abi.py`), in the same order, and fails
with the same code and message: argument count (-1); then per argument i
(-2 - i) its type code and non-null handle, CPU device, ndim and dtype,
extents, and compact strides; then that no output shares a byte with another
argument. The user sees one ember whichever target built the function.

`c` compiles the file with `cc -O2 -std=c99 -shared -fPIC` (`$CC`, else `cc`)
when it is built, through the kernel compile cache (`ember.backends.kernel_cache`,
keyed by the source and the compiler's path and version); parallel loops run
serially. Micro mode
(`c -mcpu=cortex-m4`, `target.micro`) writes code for a microcontroller: no
heap (each global `loop.alloc` is a `static` array of its own), no threads, no
header beyond `<stdint.h>`, `<stdbool.h>`, `<math.h>` and `<string.h>`; such a
module is compiled for this machine only when one of its functions is first
called, so it builds where only a cross compiler exists. Compile the file
with `-DEMBER_NO_METADATA` to leave out the JSON description (flash).
"""

import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from ember.backends.kernel_cache import default_cache
from ember.backends.source.faces import MATH_FUNCTIONS, CFace
from ember.backends.source.target import DeviceTarget
from ember.passes.func_packed_abi import (
    DEVICE_CPU,
    DTYPES,
    TYPE_DLTENSOR,
    TYPE_NDARRAY,
    TYPE_NULL,
    TYPE_STR,
    PackedArg,
    compact_strides,
    metadata_document,
    overlap_pairs,
    packed_args,
)
from ember.runtime import Module
from ember.runtime import cc as _cc
from ember.runtime.cc import ObjectFile
from ember.runtime.elf import check_library
from ember.runtime.errors import EmberError, EmberValueError, ExportError
from ember.runtime.module import METADATA_FUNCTION, DSOModule

CFLAGS = ("-O2", "-std=c99", "-fPIC")
"""How the system compiler compiles the file for this machine."""

ALLOC_ERROR = -101
"""What an entry returns when a kernel could not allocate an intermediate
buffer (malloc failed): its message says so."""

_SOURCE_FORMATS = ("c", "loop")
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern "
    "float for goto if inline int long register restrict return short signed "
    "sizeof static struct switch typedef union unsigned void volatile while "
    "_Bool _Complex _Imaginary bool true false main".split()
)


class MicroCFace(CFace):
    """C99 for a microcontroller: every global buffer a `static` array of its
    own (no heap; simple, and RAM is the sum of the buffers, not the largest
    live set), no `<stdlib.h>`."""

    def prelude(self, features: set[str]) -> list[str]:
        return super().prelude(features - {"malloc"})

    def alloc_global(
        self, name: str, elem: str, count: int, live: list[str]
    ) -> list[str]:
        return [f"static {elem} {name}[{count}];"]

    def free_global(self, name: str) -> list[str]:
        return []


def build_c(module: ModuleOp, target: DeviceTarget, entry: str | None) -> "CModule":
    """Compile loop IR (after the te-to-loop segment) to a `CModule`.

    Args:
        module: loop-level IR; every public function over static buffers
            becomes a packed function of its name.
        target: a `c` target; micro mode when `target.micro`.
        entry: the function `mod(...)` calls; None: the only one, if one.

    Returns:
        The module: its C is `get_source()`; a `c` module is compiled now, a
        micro one on its first call.

    Raises:
        EmberValueError: a function name that cannot be a C function's (not
            an identifier, or a name C, libm or the header uses).
        CompilerNotFoundError: (`c`) no C compiler (`$CC`, else `cc`).
        EmberError: (`c`) the compiler refused the file (a bug: the message
            shows the command and its errors).
    """
    entries = _entries(module)
    face = MicroCFace() if target.micro else CFace()
    kernels = _print_kernels(module, face)
    document = metadata_document(entries, entry)
    source = c_source(kernels, entries, document, target)
    return CModule(source, document, target, compile_now=not target.micro)


def _print_kernels(module: ModuleOp, face: CFace) -> str:
    """The printer's C for every function of `module` (`ember_<f>_impl`)."""
    from ember.backends.source.printer import print_c

    return print_c(module, face)


def _entries(module: ModuleOp) -> dict[str, list[PackedArg]]:
    """Name → arguments of each function that gets a packed entry."""
    entries: dict[str, list[PackedArg]] = {}
    for f in module.ops:
        if not isinstance(f, func.FuncOp):
            continue
        args = packed_args(f)
        if args is None:
            continue
        name = f.sym_name.data
        if any(a.symbolic for a in args):
            raise EmberValueError(
                f"c: @{name} has buffers of symbolic sizes, which the C entry does "
                "not bind yet; build it for 'llvm', or with static shapes"
            )
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            why = "it is not a C identifier"
        elif name in _reserved_names() or name.endswith("_t"):
            why = "C, libm or ember_runtime.h already uses it"
        elif name.startswith(("ember_", "__")):
            why = "names starting with 'ember_' or '__' belong to the C file"
        else:
            entries[name] = args
            continue
        raise EmberValueError(
            f"target c: function {name!r} cannot be a C function of that name: "
            f"{why}; build it with another name="
        )
    return entries


@cache
def _reserved_names() -> frozenset[str]:
    """Names a packed function must not take: C's keywords, the libc and
    libm functions kernels call, and what `ember_runtime.h` declares."""
    text = re.sub(r"/\*.*?\*/", "", header(), flags=re.DOTALL)
    declared = [
        *re.findall(r"}\s*(\w+);", text),  # struct and enum typedefs
        *re.findall(r"\(\*(\w+)\)", text),  # function pointer typedefs
        *re.findall(r"#define (\w+)", text),
        *re.findall(r"\b(\w+)\s*=", text),  # enum constants
        *re.findall(r"typedef char (\w+)", text),
    ]
    math = [n + suffix for n, _ in MATH_FUNCTIONS.values() for suffix in ("", "f")]
    libc = "malloc calloc realloc free memset memcpy memmove signbit isnan isinf"
    return _C_KEYWORDS | frozenset(declared + math + libc.split())


def header() -> str:
    """`ember_runtime.h` as shipped with the runtime."""
    return (files("ember.runtime") / "include" / "ember_runtime.h").read_text()


def c_source(
    kernels: str,
    entries: dict[str, list[PackedArg]],
    document: dict,
    target: DeviceTarget,
) -> str:
    """The translation unit: header, kernels, entries, metadata."""
    mode = "microcontroller C99 (no heap, no threads)" if target.micro else "C99"
    parts = [
        f"/* Generated by ember for target '{target}': {mode}. */",
        "/* ember_runtime.h, inlined: the file compiles alone. */",
        header().rstrip(),
        "/* ---- kernels ---- */",
        kernels.rstrip(),
        _ENTRY_HELPERS,
        *(_entry(name, args) for name, args in entries.items()),
        _metadata_function(document),
    ]
    return "\n\n".join(parts) + "\n"


_ENTRY_HELPERS = f"""/* ---- packed entries (docs/architecture.md, "The c target") ---- */

#ifndef EMBER_ERR_ALLOC
#define EMBER_ERR_ALLOC ({ALLOC_ERROR})
#endif

static int32_t ember_fail(EmberValue* ret, int32_t* ret_type_code,
                          const char* message, int32_t code) {{
  ret->v_handle = (void*)message;
  *ret_type_code = EMBER_TYPE_STR;
  return code;
}}

/* The first element of a checked tensor. */
static void* ember_data(const DLTensor* t) {{
  return (void*)((char*)t->data + t->byte_offset);
}}"""


def _entry(name: str, args: list[PackedArg]) -> str:
    """The packed entry of function `name`, whose kernel the printer named
    `ember_<name>_impl` (`printer.impl_name`)."""
    impl = f"ember_{name}_impl"
    lines = [
        f"int32_t {name}(EmberValue* args, int32_t* type_codes, int32_t num_args,",
        f"{' ' * (len(name) + 9)}EmberValue* ret, int32_t* ret_type_code) {{",
    ]
    body: list[str] = []
    for i in range(len(args)):
        body.append(f"DLTensor* t{i};")

    def fail(condition: str, message: str, code: int) -> None:
        body.append(f"if ({condition})")
        text = _c_string(f"{name}: {message}", width=1 << 30)  # one line
        body.append(f"  return ember_fail(ret, ret_type_code, {text}, {code});")

    names = ", ".join(a.name for a in args)
    plural = "" if len(args) == 1 else "s"
    fail(
        f"num_args != {len(args)}",
        f"expected {len(args)} argument{plural} ({names})",
        -1,
    )
    for i, arg in enumerate(args):
        _check_arg(body, fail, i, arg)
    pairs = overlap_pairs(args)
    if pairs:
        body.append("{")
        for k in sorted({k for pair in pairs for k in pair}):
            body.append(
                f"  uintptr_t s{k} = (uintptr_t)ember_data(t{k}), "
                f"e{k} = s{k} + {args[k].nbytes}u;"
            )
        for i, j in pairs:
            fail(
                f"!(e{i} <= s{j} || e{j} <= s{i})",
                f"argument {i} ({args[i].name}): output overlaps argument {j} "
                f"({args[j].name}); in-place calls are not supported",
                -2 - i,
            )
            body[-2:] = ["  " + line for line in body[-2:]]
        body.append("}")
    call = ", ".join(f"ember_data(t{i})" for i in range(len(args)))
    fail(
        f"{impl}({call}) != 0",
        "out of memory: an intermediate buffer could not be allocated",
        ALLOC_ERROR,
    )
    body += [
        "ret->v_int64 = 0;",
        f"*ret_type_code = {TYPE_NULL};",
        "return EMBER_OK;",
    ]
    return "\n".join([*lines, *("  " + line for line in body), "}"])


def _check_arg(body: list[str], fail, i: int, arg: PackedArg) -> None:
    """Append the checks of argument `i` (func-packed-abi's, in its order)."""
    t, code = f"t{i}", -2 - i
    prefix = f"argument {i} ({arg.name}): expected"
    fail(
        f"(type_codes[{i}] != {TYPE_DLTENSOR} && type_codes[{i}] != {TYPE_NDARRAY})"
        f" || args[{i}].v_handle == 0",
        f"{prefix} a tensor",
        code,
    )
    body.append(f"{t} = (DLTensor*)args[{i}].v_handle;")
    fail(f"{t}->device.device_type != {DEVICE_CPU}", f"{prefix} a CPU tensor", code)
    dtype_code, bits = DTYPES[arg.dtype]
    described = f"{prefix} {arg.describe()}"
    fail(
        f"{t}->ndim != {len(arg.shape)} || {t}->dtype.code != {dtype_code} || "
        f"{t}->dtype.bits != {bits} || {t}->dtype.lanes != 1",
        described,
        code,
    )
    if arg.shape:
        extents = " || ".join(
            f"{t}->shape[{k}] != {n}" for k, n in enumerate(arg.shape)
        )
        fail(extents, described, code)
    # Strides matter only for extents other than 1, and not at all when empty.
    strided = [k for k, n in enumerate(arg.shape) if n != 1]
    if strided and prod(arg.shape):
        expected = compact_strides(arg.shape)
        wrong = " || ".join(f"{t}->strides[{k}] != {expected[k]}" for k in strided)
        fail(
            f"{t}->strides != 0 && ({wrong})",
            f"{prefix} compact row-major strides",
            code,
        )


def _metadata_function(document: dict) -> str:
    """`__ember_metadata`, returning `document` as JSON; left out when the
    file is compiled with -DEMBER_NO_METADATA."""
    text = _c_string(json.dumps(document), indent="      ")
    return f"""#ifndef EMBER_NO_METADATA
int32_t __ember_metadata(EmberValue* args, int32_t* type_codes,
                         int32_t num_args, EmberValue* ret,
                         int32_t* ret_type_code) {{
  static const char json[] =
      {text};
  (void)args;
  (void)type_codes;
  (void)num_args;
  ret->v_handle = (void*)json;
  *ret_type_code = {TYPE_STR};
  return EMBER_OK;
}}
#endif"""


def _c_string(text: str, indent: str = "", width: int = 72) -> str:
    """`text` as a C string literal: UTF-8, `?` escaped (no trigraphs), other
    bytes outside printable ASCII as octal; split every `width` characters."""
    pieces: list[str] = []
    for byte in text.encode():
        char = chr(byte)
        if char in '"\\?':
            pieces.append("\\" + char)
        elif 32 <= byte < 127:
            pieces.append(char)
        else:
            pieces.append(f"\\{byte:03o}")
    chunks, line = [], ""
    for piece in pieces:
        if len(line) + len(piece) > width:
            chunks.append(line)
            line = ""
        line += piece
    chunks.append(line)
    return f"\n{indent}".join(f'"{chunk}"' for chunk in chunks)


def compile_c(
    source: str,
    output: str,
    flags: Sequence[str],
    cc: "str | Sequence[str] | None" = None,
) -> None:
    """Compile C `source` into `output` with the system C compiler.

    Args:
        source: the translation unit.
        output: the file to write (a library with `-shared`, an object with `-c`).
        flags: the compiler's options besides `-o`.
        cc: the compiler (see `ember.runtime.cc.compiler`).

    Raises:
        CompilerNotFoundError: there is no such compiler.
        EmberError: it failed; the message shows the command and its errors.
    """
    command = _cc.compiler(cc)
    with tempfile.TemporaryDirectory(prefix="ember-c-") as tmp:
        path = os.path.join(tmp, "module.c")
        with open(path, "w") as f:
            f.write(source)
        line = [*command, *flags, "-o", output, path, "-lm"]
        if "-c" in flags:
            line.remove("-lm")
        try:
            done = subprocess.run(line, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise EmberError(f"cannot run {shlex.join(line)}: {e}") from None
    if done.returncode != 0:
        raise EmberError(
            f"the C compiler failed (exit status {done.returncode}): "
            f"{shlex.join(line)}\n" + _cc._error_lines(done.stderr + done.stdout)
        )


def _compiler_identity() -> tuple[str, str]:
    """The system C compiler's path and the first line of its `--version`,
    for the compile cache's key."""
    command = _cc.compiler()
    return shlex.join(command), _version_line(tuple(command))


@cache
def _version_line(command: tuple[str, ...]) -> str:
    try:
        done = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout.splitlines() or [""])[0]


def _dump_machine(cc: "str | Sequence[str] | None" = None) -> str:
    """The target triple of the C compiler (`cc -dumpmachine`)."""
    command = [*_cc.compiler(cc), "-dumpmachine"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or "unknown"


class CModule(Module):
    """A module of C source (the `c` target), compiled by the system compiler.

    `mod["f"]` compiles the source for this machine, once, into a library
    loaded like `load_module`'s (the file is removed once loaded); a `c`
    module is compiled when it is built, a micro one on its first call.
    `export_library` compiles the same source into a library, and ".c"
    writes the source itself.

    Attributes:
        source: the C translation unit.
        target: the `DeviceTarget` it was written for.
        loop_source: the scheduled loop IR it was printed from, if known.

    Example:
        >>> mod = ember.build(s, [A, B, C], target="c", name="vecadd")  # doctest: +SKIP
        >>> mod(a, b, c)  # doctest: +SKIP
        >>> mod.export_library("vecadd.so")  # doctest: +SKIP
    """

    type_key = "c"
    loop_source: str | None = None

    def __init__(
        self,
        source: str,
        document: dict,
        target: DeviceTarget,
        compile_now: bool = True,
    ):
        super().__init__(document.get("entry"))
        self.source = source
        self.target = target
        self._metadata = document
        self._library: DSOModule | None = None
        self._export_cc: str | list[str] | None = None
        self._lock = threading.Lock()
        if compile_now:
            self._load()

    def _load(self) -> DSOModule:
        with self._lock:  # two threads' first calls compile once
            return self._library or self._compile()

    def _compile(self) -> DSOModule:
        flags = [*CFLAGS, "-shared"]
        cache = default_cache()
        key = cache.key(self.source, "llvm", *_compiler_identity(), *flags)
        # Once loaded, the file is no longer needed: the mapping stays.
        with tempfile.TemporaryDirectory(prefix="ember-c-") as tmp:
            if (code := cache.get(key)) is not None:
                cached = os.path.join(tmp, "cached.so")
                with open(cached, "wb") as f:
                    f.write(code)
                try:  # a library cut short before it was checksummed
                    check_library(cached)
                    self._library = DSOModule(cached, source=self._describe())
                    return self._library
                except EmberError as e:
                    cache.discard(key, f"does not load ({e})")
            path = os.path.join(tmp, "module.so")
            compile_c(self.source, path, flags)
            with open(path, "rb") as f:
                cache.put(key, f.read())
            self._library = DSOModule(path, source=self._describe())
        return self._library

    def _function_address(self, name: str) -> int:
        if name != METADATA_FUNCTION and name not in self.function_names():
            return 0
        return self._load()._function_address(name)

    def _read_metadata(self) -> dict:
        return self._metadata or {}

    def _describe(self) -> str:
        return f"c module ({', '.join(self.function_names()) or 'no functions'})"

    def function_names(self) -> list[str]:
        """The packed functions of the module, in definition order."""
        return list(self.metadata.get("functions", {}))

    def get_source(self, fmt: str = "c") -> str:
        """The module's source: "c" (or "") the C file, "loop" the loop IR.

        Raises:
            EmberValueError: another format, or "loop" for a module not built
                from te or loop IR.
        """
        if fmt in ("c", ""):
            return self.source
        if fmt == "loop" and self.loop_source is not None:
            return self.loop_source
        raise EmberValueError(
            f"unknown source format {fmt!r} for a c module, expected one of "
            f"{_SOURCE_FORMATS}"
            + (" (it was not built from te or loop IR)" if fmt == "loop" else "")
        )

    def export_library(
        self,
        path: "str | os.PathLike",
        cc: "str | list[str] | None" = None,
        options: "list[str] | tuple[str, ...]" = (),
    ) -> None:
        """Write the module as a library (see `Module.export_library`), or
        its C source when `path` ends in ".c".

        Raises:
            ExportError: ".c" for a module that imports others (their code
                is no C source).
        """
        path = os.fspath(path)
        if not path.endswith(".c"):
            # The objects are compiled by the compiler that links them, so
            # cc="aarch64-linux-gnu-gcc" exports a library for that machine.
            self._export_cc = cc
            try:
                super().export_library(path, cc, options)
            finally:
                self._export_cc = None
            return
        if self.imported_modules:
            raise ExportError(
                f"export_library: cannot write {path}: the module imports "
                f"{len(self.imported_modules)} other module(s), which are not C; "
                "export a .so or .tar"
            )
        with open(path, "w") as f:
            f.write(self.source)

    def _object_file(self, name: str) -> ObjectFile:
        """The source compiled for this machine, without its
        `__ember_metadata` (the library gets a merged one)."""
        with tempfile.TemporaryDirectory(prefix="ember-c-") as tmp:
            path = os.path.join(tmp, name)
            flags = [*CFLAGS, "-c", "-DEMBER_NO_METADATA"]
            compile_c(self.source, path, flags, self._export_cc)
            with open(path, "rb") as f:
                code = f.read()
        return ObjectFile(
            name=name,
            code=code,
            triple=_dump_machine(self._export_cc),
            metadata=self.metadata,
            symbols=tuple(self.function_names()),
        )

    def _metadata_object(self, document: dict) -> bytes:
        source = "\n\n".join([header(), _metadata_function(document)])
        with tempfile.TemporaryDirectory(prefix="ember-c-") as tmp:
            path = os.path.join(tmp, "metadata.o")
            compile_c(source, path, [*CFLAGS, "-c"], self._export_cc)
            with open(path, "rb") as f:
                return f.read()


__all__ = ["ALLOC_ERROR", "CFLAGS", "CModule", "MicroCFace", "build_c", "compile_c"]

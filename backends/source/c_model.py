"""Whole models for the `c` target: kernels printed apart, linked into one C file.

`compile_model(model, target="c")` runs `ember-model` as for a CPU: the graph
and te segments, `te-compile-kernels` and `graph-plan-memory` over one
workspace. Each kernel's loop IR is printed by the C printer into a *piece*
(`kernel_piece`: its function, the helpers and features it uses), cached like
an object. `link` joins the pieces into one translation unit:

- `ember_runtime.h` inlined, then the kernels (the prelude once, each helper
  once), then `ember_default_run_impl(inputs..., outputs..., workspace,
  params)` calling each kernel of the plan (`ember.model`'s `"calls"`) on
  views of the workspace and params blob (pointer arithmetic);
- the packed `default_run` (the LLVM model entry's twin: same arguments, same
  checks), `__ember_params` (the packed params, `const`, 64-byte aligned)
  when embedded, and `__ember_metadata` with the `"model"` description, so the
  library is a model library `load_module`, `GraphModule` and the C runtime
  read as they read an LLVM one;
- a plain C entry `ember_model_run` that the header (`get_source("h")`)
  declares with the model's inputs and outputs (names, shapes, dtypes): in
  micro mode `ember_model_run(inputs..., outputs...)` over a static workspace
  and the const params (no heap, no threads, not reentrant); otherwise
  `ember_model_run(inputs..., outputs..., workspace, params)`.

    mod = ember.compile_model("cnn.onnx", target="c -mcpu=cortex-m4")
    mod.export_library("cnn/")            # model.c + model.h for a cross build
    mod.export_library("cnn.so")          # this machine, compiled by cc
"""

from __future__ import annotations

import json
import os
import tarfile
import tempfile
from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from ember.backends.source.c import (
    _ENTRY_HELPERS,
    ALLOC_ERROR,
    CModule,
    MicroCFace,
    _entries,
    _entry,
    _metadata_function,
    header,
)
from ember.backends.source.faces import CFace
from ember.backends.source.printer import c_identifier, impl_name, print_function
from ember.backends.source.scalars import SourceUnit
from ember.backends.source.target import DeviceTarget
from ember.passes.func_packed_abi import PackedArg, metadata_document
from ember.runtime.abi import MODEL_ENTRY, PARAMS_SYMBOL
from ember.runtime.errors import EmberValueError, ExportError

RUN_FUNCTION = "ember_model_run"
"""The plain C entry the model's header declares."""

C_TYPES = {
    "float32": "float",
    "float64": "double",
    "float16": "uint16_t",
    "bool": "bool",
    **{f"int{b}": f"int{b}_t" for b in (8, 16, 32, 64)},
    **{f"uint{b}": f"uint{b}_t" for b in (8, 16, 32, 64)},
}
"""The C element type of a model input or output, by numpy dtype name
(float16 as its bits)."""


def _face(target: DeviceTarget) -> CFace:
    return MicroCFace() if target.micro else CFace()


def kernel_piece(module: ModuleOp, symbol: str, target: DeviceTarget) -> dict:
    """Kernel `symbol` of `module` (loop IR, scratch buffers as arguments)
    printed as C: its function, the helpers and the prelude features it
    uses, and its loop IR."""
    unit = SourceUnit(_face(target))
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == symbol:
            text = print_function(op, unit)
            return {
                "symbol": symbol,
                "impl": impl_name(op),
                "function": text,
                "helpers": unit.helpers,
                "features": sorted(unit.features),
                "loop": str(module),
            }
    raise EmberValueError(f"kernel {symbol}: no function of that name")


def piece_problem(code: bytes, symbol: str) -> str | None:
    """Why cached `code` is not kernel `symbol`'s piece, or None."""
    try:
        piece = json.loads(code)
    except ValueError as e:
        return f"not a C kernel piece ({e})"
    if not isinstance(piece, dict) or piece.get("symbol") != symbol:
        return f"a C kernel piece of another kernel than {symbol}"
    return None


def link(
    module: ModuleOp,
    target: DeviceTarget,
    info: dict,
    params: dict,
    kernels: list,
    entry_loop: str | None,
) -> CModelModule:
    """The `CModelModule` of a model after `ember-model` (see the module)."""
    pieces = [json.loads(k.code) for k in kernels]
    entries = _entries(module)
    if list(entries) != [MODEL_ENTRY]:
        raise EmberValueError(f"expected one model entry {MODEL_ENTRY}, got {entries}")
    if target.micro and not info["params_embedded"]:
        raise EmberValueError(
            "target c micro mode keeps the params in flash: compile with "
            "embed_params=True"
        )
    # the workspace and params are bytes, whichever i8 the IR says (as
    # func-packed-abi's model entry takes them)
    args = entries[MODEL_ENTRY]
    args[-2:] = [PackedArg(a.name, a.type, "uint8", a.output) for a in args[-2:]]
    document = metadata_document(entries, MODEL_ENTRY)
    document["model"] = info
    unit = SourceUnit(_face(target))
    for piece in pieces:
        unit.join(piece)
    impls = {p["symbol"]: p["impl"] for p in pieces}
    mode = "microcontroller C99 (no heap, no threads)" if target.micro else "C99"
    parts = [
        f"/* Generated by ember for target '{target}': a model, {mode}. */",
        "/* ember_runtime.h, inlined: the file compiles alone. */",
        header().rstrip(),
        "/* ---- kernels ---- */",
        unit.text(p["function"] for p in pieces).rstrip(),
        _ALIGNED,
        _params_blob(info, params, target),
        _run_impl(info, impls),
        _ENTRY_HELPERS,
        _entry(MODEL_ENTRY, entries[MODEL_ENTRY]),
        _plain_entry(info, target),
        _metadata_function(document),
    ]
    source = "\n\n".join(p for p in parts if p) + "\n"
    mod = CModelModule(source, model_header(info, target), document, target)
    mod.loop_source = "\n".join([entry_loop or "", *(p["loop"] for p in pieces)])
    return mod


def _place(place: dict, n_inputs: int) -> str:
    """A kernel argument for a value's place in the plan (a pointer)."""
    kind, offset = place["buffer"], place.get("offset", 0)
    base = {
        "input": lambda: f"a{place['index']}",
        "output": lambda: f"a{n_inputs + place['index']}",
        "workspace": lambda: "workspace",
        "params": lambda: "params",
    }.get(kind)
    if base is None:
        raise EmberValueError(f"a C model has no {kind!r} buffer")
    return f"(void*)((uint8_t*){base()} + {offset})" if offset else f"(void*){base()}"


def _run_impl(info: dict, impls: dict[str, str]) -> str:
    """`ember_default_run_impl`: the plan's calls in order."""
    n_in, n_out = len(info["inputs"]), len(info["outputs"])
    params = [f"void* a{i}" for i in range(n_in + n_out)]
    params += ["void* workspace", "void* params"]
    body = ["int32_t rc;", "(void)workspace;", "(void)params;"]
    for i, call in enumerate(info["calls"]):
        impl = impls.get(call["kernel"])
        if impl is None:
            raise EmberValueError(f"calls[{i}]: no kernel {call['kernel']}")
        args = ", ".join(_place(p, n_in) for p in call["args"])
        body.append(f"if ((rc = {impl}({args})) != 0) return rc;")
    body.append("return 0;")
    head = f"static int32_t ember_{MODEL_ENTRY}_impl({', '.join(params)}) {{"
    return "\n".join(
        [f"/* ---- the model (error codes: {ALLOC_ERROR} out of memory) ---- */", head]
        + ["  " + line for line in body]
        + ["}"]
    )


def _params_blob(info: dict, params: dict, target: DeviceTarget) -> str:
    """`__ember_params`: the packed params, read-only, 64-byte aligned."""
    if not info["params_embedded"]:
        return ""
    blob = bytearray(info["params_bytes"])
    for name, array in params.items():
        start = info["params"][name]["offset"]
        raw = array.reshape(-1).view("uint8").tobytes()
        blob[start : start + len(raw)] = raw
    rows = [",".join(str(b) for b in blob[i : i + 24]) for i in range(0, len(blob), 24)]
    return "\n".join(
        [
            "/* ---- params (the packed blob, in flash in micro mode) ---- */",
            f"EMBER_MODEL_ALIGNED const uint8_t {PARAMS_SYMBOL}"
            f"[{max(len(blob), 1)}] = {{",
            *(f"  {row}," for row in rows or ["0"]),
            "};",
        ]
    )


def _io(info: dict) -> list[tuple[str, dict, bool]]:
    """(C name, spec, is output) of each model input and output."""
    taken: set[str] = set()
    out = []
    for spec, output in [(s, False) for s in info["inputs"]] + [
        (s, True) for s in info["outputs"]
    ]:
        name = c_identifier(spec["name"])
        while name in taken or name in ("workspace", "params"):
            name += "_"
        taken.add(name)
        out.append((name, spec, output))
    return out


def _signature(info: dict, target: DeviceTarget) -> str:
    args = []
    for name, spec, output in _io(info):
        ctype = C_TYPES.get(spec["dtype"])
        if ctype is None:
            raise EmberValueError(f"{spec['name']}: no C type for {spec['dtype']}")
        args.append(f"{'' if output else 'const '}{ctype}* {name}")
    if not target.micro:
        args += ["void* workspace", "const void* params"]
    return f"int32_t {RUN_FUNCTION}({', '.join(args)})"


def _plain_entry(info: dict, target: DeviceTarget) -> str:
    """`ember_model_run`, the entry the header declares."""
    names = [f"(void*){name}" for name, _, _ in _io(info)]
    lines = []
    if target.micro:
        lines.append(
            "static EMBER_MODEL_ALIGNED uint8_t ember_workspace"
            f"[{max(info['workspace_bytes'], 1)}];"
        )
        names += ["ember_workspace", f"(void*){PARAMS_SYMBOL}"]
    else:
        names += ["workspace", "(void*)params"]
    lines += [
        f"{_signature(info, target)} {{",
        f"  return ember_{MODEL_ENTRY}_impl({', '.join(names)});",
        "}",
    ]
    return "\n".join(lines)


_ALIGNED = """#ifndef EMBER_MODEL_ALIGNED
#if defined(__GNUC__) || defined(__clang__)
#define EMBER_MODEL_ALIGNED __attribute__((aligned(64)))
#else
#define EMBER_MODEL_ALIGNED
#endif
#endif"""


def model_header(info: dict, target: DeviceTarget) -> str:
    """`model.h`: the model's sizes, its inputs and outputs, `ember_model_run`."""
    lines = [
        f"/* Generated by ember for target '{target}': the model's C entry. */",
        "#ifndef EMBER_MODEL_H",
        "#define EMBER_MODEL_H",
        "",
        "#include <stdbool.h>",
        "#include <stdint.h>",
        "",
        f"#define EMBER_MODEL_WORKSPACE_BYTES {info['workspace_bytes']}",
        f"#define EMBER_MODEL_PARAMS_BYTES {info['params_bytes']}",
        f"#define EMBER_MODEL_NUM_INPUTS {len(info['inputs'])}",
        f"#define EMBER_MODEL_NUM_OUTPUTS {len(info['outputs'])}",
        "",
    ]
    for name, spec, output in _io(info):
        what = "output" if output else "input"
        shape = ", ".join(map(str, spec["shape"]))
        lines.append(f'/* {what} "{spec["name"]}": {spec["dtype"]} [{shape}] */')
        lines.append(
            f"#define EMBER_MODEL_{what.upper()}_{name.upper()}_SIZE "
            f"{prod(spec['shape'])}"
        )
    lines += ["", _ALIGNED, ""]
    if info["params_embedded"]:
        lines.append(f"extern const uint8_t {PARAMS_SYMBOL}[];")
    how = (
        "a static workspace and the const params: not reentrant"
        if target.micro
        else "`workspace`: EMBER_MODEL_WORKSPACE_BYTES, 64-byte aligned; `params`:"
        f" the packed blob ({PARAMS_SYMBOL} when embedded)"
    )
    lines += [
        f"/* Runs the model: 0, or {ALLOC_ERROR} if a buffer could not be",
        f"   allocated. Uses {how}. */",
        f"{_signature(info, target)};",
        "",
        "#endif",
    ]
    return "\n".join(lines) + "\n"


class CModelModule(CModule):
    """A model compiled for the `c` target: one C file (`get_source()`) and
    its header (`get_source("h")`); run like any model library
    (`mod["default"](cpu())`) once compiled for this machine.

    `export_library("m.so")` compiles it with the system compiler;
    `"m.tar"` or a folder (a path ending in "/" or without a suffix) writes
    `model.c` and `model.h` for a cross build; `"m.c"` the source alone.

    Example:
        >>> mod = ember.compile_model(onnx_model, target="c -mcpu=cortex-m4")  # doctest: +SKIP
        >>> mod.export_library("deploy/model")  # doctest: +SKIP
    """

    type_key = "c-model"

    def __init__(self, source: str, model_h: str, document: dict, target):
        self.model_h = model_h
        super().__init__(source, document, target, compile_now=not target.micro)

    def get_source(self, fmt: str = "c") -> str:
        """The C file ("c"), its header ("h") or the loop IR ("loop")."""
        if fmt == "h":
            return self.model_h
        return super().get_source(fmt)

    def get_data(self, symbol, nbytes):
        """The compiled library's data symbol (the params blob)."""
        return self._load().get_data(symbol, nbytes)

    def export_library(self, path, cc=None, options=()) -> None:
        """Write a library (".so"), the sources (".tar", a folder) or ".c"."""
        path = os.fspath(path)
        sources = {"model.c": self.source, "model.h": self.model_h}
        if path.endswith(".tar"):
            with tempfile.TemporaryDirectory(prefix="ember-c-") as tmp:
                for name, text in sources.items():
                    with open(os.path.join(tmp, name), "w") as f:
                        f.write(text)
                with tarfile.open(path, "w") as tar:
                    for name in sources:
                        tar.add(os.path.join(tmp, name), arcname=name)
            return
        if path.endswith(os.sep) or not os.path.splitext(path)[1]:
            if os.path.isfile(path):
                raise ExportError(f"export_library: {path} is a file, not a folder")
            os.makedirs(path, exist_ok=True)
            for name, text in sources.items():
                with open(os.path.join(path, name), "w") as f:
                    f.write(text)
            return
        super().export_library(path, cc, options)


__all__ = ["CModelModule", "kernel_piece", "link", "model_header"]

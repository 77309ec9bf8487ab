"""Writing a module and the modules it imports into one library.

``Module.export_library`` lands here. Each module kind gives its code as an
object file made linkable beside the others (``Module._object_file``: its own
``__ember_metadata`` internal, its ``__ember_*`` globals weak), the root module
compiles one more object defining the library's merged ``__ember_metadata``
(``Module._metadata_object``), and ``ember.runtime.cc`` links them into a
``.so`` or packs them into a ``.tar``.
"""

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from . import cc as _cc
from . import data_object, elf
from .errors import ExportError

if TYPE_CHECKING:
    from .module import Module

SUFFIXES = (".so", ".tar", ".o")
WASM_MAGIC = b"\0asm"


def export_library(
    module: "Module",
    path: str,
    cc: "str | list[str] | None",
    options: "list[str] | tuple[str, ...]",
) -> None:
    """Write ``module`` and its imports to ``path`` (see ``Module.export_library``)."""
    suffix = os.path.splitext(path)[1]
    if suffix not in SUFFIXES:
        raise ExportError(
            f"export_library: cannot write {path}: expected a file ending in "
            ".so (a shared library), .tar (objects and metadata) or .o (one "
            f"relocatable object), got {suffix or 'no suffix'!r}"
        )
    modules = module_tree(module)
    objects = [m._object_file(f"{i}_{_file_stem(m)}.o") for i, m in enumerate(modules)]
    _check_linkable(path, modules, objects)
    document = {
        "entry": module.entry_name,
        "functions": {
            name: function
            for o in objects
            for name, function in o.metadata.get("functions", {}).items()
        },
        "triple": objects[0].triple,
        "features": sorted({f for o in objects for f in o.features}),
    }
    if "model" in objects[0].metadata:
        document["model"] = objects[0].metadata["model"]
    objects += _data_objects(modules, objects)
    metadata_object = module._metadata_object(document)
    if suffix == ".tar":
        manifest = {"triple": objects[0].triple, "metadata": document}
        with _replacing(path) as (_, staged):
            _cc.write_tar(staged, objects, metadata_object, manifest)
        return
    machine = elf.triple_machine(objects[0].triple)
    if objects[0].code.startswith(WASM_MAGIC):
        raise ExportError(
            f"export_library: {_label(0, module)} is compiled for "
            f"{objects[0].triple}: Wasm objects make no shared library; export "
            "a .tar, or save the object (save('k.o')) and link it with wasm-ld "
            "(wasm-ld --no-entry --export-all)"
        )
    host = elf.host_machine()
    if cc is None and host is not None and machine != host:
        raise ExportError(
            f"export_library: {_label(0, module)} is compiled for "
            f"{objects[0].triple}, not this {host} machine; linking {path} "
            f"needs a C compiler for {machine}: pass cc=, e.g. "
            f"cc='{machine}-linux-gnu-gcc', or export a .tar (no compiler needed)"
        )
    _link(path, objects, metadata_object, cc, options, relocatable=suffix == ".o")


def _data_objects(
    modules: "list[Module]", objects: list["_cc.ObjectFile"]
) -> list["_cc.ObjectFile"]:
    """One ELF object per module with data blobs (``Module.add_data``), for
    the module's own target, written without LLVM (see ``data_object``)."""
    extra = []
    for i, (module, o) in enumerate(zip(modules, objects, strict=True)):
        blobs = module._data_blobs()
        if not blobs:
            continue
        if not data_object.is_elf(o.code):
            raise ExportError(
                f"export_library: {_label(i, module)} carries data "
                f"({', '.join(blobs)}) and is compiled for {o.triple}, whose "
                "objects are not ELF; keep the params separate "
                "(save_param_dict) for this target"
            )
        code = data_object.data_object(
            o.code, {name: np.asarray(blob) for name, blob in blobs.items()}
        )
        extra.append(
            _cc.ObjectFile(
                name=f"__ember_data_{i}.o",
                code=code,
                triple=o.triple,
                symbols=tuple(blobs),
            )
        )
    return extra


def module_tree(module: "Module") -> list["Module"]:
    """``module``, then every module it imports, depth first, each once."""
    seen: dict[int, Module] = {}

    def visit(m: "Module") -> None:
        if id(m) not in seen:
            seen[id(m)] = m
            for imported in m.imported_modules:
                visit(imported)

    visit(module)
    return list(seen.values())


def _file_stem(module: "Module") -> str:
    """A name for a module's object file: its entry or first function."""
    names = [module.entry_name] if module.entry_name else module.function_names()
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", names[0] if names else "")[:40]
    return stem or module.type_key


def _label(index: int, module: "Module") -> str:
    """How export errors name the ``index``-th module of the tree."""
    where = "the exported module" if index == 0 else f"imported module #{index}"
    names = module.function_names()
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return f"{where} ({module.type_key}: {shown or 'no functions'})"


def _check_linkable(
    path: str, modules: "list[Module]", objects: list["_cc.ObjectFile"]
) -> None:
    """Refuse modules that cannot share one library: compiled for different
    machines, or defining the same function."""
    first = objects[0]
    defined: dict[str, int] = {}
    for i, (module, o) in enumerate(zip(modules, objects, strict=True)):
        if elf.triple_machine(o.triple) != elf.triple_machine(first.triple):
            raise ExportError(
                f"export_library: cannot link {_label(i, module)}, compiled for "
                f"{o.triple}, with {_label(0, modules[0])}, compiled for "
                f"{first.triple}, into one library"
            )
        for name in o.symbols:
            other = defined.setdefault(name, i)
            if other != i:
                raise ExportError(
                    f"export_library: cannot write {path}: function {name!r} is "
                    f"defined by both {_label(other, modules[other])} and "
                    f"{_label(i, module)}; rename one of them"
                )


def _link(
    path: str,
    objects: list["_cc.ObjectFile"],
    metadata_object: bytes,
    cc: "str | list[str] | None",
    options: "list[str] | tuple[str, ...]",
    relocatable: bool = False,
) -> None:
    """Link the objects into the shared library ``path``, or into one
    relocatable object (``.o``: ``load_module`` links it like a ``.tar``), via
    ``_replacing``."""
    with _replacing(path) as (tmp, library):
        files = []
        for name, code in [
            *((o.name, o.code) for o in objects),
            ("__ember_metadata.o", metadata_object),
        ]:
            files.append(os.path.join(tmp, name))
            with open(files[-1], "wb") as f:
                f.write(code)
        if relocatable:
            _cc.link_relocatable(library, files, cc)
            return
        openmp = any(_cc.uses_openmp(o.code) for o in objects)
        _cc.link_shared(library, files, cc, options, openmp=openmp)


@contextmanager
def _replacing(path: str) -> Iterator[tuple[str, str]]:
    """``(directory, staged)``: a temporary directory beside ``path`` and the
    file ``library.<suffix>`` in it, renamed over ``path`` when the block ends
    without an error; the directory is removed either way.

    So a process that has an older ``path`` loaded keeps its mapping intact,
    and a failed or interrupted write (a full disk) leaves an existing ``path``
    as it was.
    """
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryDirectory(prefix=".ember-export-", dir=directory) as tmp:
        staged = os.path.join(tmp, "library" + os.path.splitext(path)[1])
        yield tmp, staged
        os.replace(staged, path)

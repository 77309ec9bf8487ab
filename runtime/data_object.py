"""Data blobs as relocatable ELF objects, written directly.

A compiled model may carry its params inside its library (``__ember_params``).
Emitting tens of megabytes through LLVM IR means a constant of one element
per byte, printed and parsed as text; instead ``export_library`` writes a small
ELF object by hand: one read-only, 64-byte aligned section holding the blobs
back to back (each at a 64-byte aligned offset), and one global object symbol
per blob. Code never refers to the blobs (the host looks them up by name, or
passes them as an argument), so the object needs no relocations, and it is
the same for every ELF target: its identification (class, byte order, OS ABI),
machine and flags are copied from an object the module's own target wrote,
so the linker takes it for one of that target's (RISC-V float ABI flags
included). Runtime code only: struct and numpy, no compiler.

Layout of the object::

    ELF header
    .rodata.ember   (the blobs; SHF_ALLOC, align 64)
    .symtab         (null, the section symbol, one global STT_OBJECT per blob)
    .strtab  .shstrtab  .note.GNU-stack (empty: no executable stack)
    section headers
"""

import struct
from collections.abc import Mapping

import numpy as np

from .errors import EmberValueError

ALIGNMENT = 64

_SHT_PROGBITS, _SHT_SYMTAB, _SHT_STRTAB = 1, 2, 3
_SHF_ALLOC = 0x2
_STB_LOCAL, _STB_GLOBAL = 0, 1
_STT_OBJECT, _STT_SECTION = 1, 3
_ET_REL = 1
_SECTIONS = (
    b"",
    b".rodata.ember",
    b".symtab",
    b".strtab",
    b".shstrtab",
    b".note.GNU-stack",
)


def is_elf(code: bytes) -> bool:
    """Whether an object file is ELF (data objects can be made for its target)."""
    return code[:4] == b"\x7fELF"


def _as_bytes(blob) -> memoryview:
    if isinstance(blob, np.ndarray):
        blob = np.ascontiguousarray(blob)
        return blob.reshape(-1).view(np.uint8).data
    return memoryview(blob).cast("B")


def data_object(template: bytes, blobs: Mapping[str, object]) -> bytes:
    """A relocatable ELF object defining one global symbol per blob.

    Args:
        template: an ELF object for the target (the module's own); its class,
            byte order, OS ABI, machine and flags are copied.
        blobs: symbol → bytes-like or numpy array; each symbol's data starts
            64-byte aligned, and its ELF size is the blob's length.

    Returns:
        The object file's bytes.

    Raises:
        ValueError: ``template`` is not ELF, or a symbol name is empty or
            holds a NUL.
    """
    if not is_elf(template) or len(template) < 52:
        raise EmberValueError("data objects can only be made for ELF targets")
    is64 = template[4] == 2
    endian = "<" if template[5] == 1 else ">"
    e_machine = struct.unpack_from(endian + "H", template, 18)[0]
    e_flags = struct.unpack_from(endian + "I", template, 48 if is64 else 36)[0]

    views = {name: _as_bytes(blob) for name, blob in blobs.items()}
    offsets, size = {}, 0
    for name, view in views.items():
        if not name or "\0" in name:
            raise EmberValueError(f"invalid symbol name {name!r}")
        offsets[name] = size
        size += len(view) + (-len(view) % ALIGNMENT)

    strtab = b"\0"
    names = {}
    for name in views:
        names[name] = len(strtab)
        strtab += name.encode() + b"\0"
    shstrtab, sh_names = b"", []
    for section in _SECTIONS:
        sh_names.append(len(shstrtab) if section else 0)
        shstrtab += section + b"\0"

    if is64:
        ehsize, shentsize, symentsize = 64, 64, 24

        def symbol(name_at, info, shndx, value, sz):
            return struct.pack(endian + "IBBHQQ", name_at, info, 0, shndx, value, sz)
    else:
        ehsize, shentsize, symentsize = 52, 40, 16

        def symbol(name_at, info, shndx, value, sz):
            return struct.pack(endian + "IIIBBH", name_at, value, sz, info, 0, shndx)

    symtab = symbol(0, 0, 0, 0, 0) + symbol(
        0, (_STB_LOCAL << 4) | _STT_SECTION, 1, 0, 0
    )
    for name, view in views.items():
        symtab += symbol(
            names[name], (_STB_GLOBAL << 4) | _STT_OBJECT, 1, offsets[name], len(view)
        )

    # File order: header, data (aligned), symtab, strtab, shstrtab, headers.
    data_at = ALIGNMENT
    symtab_at = data_at + size + (-(data_at + size) % 8)
    strtab_at = symtab_at + len(symtab)
    shstrtab_at = strtab_at + len(strtab)
    headers_at = shstrtab_at + len(shstrtab)
    headers_at += -headers_at % 8

    # (name, type, flags, offset, size, link, info, align, entsize)
    sections = [
        (0, 0, 0, 0, 0, 0, 0, 0, 0),
        (sh_names[1], _SHT_PROGBITS, _SHF_ALLOC, data_at, size, 0, 0, ALIGNMENT, 0),
        (sh_names[2], _SHT_SYMTAB, 0, symtab_at, len(symtab), 3, 2, 8, symentsize),
        (sh_names[3], _SHT_STRTAB, 0, strtab_at, len(strtab), 0, 0, 1, 0),
        (sh_names[4], _SHT_STRTAB, 0, shstrtab_at, len(shstrtab), 0, 0, 1, 0),
        (sh_names[5], _SHT_PROGBITS, 0, headers_at, 0, 0, 0, 1, 0),
    ]
    header_format = endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    section_headers = b"".join(
        struct.pack(header_format, n, t, f, 0, o, s, lk, inf, al, es)
        for n, t, f, o, s, lk, inf, al, es in sections
    )
    ident = template[:16]
    if is64:
        header = ident + struct.pack(
            endian + "HHIQQQIHHHHHH",
            _ET_REL, e_machine, 1, 0, 0, headers_at, e_flags,
            ehsize, 0, 0, shentsize, len(sections), 4,
        )  # fmt: skip
    else:
        header = ident + struct.pack(
            endian + "HHIIIIIHHHHHH",
            _ET_REL, e_machine, 1, 0, 0, headers_at, e_flags,
            ehsize, 0, 0, shentsize, len(sections), 4,
        )  # fmt: skip

    parts: list = [header, bytes(data_at - len(header))]
    for view in views.values():
        parts += [view, bytes(-len(view) % ALIGNMENT)]
    parts += [
        bytes(symtab_at - data_at - size),
        symtab,
        strtab,
        shstrtab,
        bytes(headers_at - shstrtab_at - len(shstrtab)),
        section_headers,
    ]
    return b"".join(parts)  # the one copy of the blobs


__all__ = ["ALIGNMENT", "data_object", "is_elf"]

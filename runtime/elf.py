"""Checking that a shared library is for this machine: its ELF header before
``dlopen`` sees it, and the CPU features it was compiled for.

``dlopen`` reports a library for another machine as "wrong ELF class" or
"invalid ELF header", a truncated one as "file too short" or not at all (the
loader maps pages that are not in the file, and the process faults when it
touches them). Reading the header first turns each case into a message that
names the problem: "built for aarch64, this machine is x86_64". This machine
is whatever the running interpreter's own executable was built for, read from
its header too, never assumed. Code compiled for the host CPU uses every
feature it has (AVX-512 on a Zen 5), and would stop with SIGILL on a CPU
without them: ``missing_cpu_features`` compares what a library says it needs
with what ``/proc/cpuinfo`` says this CPU has.
"""

import os
import re
import struct
import sys
from dataclasses import dataclass
from functools import cache

from .errors import IncompatibleLibraryError, InvalidLibraryError

ELF_MAGIC = b"\x7fELF"
_ET_NAMES = {1: "a relocatable object file", 2: "an executable", 4: "a core dump"}
_ET_DYN = 3
_ET_REL = 1
_PT_LOAD, _PT_DYNAMIC = 1, 2
# e_machine values (the ELF ABI supplements) and how people call them.
_MACHINES = {
    2: "sparc",
    3: "x86",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390x",
    40: "arm",
    43: "sparc64",
    62: "x86_64",
    183: "aarch64",
    243: "riscv",
    258: "loongarch",
}
# What other files start with, for a better message than "not ELF".
_OTHER_FORMATS = (
    (b"\0asm", "a WebAssembly module"),
    (b"MZ", "a Windows PE file"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O file"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O file"),
    (b"!<arch>\n", "a static archive (.a)"),
)


@dataclass(frozen=True)
class ElfHeader:
    """The fields of an ELF header that say what a file is and where it runs.

    Attributes:
        bits: 32 or 64 (EI_CLASS).
        byteorder: "little" or "big" (EI_DATA).
        type: e_type (3 for a shared library).
        machine: e_machine (62 for x86_64, 183 for aarch64, ...).
    """

    bits: int
    byteorder: str
    type: int
    machine: int
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int

    @property
    def machine_name(self) -> str:
        """The machine in the words of a target triple: "aarch64", "riscv64"."""
        name = _MACHINES.get(self.machine, f"ELF machine {self.machine}")
        if name in ("riscv", "loongarch"):
            name += str(self.bits)
        elif name == "x86" and self.bits == 64:
            name = "x86_64"
        elif name == "x86_64" and self.bits == 32:
            name = "x32"
        if self.byteorder == "big" and self.machine in (40, 183):
            name += "_be"
        return name


def parse_header(data: bytes) -> ElfHeader | None:
    """The header of the ELF file whose first bytes are ``data``, or None when
    ``data`` is not the start of an ELF file (or too short to be one)."""
    if not data.startswith(ELF_MAGIC) or len(data) < 52:
        return None
    bits = {1: 32, 2: 64}.get(data[4])
    byteorder = {1: "little", 2: "big"}.get(data[5])
    if bits is None or byteorder is None or (bits == 64 and len(data) < 64):
        return None
    e = "<" if byteorder == "little" else ">"
    etype, machine = struct.unpack_from(e + "HH", data, 16)
    if bits == 64:
        phoff, shoff = struct.unpack_from(e + "QQ", data, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(e + "HHHH", data, 54)
    else:
        phoff, shoff = struct.unpack_from(e + "II", data, 28)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(e + "HHHH", data, 42)
    return ElfHeader(
        bits,
        byteorder,
        etype,
        machine,
        phoff,
        phentsize,
        phnum,
        shoff,
        shentsize,
        shnum,
    )


@cache
def host_header() -> ElfHeader | None:
    """The header of this interpreter's executable: what this machine runs.

    None where it cannot be read (not Linux, no ``/proc``, an embedded
    interpreter): the library is then left to ``dlopen``.
    """
    for path in ("/proc/self/exe", sys.executable):
        if not path:
            continue
        try:
            with open(path, "rb") as f:
                header = parse_header(f.read(64))
        except OSError:
            continue
        if header is not None:
            return header
    return None


def host_template() -> bytes | None:
    """The first bytes of this interpreter's executable: an ELF header of this
    machine (class, byte order, machine, flags) for ``data_object`` to copy,
    or None where it cannot be read."""
    for path in ("/proc/self/exe", sys.executable):
        try:
            with open(path, "rb") as f:
                start = f.read(64)
        except (OSError, TypeError):
            continue
        if parse_header(start) is not None:
            return start
    return None


def host_machine() -> str | None:
    """This machine as a target triple names it ("x86_64"), None if unknown."""
    header = host_header()
    return header.machine_name if header is not None else None


def triple_machine(triple: str) -> str:
    """The machine of a target triple in ``ElfHeader.machine_name``'s words:
    "aarch64-linux-gnu" → "aarch64", "i686-pc-linux-gnu" → "x86"."""
    arch = triple.split("-", 1)[0].lower()
    if re.fullmatch(r"i[3-6]86", arch):
        return "x86"
    if arch in ("amd64", "x86_64h"):
        return "x86_64"
    if arch == "arm64":
        return "aarch64"
    if arch.startswith(("armeb", "thumbeb")):
        return "arm_be"
    if arch.startswith(("arm", "thumb")):
        return "arm"
    if arch.startswith("powerpc64") or arch.startswith("ppc64"):
        return "ppc64"
    if arch in ("powerpc", "ppc"):
        return "ppc"
    if arch == "systemz":
        return "s390x"
    return arch


def check_library(path: str) -> None:
    """Check that ``path`` is a whole ELF shared library for this machine.

    Args:
        path: the library file.

    Raises:
        InvalidLibraryError: not an ELF file (saying what it is instead, where
            it can tell), not a shared library, or shorter than its own headers
            say (a truncated copy).
        IncompatibleLibraryError: built for another machine, word size or byte
            order than this one.

    Example:
        >>> check_library("vecadd.so")  # doctest: +SKIP
    """
    header, size = _elf_header(path, "shared library")
    if header.type != _ET_DYN:
        what = _describe_type(header.type)
        hint = (
            "; link it into a shared library first (export_library('m.so') or "
            "cc -shared)"
            if header.type == 1
            else ""
        )
        raise InvalidLibraryError(f"{path} is {what}, not a shared library{hint}")
    with open(path, "rb") as f:
        _check_extent(path, header, size, f)


def check_object(path: str) -> None:
    """Check that ``path`` is an ELF relocatable object for this machine (what
    ``save("m.o")`` writes), which ``load_module`` links into a library.

    Raises:
        InvalidLibraryError: not an ELF file, or not a relocatable object.
        IncompatibleLibraryError: built for another machine.
    """
    header, _ = _elf_header(path, "object file")
    if header.type != _ET_REL:
        raise InvalidLibraryError(
            f"{path} is {_describe_type(header.type)}, not a relocatable object"
        )


def _elf_header(path: str, what: str) -> tuple[ElfHeader, int]:
    """``path``'s ELF header, checked to be this machine's, and its size."""
    with open(path, "rb") as f:
        start = f.read(64)
        size = os.fstat(f.fileno()).st_size
    header = parse_header(start)
    if header is None:
        raise InvalidLibraryError(
            f"{path} is not an ELF {what}: {_what_is(start, size)}"
        )
    _check_machine(path, header)
    return header, size


def _describe_type(elf_type: int) -> str:
    return _ET_NAMES.get(elf_type, f"ELF type {elf_type}")


def _check_machine(path: str, header: ElfHeader) -> None:
    host = host_header()
    if host is None:
        return
    built, here = header.machine_name, host.machine_name
    if built == here and header.bits != host.bits:  # unknown machines
        built, here = f"{header.bits}-bit {built}", f"{host.bits}-bit {here}"
    if (header.machine, header.bits, header.byteorder) != (
        host.machine,
        host.bits,
        host.byteorder,
    ):
        raise IncompatibleLibraryError(
            f"{path} was built for {built}, this machine is {here}"
        )


def _check_extent(path: str, header: ElfHeader, size: int, f) -> None:
    """Everything the headers point at must lie inside the file."""

    def need(end: int, what: str) -> None:
        if end > size:
            raise InvalidLibraryError(
                f"{path} is truncated: its {what} end at byte {end}, "
                f"the file has {size} bytes"
            )

    entry_size = 56 if header.bits == 64 else 32
    if header.phnum and header.phentsize < entry_size:
        raise InvalidLibraryError(
            f"{path} has a damaged ELF header: program headers of "
            f"{header.phentsize} bytes, expected at least {entry_size}"
        )
    need(header.phoff + header.phnum * header.phentsize, "program headers")
    f.seek(header.phoff)
    table = f.read(header.phnum * header.phentsize)
    e = "<" if header.byteorder == "little" else ">"
    for i in range(header.phnum):
        entry = table[i * header.phentsize : (i + 1) * header.phentsize]
        if header.bits == 64:
            kind, _, offset, _, _, filesz = struct.unpack_from(e + "IIQQQQ", entry)
        else:
            kind, offset, _, _, filesz = struct.unpack_from(e + "IIIII", entry)
        if kind in (_PT_LOAD, _PT_DYNAMIC):
            need(offset + filesz, f"segment {i}'s contents")
    if header.shnum:
        need(header.shoff + header.shnum * header.shentsize, "section headers")


def _what_is(start: bytes, size: int) -> str:
    """A few words on what a file that is not ELF looks like."""
    if size == 0:
        return "the file is empty"
    if start.startswith(ELF_MAGIC):
        return f"its ELF header is cut short or damaged ({size} bytes)"
    for magic, name in _OTHER_FORMATS:
        if start.startswith(magic):
            return f"it is {name}"
    try:
        text = start.decode("utf-8")
    except UnicodeDecodeError:
        return f"it starts with bytes {start[:8].hex(' ')}"
    if text.isprintable() or all(c.isprintable() or c.isspace() for c in text):
        return f"it is a text file (starting {text[:24]!r})"
    return f"it starts with bytes {start[:8].hex(' ')}"


# LLVM feature name → the /proc/cpuinfo flag of the same instructions, for the
# features whose instructions compiled code may contain: a library records those
# its target has, and a CPU is refused for lacking one of them only. The rest
# (pku, sgx, wbnoinvd, ...) are system features code generation never emits.
_CPUINFO_FLAGS = {
    "x86_64": {
        "sse4a": "sse4a",
        "aes": "aes",
        "pclmul": "pclmulqdq",
        "sha": "sha_ni",
        "adx": "adx",
        "fma4": "fma4",
        "xop": "xop",
        "tbm": "tbm",
        "sse3": "pni",
        "ssse3": "ssse3",
        "sse4.1": "sse4_1",
        "sse4.2": "sse4_2",
        "popcnt": "popcnt",
        "lzcnt": "abm",
        "movbe": "movbe",
        "bmi": "bmi1",
        "bmi2": "bmi2",
        "f16c": "f16c",
        "fma": "fma",
        "avx": "avx",
        "avx2": "avx2",
        "avxvnni": "avx_vnni",
        "avx512f": "avx512f",
        "avx512bw": "avx512bw",
        "avx512cd": "avx512cd",
        "avx512dq": "avx512dq",
        "avx512vl": "avx512vl",
        "avx512ifma": "avx512ifma",
        "avx512vbmi": "avx512vbmi",
        "avx512vbmi2": "avx512_vbmi2",
        "avx512vnni": "avx512_vnni",
        "avx512bf16": "avx512_bf16",
        "avx512bitalg": "avx512_bitalg",
        "avx512vpopcntdq": "avx512_vpopcntdq",
        "avx512fp16": "avx512_fp16",
        "avx512vp2intersect": "avx512_vp2intersect",
        "avxifma": "avx_ifma",
        "avxvnniint8": "avx_vnni_int8",
        "avxneconvert": "avx_ne_convert",
        "gfni": "gfni",
        "vaes": "vaes",
        "vpclmulqdq": "vpclmulqdq",
        "amx-tile": "amx_tile",
        "amx-int8": "amx_int8",
        "amx-bf16": "amx_bf16",
        "amx-fp16": "amx_fp16",
    },
    "aarch64": {
        "neon": "asimd",
        "fullfp16": "fphp",
        "dotprod": "asimddp",
        "i8mm": "i8mm",
        "bf16": "bf16",
        "sve": "sve",
        "sve2": "sve2",
        "sme": "sme",
    },
}


def code_features(machine: str) -> tuple[str, ...]:
    """The LLVM features whose instructions code compiled for ``machine``
    ("x86_64", "aarch64") may contain, the ones a library records and a CPU is
    checked for; () for a machine ember does not check.

    Example:
        >>> "avx512f" in code_features("x86_64"), "pku" in code_features("x86_64")
        (True, False)
    """
    return tuple(_CPUINFO_FLAGS.get(machine, ()))


@cache
def host_cpu_flags() -> frozenset[str] | None:
    """The feature flags of this CPU from ``/proc/cpuinfo``, None if unknown."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return None


def missing_cpu_features(features: "list[str] | tuple[str, ...]") -> list[str]:
    """The LLVM features in ``features`` this CPU lacks.

    Args:
        features: LLVM feature names the code was compiled with ("avx512f").

    Returns:
        Those this CPU is known to lack; empty when it has them all, or when
        this machine's CPU cannot be read or the features cannot be mapped.

    Example:
        >>> missing_cpu_features(["avx512fp16", "sse2"])  # doctest: +SKIP
        ['avx512fp16']
    """
    flags = host_cpu_flags()
    known = _CPUINFO_FLAGS.get(host_machine() or "")
    if flags is None or known is None:
        return []
    return [f for f in features if f in known and known[f] not in flags]

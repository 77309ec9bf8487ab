"""Linking object files into libraries with the system C compiler, and the
``.tar`` library format.

``export_library("m.so")`` and ``load_module("m.tar")`` both end here: the
objects are linked by ``cc -shared -fPIC`` (``$CC`` or ``cc``; ``cc=`` names a
cross toolchain), with ``-lgomp`` when an object calls libgomp, and always
with ``-lm``: kernels call libm (``expf``), and the library must name it itself
since a C host need not link it. A ``.tar`` library holds the objects and
``ember_library.json``, a manifest naming them with the target they were
compiled for and the module's metadata, so a library for another machine is
refused before anything is linked.
Runtime code only: subprocess, tarfile and tempfile, no compiler.
"""

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import CompilerNotFoundError, InvalidLibraryError, LinkError

MANIFEST = "ember_library.json"
"""The manifest inside a ``.tar`` library."""

FORMAT = "ember-library"
FORMAT_VERSION = 1
_OPENMP_MARK = b"GOMP_"
_ERROR_LINE = re.compile(
    r"error|undefined reference|cannot find|not found|unrecognized|no such|"
    r"relocation|incompatible|file format|multiple definition",
    re.IGNORECASE,
)
_MAX_ERROR_LINES = 6


@dataclass(frozen=True)
class ObjectFile:
    """One module's machine code as it goes into a library.

    Attributes:
        name: the file name in a ``.tar`` library and on the link line.
        code: the relocatable object file.
        triple: the target triple the code was compiled for.
        features: the LLVM features the code may use ("avx512f", ...).
        metadata: the module's ``__ember_metadata`` document ({} if none).
        symbols: the external functions the object defines.
    """

    name: str
    code: bytes
    triple: str
    features: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    symbols: tuple[str, ...] = ()


def uses_openmp(code: bytes) -> bool:
    """Whether an object file refers to libgomp (``GOMP_parallel``)."""
    return _OPENMP_MARK in code


def compiler(cc: "str | Sequence[str] | None" = None) -> list[str]:
    """The command line that starts the C compiler.

    Args:
        cc: a compiler ("gcc", "aarch64-linux-gnu-gcc", a path, or a command
            with options such as "clang --target=aarch64-linux-gnu"); by
            default ``$CC``, else ``cc``.

    Returns:
        The command as a list, its first word resolved on ``PATH``.

    Raises:
        CompilerNotFoundError: there is no such program.
    """
    if cc is None:
        cc = os.environ.get("CC", "").strip() or "cc"
        origin = "$CC" if os.environ.get("CC", "").strip() else "the default"
    else:
        origin = "cc="
    if isinstance(cc, str):
        words = [cc] if shutil.which(cc) else shlex.split(cc)
    else:
        words = [os.fspath(w) for w in cc]
    program = shutil.which(words[0]) if words else None
    if program is None:
        raise CompilerNotFoundError(
            f"C compiler {cc if isinstance(cc, str) else ' '.join(words)!r} "
            f"({origin}) not found; install one, set $CC or pass cc=<compiler>"
        )
    return [program, *words[1:]]


def link_shared(
    output: str,
    objects: Sequence[str],
    cc: "str | Sequence[str] | None" = None,
    options: Sequence[str] = (),
    openmp: bool = False,
) -> None:
    """Link ``objects`` into the shared library ``output``.

    Args:
        output: the library to write.
        objects: object files.
        cc: the C compiler (see ``compiler``).
        options: more arguments for the link line (``-L...``, ``-l...``).
        openmp: also link libgomp. libm is always linked, so the library
            names it (DT_NEEDED) for hosts that do not.

    Raises:
        CompilerNotFoundError: the compiler does not exist.
        LinkError: the link failed; the message shows the command and the
            first lines of the compiler's output that say why.
    """
    command = [
        *compiler(cc),
        "-shared",
        "-fPIC",
        "-o",
        output,
        *objects,
        *(["-lgomp"] if openmp else []),
        "-lm",
        *options,
    ]
    _run_linker(command, output)


def link_relocatable(
    output: str, objects: Sequence[str], cc: "str | Sequence[str] | None" = None
) -> None:
    """Link ``objects`` into the one relocatable object ``output`` (``cc -r``),
    which ``load_module`` or a C toolchain links later.

    Raises:
        CompilerNotFoundError: the compiler does not exist.
        LinkError: the link failed.
    """
    _run_linker([*compiler(cc), "-r", "-nostdlib", "-o", output, *objects], output)


def _run_linker(command: list[str], output: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except OSError as e:
        raise LinkError(f"cannot run {shlex.join(command)}: {e}") from None
    except subprocess.TimeoutExpired:
        raise LinkError(f"{shlex.join(command)} timed out after 300 s") from None
    if done.returncode != 0:
        raise LinkError(
            f"linking {os.path.basename(output)} failed (exit status "
            f"{done.returncode}): {shlex.join(command)}\n"
            + _error_lines(done.stderr + done.stdout)
        )


def _error_lines(text: str) -> str:
    """The first few lines of a compiler's output that say what went wrong."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    relevant = [line for line in lines if _ERROR_LINE.search(line)] or lines
    shown = relevant[:_MAX_ERROR_LINES]
    more = len(relevant) - len(shown)
    return "\n".join(
        ["  " + line for line in shown] + ([f"  ({more} more lines)"] if more else [])
    )


def write_tar(
    path: str, objects: Sequence[ObjectFile], metadata_object: bytes, manifest: dict
) -> None:
    """Write a ``.tar`` library: the objects, the metadata object and the
    manifest (``manifest`` plus the format and the object names)."""
    names = [o.name for o in objects] + ["__ember_metadata.o"]
    document = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        **manifest,
        "objects": names,
        "openmp": any(uses_openmp(o.code) for o in objects),
    }
    files = [*(o.code for o in objects), metadata_object]
    with tarfile.open(path, "w") as tar:
        for name, data in [
            *zip(names, files, strict=True),
            (MANIFEST, _json_bytes(document)),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))


def _json_bytes(document: dict) -> bytes:
    return json.dumps(document, indent=1).encode()


def read_manifest(path: str) -> dict:
    """The manifest of the ``.tar`` library at ``path``.

    Raises:
        InvalidLibraryError: not a tar file, no manifest, or a manifest that
            is not an ember library's.
    """
    with _open_tar(path) as tar:
        return _manifest(path, tar)


def extract_objects(path: str, directory: str) -> tuple[dict, list[str]]:
    """Write the objects of the ``.tar`` library at ``path`` into ``directory``.

    Only the objects the manifest names are read, each as a plain file of
    that name: nothing in the archive can write outside ``directory``.

    Returns:
        The manifest and the paths of the written objects.

    Raises:
        InvalidLibraryError: a corrupt archive or manifest, or a missing object.
    """
    with _open_tar(path) as tar:
        manifest = _manifest(path, tar)
        written = []
        for name in manifest["objects"]:
            data = _member(path, tar, name)
            target = os.path.join(directory, name)
            with open(target, "wb") as f:
                f.write(data)
            written.append(target)
    return manifest, written


def _open_tar(path: str) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:")
    except (tarfile.TarError, EOFError) as e:
        raise InvalidLibraryError(f"{path} is not a tar archive: {e}") from None


def _member(path: str, tar: tarfile.TarFile, name: str) -> bytes:
    try:
        member = tar.getmember(name)
        f = tar.extractfile(member) if member.isfile() else None
        data = f.read() if f is not None else None
    except KeyError:
        member, data = None, None
    except (tarfile.TarError, OSError, EOFError) as e:
        raise InvalidLibraryError(f"{path}: cannot read {name}: {e}") from None
    if member is None or data is None:
        raise InvalidLibraryError(f"{path}: the archive has no file {name}")
    if len(data) != member.size:
        raise InvalidLibraryError(
            f"{path} is truncated: {name} has {len(data)} of {member.size} bytes"
        )
    return data


def _manifest(path: str, tar: tarfile.TarFile) -> dict:
    try:
        names = tar.getnames()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise InvalidLibraryError(f"{path} is a corrupt tar archive: {e}") from None
    if MANIFEST not in names:
        raise InvalidLibraryError(
            f"{path} is not an ember library: the archive has no {MANIFEST}"
        )
    try:
        document = json.loads(_member(path, tar, MANIFEST))
    except (ValueError, RecursionError) as e:  # not UTF-8 too, or nested too deeply
        raise InvalidLibraryError(f"{path}: invalid {MANIFEST}: {e}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidLibraryError(
            f'{path}: invalid {MANIFEST}: expected "format": "{FORMAT}"'
        )
    if document.get("version") != FORMAT_VERSION:
        raise InvalidLibraryError(
            f"{path}: {MANIFEST} has version {document.get('version')!r}, this "
            f"runtime reads version {FORMAT_VERSION}"
        )
    objects = document.get("objects")
    if not (
        isinstance(objects, list)
        and objects
        and all(
            isinstance(n, str) and n.endswith(".o") and os.path.basename(n) == n
            for n in objects
        )
    ):
        raise InvalidLibraryError(
            f'{path}: invalid {MANIFEST}: "objects" must list plain .o file names, '
            f"got {objects!r}"
        )
    return document

"""`ember build-runtime`: compile ember's C runtime and its RPC server for a
device, with the system's or a cross C compiler.

    ember build-runtime -o out/host                                # cc
    ember build-runtime --target aarch64-linux-gnu -o out/aarch64  # aarch64-linux-gnu-gcc
    ember build-runtime --target "llvm -mtriple=riscv64-linux-gnu" -o out/rv
    ember build-runtime --cc "clang --target=aarch64-linux-gnu" -o out/a64

writes OUT/libember_runtime.a (runtime/include/ember_crt.h), OUT/include/
(ember_runtime.h, ember_crt.h) and OUT/ember-rpc-server, which serves ember's
RPC protocol with the same options and first line as the Python server
(`ember-rpc-server --port 0` prints "ember-rpc-server: listening on HOST:PORT"),
and prints the code size of each. The sources are runtime/c/ (C99 + POSIX).
"""

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
from importlib.resources import files
from pathlib import Path

from ember.tools.common import UsageError, add_common_arguments, tool_main

LIBRARY_SOURCES = ("json.c", "module.c", "ndarray.c", "params.c", "dims.c", "model.c")
SERVER_SOURCES = ("rpc_server.c", "rpc_session.c", "rpc_files.c", "sha256.c")
CFLAGS = ("-std=c99", "-Os", "-fPIC", "-Wall", "-Wextra", "-pedantic")


def _sources() -> tuple[Path, Path]:
    """The C runtime's sources and headers (runtime/c, runtime/include)."""
    root = Path(str(files("ember.runtime")))
    c, include = root / "c", root / "include"
    if not (c / "model.c").is_file():
        raise FileNotFoundError(
            f"the C runtime's sources are not installed with this ember ({c}): "
            "build from a checkout, or install ember-runtime (pip install ./runtime)"
        )
    return c, include


def _triple(target: str) -> str:
    """A target triple from a triple or a target string's -mtriple."""
    for part in target.split():
        if part.startswith("-mtriple="):
            target = part.split("=", 1)[1]
            break
    else:
        if " " in target or target == "llvm":
            raise UsageError(f"--target {target!r}: give a triple or -mtriple=")
    return target.replace("-unknown-", "-").replace("-pc-", "-")


def _compiler(opts: argparse.Namespace) -> list[str]:
    if opts.cc:
        return shlex.split(opts.cc)
    if not opts.target:
        return ["cc"]
    triple = _triple(opts.target)
    cc = f"{triple}-gcc"
    if shutil.which(cc) is None:
        raise FileNotFoundError(
            f"no C compiler for {triple}: {cc} is not on PATH (Debian: apt-get "
            f"install gcc-{triple}), or pass --cc"
        )
    return [cc]


def _tool(cc: list[str], name: str) -> str:
    """binutils' `name` beside a cross gcc (aarch64-linux-gnu-ar), else `name`."""
    if cc[0].endswith("gcc"):
        prefixed = cc[0][: -len("gcc")] + name
        if shutil.which(prefixed):
            return prefixed
    return name


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise OSError(f"{shlex.join(command)} failed:\n{tail}")
    return done.stdout


def _code_bytes(size_tool: str, paths: list[Path]) -> int | None:
    """text + data of `paths` as `size -t` adds them up (None without size)."""
    if shutil.which(size_tool) is None:
        return None
    totals = _run([size_tool, "-t", *map(str, paths)]).strip().splitlines()[-1]
    text, data = totals.split()[:2]
    return int(text) + int(data)


def build(opts: argparse.Namespace) -> None:
    """Compile the runtime and the server into `opts.output`, and say their sizes."""
    c, include = _sources()
    cc = _compiler(opts)
    out = Path(opts.output)
    (out / "include").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ember-build-runtime-") as tmp:
        objects = {}
        for source in LIBRARY_SOURCES + SERVER_SOURCES:
            obj = Path(tmp) / source.replace(".c", ".o")
            _run([*cc, *CFLAGS, f"-I{include}", "-c", str(c / source), "-o", str(obj)])
            objects[source] = obj
        library = out / "libember_runtime.a"
        library.unlink(missing_ok=True)
        _run(
            [_tool(cc, "ar"), "rcs", str(library)]
            + [str(objects[s]) for s in LIBRARY_SOURCES]
        )
        server = out / "ember-rpc-server"
        _run(
            [
                *cc,
                "-o",
                str(server),
                *(str(objects[s]) for s in SERVER_SOURCES),
                str(library),
                "-ldl",
            ]
        )
        for header in ("ember_runtime.h", "ember_crt.h"):
            shutil.copy(include / header, out / "include" / header)
        size = _tool(cc, "size")
        runtime = _code_bytes(size, [library])
        both = _code_bytes(size, [library, *(objects[s] for s in SERVER_SOURCES)])
    print(f"{library}: the C runtime, {runtime} bytes of code")
    print(f"{server}: the RPC server, {both} bytes of code with the runtime")
    print(f"{out / 'include'}: ember_runtime.h, ember_crt.h")


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Compile ember's C runtime (libember_runtime.a) and its RPC "
        "server (ember-rpc-server) for a device.",
    )
    parser.add_argument("-o", "--output", required=True, help="the output directory")
    parser.add_argument(
        "--target",
        help="the device's triple (aarch64-linux-gnu) or target string with "
        "-mtriple=; its <triple>-gcc compiles (default: this machine's cc)",
    )
    parser.add_argument("--cc", help="the C compiler command, overriding --target's")
    add_common_arguments(parser, prog)
    return parser


def main(argv: list[str] | None = None, prog: str = "ember build-runtime") -> int:
    """Run `ember build-runtime`; returns the exit status."""
    return tool_main(prog, _parser(prog).parse_args(argv), build)


if __name__ == "__main__":
    sys.exit(main())

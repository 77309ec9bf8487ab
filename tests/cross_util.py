"""Running cross-built code: qemu-user for aarch64 and riscv64 Linux, wasmtime
for wasm32.

Linux targets: the library is linked by the target's gcc (`export_library(...,
cc="aarch64-linux-gnu-gcc")`), a C host from examples/deploy_c is compiled by
the same gcc, and qemu-user runs the host with the target's libc and libgomp
(`-L /usr/<arch>-linux-gnu`); tensors go in and out through files. wasm32: the
objects are linked by wasm-ld into a module whose undefined functions become
imports (`--allow-undefined`); wasmtime instantiates it with the C library
functions kernels call (`aligned_alloc`/`free` on a heap this module keeps in
the linear memory, libm's `expf` and friends through numpy) and calls the
packed functions on DLTensors written into its memory.

The tools come from Debian (`make system-deps` installs them) and PyPI
(wasmtime, in the dev extra); a missing one is a `pytest.skip` naming the
program and the package that brings it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPLOY_C = ROOT / "examples" / "deploy_c"
INCLUDE = ROOT / "runtime" / "include"
C_FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror"]
# Debian's names for the libc cross packages (crti.o, libc.so, libm.so).
LIBC_DEV = {"aarch64": "libc6-dev-arm64-cross", "riscv64": "libc6-dev-riscv64-cross"}


def _install_hint(package: str) -> str:
    return f"apt-get install {package} (make system-deps does it as root)"


@dataclass(frozen=True)
class Machine:
    """Where a C host runs: this machine (`arch` None) or a Linux machine of
    another architecture emulated by qemu-user with the CPU model `qemu_cpu`."""

    arch: str | None = None
    qemu_cpu: str = ""

    @property
    def gcc(self) -> str:
        return f"{self.arch}-linux-gnu-gcc" if self.arch else "cc"

    @property
    def sysroot(self) -> str:
        return f"/usr/{self.arch}-linux-gnu"

    def require(self) -> None:
        """Skip the test unless the compiler, the C library and qemu are here."""
        if self.arch is None:
            if shutil.which("cc") is None:
                pytest.skip("cc not installed: a C compiler is needed")
            return
        if shutil.which(self.gcc) is None:
            pytest.skip(
                f"{self.gcc} not installed: {_install_hint(f'gcc-{self.arch}-linux-gnu')}"
            )
        if not os.path.exists(f"{self.sysroot}/lib/crti.o"):
            pytest.skip(
                f"the {self.arch} C library is not installed ({self.sysroot}/lib/"
                f"crti.o): {_install_hint(LIBC_DEV[self.arch])}"
            )
        if shutil.which(f"qemu-{self.arch}") is None:
            pytest.skip(f"qemu-{self.arch} not installed: {_install_hint('qemu-user')}")

    def compile_host(self, source: str, output: Path) -> Path:
        """examples/deploy_c/<source>, compiled warning-free by this machine's gcc."""
        self.require()
        command = [self.gcc, *C_FLAGS, f"-I{INCLUDE}", str(DEPLOY_C / source)]
        done = subprocess.run(
            [*command, "-o", str(output), "-ldl"], capture_output=True, text=True
        )
        assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr}"
        return output

    def run(
        self, argv: Sequence[str | Path], threads: int = 3
    ) -> subprocess.CompletedProcess:
        """Run a program of this machine, in an environment with nothing but
        EMBER_NUM_THREADS (the libraries' parallel loops use that many threads)."""
        prefix = []
        if self.arch is not None:
            qemu = shutil.which(f"qemu-{self.arch}")
            assert qemu is not None
            prefix = [qemu, "-L", self.sysroot, "-cpu", self.qemu_cpu]
        return subprocess.run(
            [*prefix, *map(str, argv)],
            capture_output=True,
            text=True,
            env={"EMBER_NUM_THREADS": str(threads)},
            timeout=120,
        )


def tensor_spec(kind: str, array: np.ndarray, path: Path) -> str:
    """run_kernel's `in:float32:4x8:a.bin` for one tensor."""
    return f"{kind}:{array.dtype.name}:{'x'.join(map(str, array.shape))}:{path}"


def run_kernel(
    machine: Machine,
    host: Path,
    library: Path,
    function: str,
    inputs: Sequence[np.ndarray],
    outputs: Sequence[np.ndarray],
    workdir: Path,
) -> tuple[subprocess.CompletedProcess, list[np.ndarray]]:
    """Call `function` of `library` in examples/deploy_c/run_kernel.c on
    `machine` with `inputs`, then `outputs` (arrays giving shape and dtype).

    Returns:
        The finished process and the outputs read back from their files
        (empty unless it succeeded).
    """
    specs = []
    for i, array in enumerate(inputs):
        path = workdir / f"{function}_in{i}.bin"
        np.ascontiguousarray(array).tofile(path)
        specs.append(tensor_spec("in", array, path))
    paths = [workdir / f"{function}_out{i}.bin" for i in range(len(outputs))]
    specs += [tensor_spec("out", a, p) for a, p in zip(outputs, paths, strict=True)]
    done = machine.run([host, library, function, *specs])
    if done.returncode != 0:
        return done, []
    results = [
        np.fromfile(p, a.dtype).reshape(a.shape)
        for a, p in zip(outputs, paths, strict=True)
    ]
    return done, results


# -- wasm32 ------------------------------------------------------------------------


def wasm_ld() -> str:
    """The wasm-ld program, or a skip saying how to get it."""
    found = shutil.which("wasm-ld")
    if found is None:
        pytest.skip(f"wasm-ld not installed: {_install_hint('lld')}")
    return found


def link_wasm(objects: Sequence[Path], output: Path) -> Path:
    """Link wasm32 objects into a module exporting every function, its memory
    and `__heap_base` (`ember.runtime.wasm.link_wasm`, with wasm-ld or a skip)."""
    from ember.runtime.wasm import link_wasm as link

    return Path(link([str(o) for o in objects], str(output), wasm_ld()))


class WasmModule:
    """A linked wasm32 module in wasmtime (the runtime's `WasmInstance`) whose
    packed functions take numpy arrays.

        m = WasmModule(Path("k.wasm").read_bytes())
        rc, message = m.call("vecadd", [a, b, c])   # c is written in place
    """

    def __init__(self, code: bytes):
        pytest.importorskip(
            "wasmtime", reason="wasmtime not installed: pip install -e '.[dev]'"
        )
        from ember.runtime.wasm import WasmInstance

        self.instance = WasmInstance(code)
        self.heap = self.instance.heap

    def call(
        self, name: str, arrays: Sequence[np.ndarray], count: int | None = None
    ) -> tuple[int, str | None]:
        """Call packed function `name` with DLTensors over copies of `arrays`
        (`count` of them: by default all), then copy every array back.

        Returns:
            The return code and, when it is not 0, the function's message.
        """
        w = self.instance
        handles, blocks = [], []
        for array in arrays:
            before = set(w.heap.live)
            handles.append(w.tensor(array))
            blocks += set(w.heap.live) - before  # its data, shape and header
        rc, ret, _ = w.call_packed(name, [t for t, _ in handles], count)
        message = w.c_string(ret) if rc != 0 else None
        for array, (_, data) in zip(arrays, handles, strict=True):
            array[...] = np.frombuffer(w.read(data, array.nbytes), array.dtype).reshape(
                array.shape
            )
        for block in blocks:
            w.heap.free(block)
        return rc, message

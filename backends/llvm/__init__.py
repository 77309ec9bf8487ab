"""ember's LLVM backend: llvm dialect → llvmlite IR → LLVM -O3 → JIT, object, asm.

mod = build_module(llvm_dialect_module, target="llvm")
mod["f"](a, b)                      # JIT-compiled on the host
mod.save("f.o"); mod.get_source("asm")
"""

from xdsl.dialects.builtin import ModuleOp

from ember.backends import Backend
from ember.backends.llvm.module import LLVMModule
from ember.backends.llvm.target import Target
from ember.backends.llvm.translate import TranslationError, translate


def build_module(
    module: ModuleOp,
    target: "str | dict | Target" = "llvm",
    entry_name: str | None = None,
) -> LLVMModule:
    """Compile an llvm-dialect module for `target`.

    Args:
        module: a `builtin.module` of `llvm.func` and `llvm.mlir.global` ops.
        target: a target string ("llvm -mcpu=..."), dict or `Target`.
        entry_name: the function `mod(...)` calls; by default the only one.

    Returns:
        The compiled module: JIT-compiled on the host, object code otherwise.

    Example:
        >>> mod = build_module(module, "llvm -mtriple=aarch64-linux-gnu")
        >>> mod.save("kernels.o")
    """
    return LLVMModule(module, target, entry_name)


class LLVMBackend(Backend):
    """The `llvm` kind: machine code for a CPU through llvmlite (x86, aarch64,
    riscv64, wasm32), JIT-compiled on the host."""

    kind = "llvm"
    summary = "machine code for a CPU by LLVM"

    def build(self, module, target, entry):
        from ember.passes import run
        from ember.passes.pipelines import LOOP_TO_LLVM

        run(module, ",".join(LOOP_TO_LLVM))
        return build_module(module, target=target, entry_name=entry)


BACKEND = LLVMBackend()

__all__ = [
    "BACKEND",
    "LLVMModule",
    "Target",
    "TranslationError",
    "build_module",
    "translate",
]

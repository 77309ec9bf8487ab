"""ember's LLVM backend: llvm dialect → llvmlite IR → LLVM -O3 → JIT, object, asm.

mod = build_module(llvm_dialect_module, target="llvm")
mod["f"](a, b)                      # JIT-compiled on the host
mod.save("f.o"); mod.get_source("asm")
"""

from xdsl.dialects.builtin import ModuleOp

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


__all__ = ["LLVMModule", "Target", "TranslationError", "build_module", "translate"]

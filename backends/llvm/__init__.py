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
    models = True

    def build(self, module, target, entry):
        from ember.passes import run
        from ember.passes.pipelines import LOOP_TO_LLVM

        run(module, ",".join(LOOP_TO_LLVM))
        return build_module(module, target=target, entry_name=entry)

    def model_lowering(self, plan):
        from ember.passes.pipelines import LOOP_TO_LLVM

        # the entry: its packed function and metadata, to the llvm dialect
        return (*super().model_lowering(plan), ("llvm", LOOP_TO_LLVM))

    def kernel_passes(self):
        from ember.passes.pipelines import LOOP_TO_CF, TO_LLVM

        # no packed entry: the model's entry calls a kernel's bare-pointer symbol
        return (*LOOP_TO_CF, *TO_LLVM)

    def compile_kernel(self, module, symbol, target):
        """The kernel's relocatable object: one `noalias` pointer per buffer,
        `@__ember_num_threads` declared (the model's entry defines it)."""
        from xdsl.dialects import func, llvm
        from xdsl.dialects.builtin import (
            ArrayAttr,
            DictionaryAttr,
            MemRefType,
            UnitAttr,
            i32,
        )

        from ember.backends.llvm.codegen import emit_object, optimize, parse
        from ember.passes import run
        from ember.runtime.parallel import NUM_THREADS_SYMBOL

        module.body.block.add_op(llvm.GlobalOp(i32, NUM_THREADS_SYMBOL, "external"))
        for op in module.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == symbol:
                old = (
                    op.arg_attrs.data
                    if op.arg_attrs
                    else [DictionaryAttr({})] * len(op.args)
                )
                op.arg_attrs = ArrayAttr(
                    [
                        DictionaryAttr({**d.data, "llvm.noalias": UnitAttr()})
                        if isinstance(t, MemRefType)
                        else d  # a size symbol
                        for d, t in zip(old, op.function_type.inputs.data, strict=True)
                    ]
                )
        run(module, ",".join(self.kernel_passes()))
        module.verify()  # as ember-opt verifies after every pass
        tm = target.create_target_machine()
        ir = translate(module, triple=target.triple, data_layout=str(tm.target_data))
        compiled = parse(str(ir))
        optimize(compiled, tm, target.opt_level)
        return emit_object(compiled, tm)

    def kernel_problem(self, code, symbol):
        from ember.backends.kernels import object_problem

        return object_problem(code, symbol)

    def link_model(self, module, target, info, params, kernels, entry_loop):
        from ember.backends.llvm.model import link

        return link(module, target, info, params, kernels, entry_loop)


BACKEND = LLVMBackend()

__all__ = [
    "BACKEND",
    "LLVMModule",
    "Target",
    "TranslationError",
    "build_module",
    "translate",
]

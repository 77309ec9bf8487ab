"""The named pipelines. Reading `EMBER_CPU` tells the whole compile story for a CPU.

ember-opt kernel.mlir -p ember-cpu -t llvm
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

TE_TO_LOOP: tuple[str, ...] = (
    # te: the schedule applied, tensor expressions become loop nests over buffers
    "convert-te-to-loop",
    # loop: what the schedule made trivial goes (loops that run once, guards
    # that always hold), then duplicated index arithmetic
    "loop-simplify",
    "cse",
)
"""te IR to the scheduled loop nest: what `get_source("loop")` shows."""

EMBER_CPU: tuple[str, ...] = (
    *TE_TO_LOOP,
    # parallel loops become functions libgomp runs on every core
    "loop-outline-parallel",
    # vectorized loops become SIMD code on vector types
    "loop-vectorize",
    # loop: loop nests become structured control flow
    "convert-loop-to-scf",
    "canonicalize",
    "cse",
    # scf → cf: loops become branches between blocks
    "convert-scf-to-cf",
    # calls of registered host functions go through the hook a host installs;
    # a failed call returns from the function, out of every loop
    "convert-call-packed-to-llvm",
    # every public function gets a packed-ABI entry that checks its arguments
    "func-packed-abi",
    # upstream dialects → llvm
    "convert-math-to-llvm",
    "convert-vector-to-llvm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-memref-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",
    "reconcile-unrealized-casts",
    # only llvm ops are left, or the first other op is named
    "llvm-verify-lowered",
)


@dataclass(frozen=True)
class EmberCpuPipeline(ModulePass):
    """te (or loop) IR to the llvm dialect for a CPU: the passes of `EMBER_CPU`."""

    name = "ember-cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.passes import get_all_passes

        PassPipeline.parse_spec(get_all_passes(), ",".join(EMBER_CPU)).apply(ctx, op)

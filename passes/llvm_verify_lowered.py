"""llvm-verify-lowered: fail unless a module is wholly in the llvm dialect."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp, UnregisteredOp
from xdsl.passes import ModulePass

from ember.passes.to_llvm import cannot_lower


@dataclass(frozen=True)
class LLVMVerifyLoweredPass(ModulePass):
    """Check that every op but `builtin.module` is an llvm op; the last pass of
    `ember-cpu`, so that a pipeline whose conversions skipped an op fails here, with
    the op's name, instead of in the backend or not at all.

        llvm.func @f(%x: f32) -> vector<4xf32> {
          %v = vector.broadcast %x : f32 to vector<4xf32>
          llvm.return %v : vector<4xf32>
        }

    fails with `llvm-verify-lowered: cannot lower 'vector.broadcast' in @f: no pass
    converted it to the llvm dialect`. A `builtin.unrealized_conversion_cast` left
    after `reconcile-unrealized-casts` fails too: a value between a converted and an
    unconverted op.
    """

    name = "llvm-verify-lowered"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, ModuleOp):
                continue
            if not isinstance(inner, UnregisteredOp) and inner.dialect_name() == "llvm":
                continue
            if isinstance(inner, UnrealizedConversionCastOp):
                types = (
                    f"{', '.join(str(v.type) for v in inner.inputs)} to "
                    f"{', '.join(str(v.type) for v in inner.outputs)}"
                )
                why = f"a conversion left a cast from {types} that nothing removed"
            else:
                why = "no pass converted it to the llvm dialect"
            raise cannot_lower(self.name, inner, why)

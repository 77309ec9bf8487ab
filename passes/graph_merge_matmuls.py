"""`graph-merge-matmuls`: matmuls of one input by several weights become one.

Attention projects its input three times (query, key and value), each an ONNX
MatMul by an initializer: three GEMMs of N columns, three kernels and three
waits for the slowest thread. Where several `graph.matmul`s in a block read the
same left operand and 2-D weights that are params or literals with the same K
and dtype, they become one matmul by the weights joined along N (a
`graph.concat` of params, which `graph-fold-constants` turns into one param)
and a `graph.slice` of its columns for each. The GEMM gets N = 3 x 256 (three
times the column panels to share out); each slice joins the injective chain
that reads it (the bias add and the heads' reshape and transpose), which was
a kernel already. Static shapes only, and only weights whose values are
known: literals, or params bound (`compile_model`, the Python API); from text
with params unbound the matmuls stay, as the joined weight would be a
concatenation every run and no packed param (BERT's encoder: -5%, its bfloat16
-6%, Zen 5).

    %q = graph.matmul %x, %wq : (tensor<128x256xf32>, tensor<256x64xf32>) -> tensor<128x64xf32>
    %k = graph.matmul %x, %wk : (tensor<128x256xf32>, tensor<256x64xf32>) -> tensor<128x64xf32>
becomes
    %w = graph.concat %wq, %wk {axis = 1} : (...) -> tensor<256x128xf32>
    %y = graph.matmul %x, %w : (tensor<128x256xf32>, tensor<256x128xf32>) -> tensor<128x128xf32>
    %q = graph.slice %y {starts = [0, 0], ends = [128, 64], steps = [1, 1]} : ...
    %k = graph.slice %y {starts = [0, 64], ends = [128, 128], steps = [1, 1]} : ...
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FusedLoc, ModuleOp, NoneAttr, TensorType
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from ember.dialects import graph
from ember.dialects.graph_shapes import dims_of
from ember.passes.bound_params import bound_params
from ember.passes.graph_mixed_precision import PRECISION_ATTR, marked_precision


def _weight_of(op: graph.MatmulOp) -> int | None:
    """K of `op`'s right operand where it is a known 2-D weight (a
    literal, or a param whose value is bound: `graph-fold-constants` then
    joins them into one) and both operands' shapes are static, else None."""
    lhs, rhs = op.operands[0].type, op.operands[1].type
    owner = op.operands[1].owner
    bound = bound_params()
    if not (
        isinstance(owner, graph.ConstantOp)
        or isinstance(owner, graph.ParamOp)
        and bound is not None
        and owner.param_name.data in bound.values
    ):
        return None
    if not isinstance(lhs, TensorType) or not isinstance(rhs, TensorType):
        return None
    shapes = (lhs.get_shape(), rhs.get_shape())
    if len(shapes[1]) != 2 or len(shapes[0]) < 2 or min(*shapes[0], *shapes[1]) < 0:
        return None
    if lhs.element_type != rhs.element_type:
        return None
    return shapes[1][0]


def _merge(block: Block, ops: list[graph.MatmulOp]) -> None:
    """Replace `ops` (one left operand, weights of one K) by one matmul and
    slices, placed before the first of them."""
    first = ops[0]
    weights = [op.operands[1] for op in ops]
    joined = graph.ConcatOp.build_inferred(*weights, axis=1)
    merged = graph.MatmulOp.build_inferred(first.operands[0], joined.results[0])
    joined.location = merged.location = FusedLoc(
        tuple(op.location for op in ops), NoneAttr()
    )
    if PRECISION_ATTR in first.attributes:
        merged.attributes[PRECISION_ATTR] = first.attributes[PRECISION_ATTR]
    block.insert_ops_before([joined, merged], first)
    shape = list(dims_of(first.results[0].type))
    at = 0
    for op in ops:
        n = dims_of(op.results[0].type)[-1]
        piece = graph.SliceOp.build_inferred(
            merged.results[0],
            starts=[0] * (len(shape) - 1) + [at],
            ends=shape[:-1] + [at + n],
            steps=[1] * len(shape),
        )
        piece.location = op.location
        block.insert_op_before(piece, first)
        op.results[0].replace_all_uses_with(piece.results[0])
        at += n
    for op in ops:
        block.erase_op(op)


def merge_matmuls(module: ModuleOp) -> int:
    """Merge the matmuls of `module` that share a left operand and a weight's
    K (see the module docstring); returns how many merged matmuls it made."""
    made = 0
    for block in [b for op in module.walk() for r in op.regions for b in r.blocks]:
        groups: dict[tuple, list[graph.MatmulOp]] = {}
        for op in block.ops:
            if isinstance(op, graph.MatmulOp) and (k := _weight_of(op)) is not None:
                # a precision marked by hand (`ember.precision`) stays the op's
                key = (op.operands[0], k, marked_precision(op))
                groups.setdefault(key, []).append(op)
        for ops in groups.values():
            if len(ops) < 2:
                continue
            for op in ops[1:]:  # weights the importer placed later: params and
                weight = op.operands[1].owner  # literals read nothing, so move
                assert isinstance(weight, Operation)
                if weight.parent is block and ops[0].is_before_in_block(weight):
                    weight.detach()
                    block.insert_op_before(weight, ops[0])
            _merge(block, ops)
            made += 1
    return made


@dataclass(frozen=True)
class GraphMergeMatmuls(ModulePass):
    """Matmuls of one input by several weights into one matmul and slices.

    ember-opt model.mlir -p graph-merge-matmuls,graph-fold-constants
    """

    name = "graph-merge-matmuls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_matmuls(op)

"""Strategies by registration: an op class finds its kernel through what
`ember.strategy` registers for it, a new op needs only its class, its mapping
and one registration, and the target reaches the schedule."""

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.irdl import irdl_op_definition

from ember import te
from ember.backends.kernel_cache import CompileCache
from ember.backends.llvm import Target
from ember.compiler.model import ModelCompileError, compile_model
from ember.dialects import graph
from ember.dialects.graph_tensor import _BinaryOp, _UnaryOp
from ember.runtime import GraphModule, cpu
from ember.strategy import (
    StrategyError,
    is_elementwise,
    lower_group,
    scalar_strategy,
)


def _model(op_class: type[graph.GraphOp], shape=(2, 37)) -> ModuleOp:
    """@main(x) = relu(op(x)): the new op, then one that fuses after it."""
    t = TensorType(f32, shape)
    block = Block(arg_types=[t])
    y = op_class.build_inferred(block.args[0])
    r = graph.ReluOp.build_inferred(y)
    block.add_ops([y, r, func.ReturnOp(r)])
    main = func.FuncOp("main", FunctionType.from_lists([t], [t]), Region(block))
    return ModuleOp([main])


def _run(mod, x: np.ndarray) -> np.ndarray:
    gm = GraphModule(mod["default"](cpu()))
    gm.set_input(0, x)
    gm.run()
    return gm.get_output(0).numpy()


@irdl_op_definition
class SoftsignOp(_UnaryOp):
    """x / (1 + |x|): an op this test adds, as a user would."""

    name = "graph.softsign"
    NUMPY = staticmethod(lambda x: x / (1 + np.abs(x)))


def test_a_new_unary_op_is_its_class_and_one_registration(tmp_path):
    """The op class (with its numpy semantics) and a scalar form registered
    for it are all a new elementwise op needs to compile and fuse."""
    module = _model(SoftsignOp)
    with pytest.raises(ModelCompileError, match="no strategy for 'graph.softsign'"):
        compile_model(module, cache=CompileCache(tmp_path))

    @scalar_strategy(SoftsignOp)
    def _softsign(op, args):
        (x,) = args
        return x / (1.0 + te.abs(x))

    try:
        mod = compile_model(module, cache=CompileCache(tmp_path))
        assert mod.compile_stats.kernels == 1  # softsign and relu fused  # type: ignore[attr-defined]
        x = np.random.default_rng(0).standard_normal((2, 37)).astype("float32")
        want = np.maximum(SoftsignOp.NUMPY(x), 0)
        np.testing.assert_allclose(_run(mod, x), want, rtol=1e-6, atol=1e-6)
    finally:
        from ember.strategy import registry

        del registry.SCALARS[SoftsignOp]


def test_elementwise_ops_are_those_with_a_scalar_form():
    ops = [o for o in graph.COMPUTE_OPS if issubclass(o, _UnaryOp | _BinaryOp)]
    assert len(ops) >= 17
    for op in ops:
        logical = op.name.startswith("graph.logical_")
        bits = op.name.startswith(("graph.bitwise_", "graph.left_", "graph.right_"))
        element = IntegerType(1) if logical else IntegerType(32) if bits else f32
        x = TensorType(element, (4,))
        block = Block(arg_types=[x, x] if issubclass(op, _BinaryOp) else [x])
        assert is_elementwise(op.build_inferred(*block.args)), op.name
    block = Block(arg_types=[TensorType(f32, (2, 4))])
    assert not is_elementwise(graph.SoftmaxOp.build_inferred(block.args[0], axis=1))


@pytest.mark.parametrize(
    "cpu_name, lanes", [("haswell", 8), ("x86-64", 4), ("skylake-avx512", 16)]
)
def test_the_strategy_schedules_for_the_target_it_is_given(cpu_name, lanes):
    """A dense layer's packed weight block is the target's float32 lanes."""
    target = Target(f"llvm -mcpu={cpu_name}")
    assert target.vector_lanes("float32") == lanes
    x, w = TensorType(f32, (4, 64)), TensorType(f32, (32, 64))
    block = Block(arg_types=[x, w])
    dense = graph.DenseOp.build_inferred(*block.args)
    spec = lower_group(dense, lambda v: None, target)
    packed = spec.kernel.placeholders[1]
    assert packed.shape[-1] % lanes == 0
    assert packed.shape[-1] <= 4 * lanes


def test_an_op_without_a_strategy_is_named():
    block = Block(arg_types=[TensorType(f32, (4,))])
    op = SoftsignOp.build_inferred(block.args[0])
    with pytest.raises(StrategyError, match="no strategy for 'graph.softsign'"):
        lower_group(op, lambda v: None)


def test_a_matmul_by_a_param_packs_it_as_a_weight():
    """A MatMul by an initializer reads its weight in panels, as dense does;
    by a computed value it reads the operand in place."""
    block = Block(arg_types=[TensorType(f32, (1, 197, 64))])
    w = graph.ParamOp("w", TensorType(f32, (64, 96)))
    mm = graph.MatmulOp.build_inferred(block.args[0], w.result)
    spec = lower_group(mm, lambda v: None, Target("llvm -mcpu=haswell"))
    assert spec.kernel.placeholders[1].name == "matmul.weight"
    assert spec.kernel.placeholders[1].shape == (96 // 16, 64, 16)
    assert list(spec.kernel.weight_transforms) == ["matmul.weight"]
    rhs = Block(arg_types=[TensorType(f32, (1, 197, 64)), TensorType(f32, (64, 96))])
    mm = graph.MatmulOp.build_inferred(*rhs.args)
    spec = lower_group(mm, lambda v: None, Target("llvm -mcpu=haswell"))
    assert spec.kernel.placeholders[1].shape == (64, 96)
    assert not spec.kernel.weight_transforms

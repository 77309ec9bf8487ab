"""Compiler limits give clear errors or work (issue 16): deep expressions,
unrolling beyond the cap, shapes whose size overflows int64, names longer
than LLVM keeps (issue 24)."""

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

import ember
from ember import te
from ember.passes import get_context, run
from ember.passes.convert_loop_to_scf import MAX_UNROLL_COPIES
from ember.runtime import EmberError
from ember.te.lowering import MAX_BRANCH_DEPTH


def test_deep_expression_compiles_and_runs():
    A = te.placeholder((16,), name="A")

    def body(i):
        x = A[i]
        for _ in range(1500):  # past Python's default recursion limit of 1000
            x = x + 1.0
        return x

    C = te.compute((16,), body, name="C")
    mod = ember.build(te.create_schedule(C.op), [A, C], name="deep")
    a = np.arange(16, dtype="float32")
    c = np.zeros(16, "float32")
    mod(a, c)
    np.testing.assert_array_equal(c, a + 1500)


def test_deep_index_expression():
    A = te.placeholder((16,), name="A")

    def body(i):
        x = i
        for _ in range(800):
            x = x + 1
        for _ in range(800):
            x = x - 1
        return A[x] * 2.0

    C = te.compute((16,), body, name="C")
    mod = ember.build(te.create_schedule(C.op), [A, C], name="deep_index")
    a = np.arange(16, dtype="float32")
    c = np.zeros(16, "float32")
    mod(a, c)
    np.testing.assert_array_equal(c, a * 2)


def _nested_selects(depth: int, select):
    A = te.placeholder((16,), name="A")

    def body(i):
        x = A[i]
        for k in range(depth):
            x = select(i > k % 7, x + A[i], A[i] * 0.5)
        return x

    return A, te.compute((16,), body, name="C")


def _nested_reference(depth: int, a):
    x = a.copy()
    for k in range(depth):
        x = np.where(np.arange(16) > k % 7, x + a, a * np.float32(0.5))
    return x


def test_deep_select_chain():
    A, C = _nested_selects(400, te.select)
    mod = ember.build(te.create_schedule(C.op), [A, C], name="selects")
    a = np.arange(16, dtype="float32") / 8
    c = np.zeros(16, "float32")
    mod(a, c)
    np.testing.assert_allclose(c, _nested_reference(400, a), rtol=1e-5)


def test_guarded_branches_nest_up_to_the_limit():
    A, C = _nested_selects(MAX_BRANCH_DEPTH, te.if_then_else)
    mod = ember.build(te.create_schedule(C.op), [A, C], name="branches")
    a = np.arange(16, dtype="float32") / 8
    c = np.zeros(16, "float32")
    mod(a, c)
    np.testing.assert_allclose(c, _nested_reference(MAX_BRANCH_DEPTH, a), rtol=1e-5)
    A, C = _nested_selects(MAX_BRANCH_DEPTH + 1, te.if_then_else)
    with pytest.raises(
        ValueError,
        match=f"compute 'C': te.if_then_else .* more than {MAX_BRANCH_DEPTH}",
    ):
        ember.build(te.create_schedule(C.op), [A, C], name="branches")


def _vecadd(n: int):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    return A, C, te.create_schedule(C.op)


def test_unroll_beyond_the_cap_names_the_loop_and_the_cap():
    A, C, s = _vecadd(30000)
    s[C].unroll(C.op.axis[0])
    with pytest.raises(PassFailedException) as info:
        ember.build(s, [A, C], name="unrolled")
    message = str(info.value)
    assert "loop 'i' of stage 'C' makes 30000 copies" in message
    assert f"cap of {MAX_UNROLL_COPIES}" in message


def test_nested_unrolls_multiply():
    A = te.placeholder((128, 64), name="A")
    C = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[C].unroll(C.op.axis[0])
    s[C].unroll(C.op.axis[1])
    with pytest.raises(PassFailedException, match=r"8192 copies"):
        ember.build(s, [A, C], name="unrolled2")


def test_unroll_pragma_stops_at_the_cap():
    A, C, s = _vecadd(30000)
    s[C].pragma(C.op.axis[0], "auto_unroll_max_step", 100000)
    mod = ember.build(s, [A, C], name="pragma")
    assert "unrolled" not in mod.get_source("loop")  # too long: stays serial
    a = np.arange(30000, dtype="float32")
    c = np.zeros_like(a)
    mod(a, c)
    np.testing.assert_array_equal(c, a + 1)


LOOP_IR = """
func.func @f(%A: memref<8192xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %c64 step %c1 unrolled {
    loop.for %j = %c0 to %c128 step %c1 unrolled {
      %x = memref.load %A[%j] : memref<8192xf32>
      memref.store %x, %A[%j] : memref<8192xf32>
    }
  }
  func.return
}
"""


def test_loop_ir_unroll_cap():
    module = Parser(get_context(), LOOP_IR).parse_module()
    with pytest.raises(PassFailedException, match=r"%j makes 8192 copies"):
        run(module, "convert-loop-to-scf")


@pytest.mark.parametrize(
    "shape, dtype",
    [((2**40, 2**40), "float32"), ((2**62,), "float32"), ((2**63,), "bool")],
)
def test_huge_shapes_are_refused_with_the_limit(shape, dtype):
    with pytest.raises(ValueError, match=r"tensor 'A' of shape .* limit is") as info:
        te.placeholder(shape, dtype=dtype, name="A")
    assert isinstance(info.value, EmberError)


def test_huge_compute_is_refused():
    A = te.placeholder((2**31,), name="A")
    with pytest.raises(ValueError, match=r"tensor 'C' of shape .* bytes"):
        te.compute((2**31, 2**31), lambda i, j: A[i] + A[j], name="C")


def test_huge_te_ir_shape_is_refused():
    ir = """
    func.func @f(%A: tensor<1099511627776x1099511627776xf32>)
        -> tensor<1099511627776x1099511627776xf32> {
      %C = te.compute "C" (%i, %j) -> tensor<1099511627776x1099511627776xf32> {
        %x = te.read %A[%i, %j] : tensor<1099511627776x1099511627776xf32>
        te.yield %x : f32
      }
      func.return %C : tensor<1099511627776x1099511627776xf32>
    }
    """
    module = Parser(get_context(), ir).parse_module()
    with pytest.raises(
        PassFailedException, match=r"@f: argument 0 .* bytes\); ember's limit is"
    ):
        run(module, "convert-te-to-loop")


def test_names_past_llvm_limit_compile_and_run():
    """LLVM cuts local names at 1024 bytes: names sharing a longer prefix
    would define one value twice (issue 24, defect 9)."""
    prefix = "x" * 3000
    A = te.placeholder((16,), name=prefix + "A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name=prefix + "B")
    C = te.compute((16,), lambda i: B[i] * 2.0, name=prefix + "C")
    mod = ember.build(te.create_schedule(C.op), [A, C], name="f" + prefix)
    a = np.arange(16, dtype="float32")
    c = np.zeros(16, "float32")
    mod(a, c)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_onnx_names_past_llvm_limit_keep_their_full_names(tmp_path):
    """Inputs, outputs, nodes and an initializer named by 2000 characters
    (some not ASCII) that differ only at their end: the library runs as
    onnxruntime does, its metadata and set_input take the full names."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from ember.runtime import GraphModule, cpu, load_module

    p = "é" * 500 + "x" * 1500
    a, b, w, h, y, z = (p + s for s in ("a", "b", "w", "h", "y", "z"))
    rng = np.random.default_rng(0)
    value = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, [8, 8])
        for n in (a, b, y, z)
    ]
    graph = helper.make_graph(
        [
            helper.make_node("Add", [a, w], [h], name=p + "1"),
            helper.make_node("Mul", [h, b], [y], name=p + "2"),
            helper.make_node("Relu", [y], [z], name=p + "3"),
        ],
        p,
        value[:2],
        value[2:],
        [numpy_helper.from_array(rng.standard_normal((8, 8), np.float32), w)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {n: rng.standard_normal((8, 8), np.float32) for n in (a, b)}
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    ember.compile_model(model).export_library(tmp_path / "m.so")
    lib = load_module(tmp_path / "m.so")
    info = lib.metadata["model"]
    assert [v["name"] for v in info["inputs"] + info["outputs"]] == [a, b, y, z]
    gm = GraphModule(lib["default"](cpu()))
    for name, x in feeds.items():
        gm.set_input(name, x)
    gm.run()
    for i, expected in enumerate(want):
        np.testing.assert_allclose(gm.get_output(i).numpy(), expected, rtol=1e-6)

"""torch.export programs with `Dim`s import symbolically (issue 25): each of
torch's size symbols is named after the first input and axis it is the size
of, sizes computed in the graph (`x.shape`, arithmetic on it) become
expressions, and a result shape torch recorded is read as an expression,
never as the example value a SymInt's `int()` gives. Kernels over symbolic
sizes are the next stage, as for ONNX (tests/test_onnx_symbolic.py)."""

import warnings

import pytest

from ember.dialects.graph_shapes import dims_of
from ember.runtime.shape_expr import Sym

torch = pytest.importorskip("torch")
from ember.frontends.torch import from_exported_program  # noqa: E402


def _export(module, args, dynamic_shapes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(module.eval(), args, dynamic_shapes=dynamic_shapes)


class _Heads(torch.nn.Module):
    """Attention heads from views that read `x.shape`."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, 2, d // 2).transpose(1, 2) for z in (q, k, v))
        a = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
        return a.transpose(1, 2).reshape(b * t, d)


def test_a_program_exported_with_dims_imports_symbolically():
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    ep = _export(_Heads(), (torch.randn(2, 3, 16),), {"x": {0: batch, 1: seq}})
    module, _ = from_exported_program(ep)
    main = next(iter(module.ops))
    b, t = Sym("x.dim0"), Sym("x.dim1")
    assert dims_of(main.args[0].type) == (b, t, 16)
    assert dims_of(main.function_type.outputs.data[0]) == (b * t, 16)
    shapes = {dims_of(r.type) for op in module.walk() for r in op.results}
    assert (b, 2, t, t) in shapes  # the scores, from the heads' views


def test_static_programs_import_as_before():
    ep = _export(_Heads(), (torch.randn(2, 3, 16),), None)
    module, _ = from_exported_program(ep)
    main = next(iter(module.ops))
    assert dims_of(main.args[0].type) == (2, 3, 16)

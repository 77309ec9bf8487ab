"""ONNX LSTM, GRU and RNN unrolled over their static sequence length into graph ops.

An LSTM projects every step's input at once, one `graph.dense` of X by all
four gates' W (both biases summed into its bias); each step is then one
`graph.dense` of the hidden state by all four gates' R, added to its step's
row of the projection, and the cell's elementwise arithmetic on slices of
that (the gates), which graph-fuse-ops fuses: a few kernel calls a step,
where each call costs about a microsecond and the step's work is a
matrix-vector product. A GRU and an RNN step each gate as a `graph.dense` of
the step's input (the weight sliced out of W at import) and a `graph.dense`
of the hidden state (sliced out of R), added, then the gates' arithmetic. The steps are structurally
identical (each one's input is a gather of index t, an operand of the kernel,
where a slice's bounds would be compiled into one kernel per step), so they
share their compiled kernels whatever the sequence length. Why unrolling rather
than a scan op is in docs/architecture.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from ember.dialects import graph as G
from ember.frontends.onnx_fold import shape_of
from ember.frontends.onnx_ops import (
    ABSENT_INPUTS,
    CHECKS,
    CONST_INPUTS,
    ConversionError,
    NodeContext,
    converter,
)

_DEFAULT_ACTIVATIONS = {
    "LSTM": ["Sigmoid", "Tanh", "Tanh"],
    "GRU": ["Sigmoid", "Tanh"],
    "RNN": ["Tanh"],
}
_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _rnn_check(op_type: str):
    def check(attrs: dict[str, Any], _opset: int) -> list[str]:
        problems = []
        direction = _text(attrs.get("direction", "forward"))
        if direction not in _DIRECTIONS:
            problems.append(f"direction={direction!r}")
        dirs = 2 if direction == "bidirectional" else 1
        activations = attrs.get("activations")
        if activations is not None:
            names = [_text(a) for a in activations]
            if names != _DEFAULT_ACTIVATIONS[op_type] * dirs:
                problems.append(f"activations={names} (only the defaults)")
        if "clip" in attrs:
            problems.append(f"clip={attrs['clip']}")
        if attrs.get("input_forget", 0):
            problems.append(f"input_forget={attrs['input_forget']}")
        if attrs.get("layout", 0) not in (0, 1):
            problems.append(f"layout={attrs['layout']}")
        return problems

    return check


CHECKS.update({op: _rnn_check(op) for op in _DEFAULT_ACTIVATIONS})
_WEIGHTS = [(1, "W"), (2, "R"), (3, "B"), (4, "sequence_lens")]
CONST_INPUTS.update(dict.fromkeys(_DEFAULT_ACTIVATIONS, _WEIGHTS))
ABSENT_INPUTS.update({"LSTM": [(7, "peepholes P")]})


@dataclass
class _Rnn:
    """One LSTM or GRU node's shapes and weights, per direction and gate."""

    c: NodeContext
    gates: int  # 4 (LSTM: i, o, f, c), 3 (GRU: z, r, h) or 1 (RNN)
    seq: int
    batch: int
    hidden: int
    dirs: int
    layout: int

    @classmethod
    def of(cls, c: NodeContext, gates: int) -> _Rnn:
        x = c.value(0)
        if x.type.element_type != f32:  # type: ignore[attr-defined]
            raise ConversionError(f"expected float32 X, got {x.type}")
        shape = shape_of(x)
        layout = c.attr("layout", 0)
        seq, batch = (shape[1], shape[0]) if layout else (shape[0], shape[1])
        r = c.const(2, "R")
        rnn = cls(c, gates, seq, batch, r.shape[-1], r.shape[0], layout)
        if c.has(4):
            lens = c.const(4, "sequence_lens")
            if np.any(lens != seq):
                raise ConversionError(
                    f"expected sequence_lens all {seq} (the full sequence), got "
                    f"{lens.tolist()}"
                )
        return rnn

    def weight(self, i: int, d: int, gate: int) -> SSAValue:
        """Gate `gate` of direction `d` of W (i=1) or R (i=2): (hidden, in)."""
        h = self.hidden
        array = self.c.const(i, "W" if i == 1 else "R")[d, gate * h : (gate + 1) * h]
        name = f"{self.c.node.input[i]}.{d}.{gate}"
        return self.c._materialize(name, np.ascontiguousarray(array, np.float32))

    def bias(self, d: int, gate: int, recurrent: bool) -> np.ndarray:
        """Wb (recurrent False) or Rb of `gate` of direction `d`; zeros without B."""
        if not self.c.has(3):
            return np.zeros(self.hidden, np.float32)
        h, b = self.hidden, self.c.const(3, "B")[d]
        start = (self.gates if recurrent else 0) * h + gate * h
        return np.asarray(b[start : start + h], np.float32)

    def param(self, name: str, array: np.ndarray) -> SSAValue:
        return self.c._materialize(
            f"{self.c.node.name or self.c.node.output[0]}.{name}", array
        )

    def step_inputs(self) -> list[SSAValue]:
        """X's slice of each step as (batch, input), in time order: a gather of
        index t rather than a slice, so that every step's is the same kernel (the
        index is an operand, where a slice's bounds are compiled in)."""
        c, x = self.c, self.c.value(0)
        steps = []
        for t in range(self.seq):
            index = c.emit_op(G.ConstantOp.from_numpy(np.asarray(t, np.int64)))
            steps.append(c.emit(G.GatherOp, x, index, axis=self.layout))
        return steps

    def initial(self, i: int, d: int) -> SSAValue:
        """initial_h (i=5) or initial_c (i=6) of direction `d` as (batch, hidden);
        zeros when absent."""
        c = self.c
        if not c.has(i):
            return c.constant(np.zeros((self.batch, self.hidden), np.float32))
        index = c.emit_op(G.ConstantOp.from_numpy(np.asarray(d, np.int64)))
        return c.emit(G.GatherOp, c.value(i), index, axis=self.layout)

    def order(self, d: int) -> list[int]:
        forward = d == 0 and _text(self.c.attr("direction", "forward")) != "reverse"
        return list(range(self.seq)) if forward else list(range(self.seq))[::-1]

    def outputs(
        self, hs: list[list[SSAValue]], last: list[list[SSAValue]]
    ) -> list[Any]:
        """Y from each direction's states in time order, then Y_h (and an
        LSTM's Y_c) from `last`: each direction's final state (and cell)."""
        c, b, h = self.c, self.batch, self.hidden
        names = list(c.node.output)
        result: list[Any] = []
        if names and names[0]:
            # Y: (seq, dirs, batch, hidden), or (batch, seq, dirs, hidden)
            piece = [b, 1, 1, h] if self.layout else [1, 1, b, h]
            axis = 1 if self.layout else 0
            per_dir = [
                self._concat(
                    [c.emit(G.ReshapeOp, s, shape=piece) for s in states], axis
                )
                for states in hs
            ]
            result.append(self._concat(per_dir, 2 if self.layout else 1))
        else:
            result.append(None)
        piece = [b, 1, h] if self.layout else [1, b, h]
        state_axis = 1 if self.layout else 0
        for name, final in zip(names[1:], last, strict=False):
            if not name:
                result.append(None)
                continue
            pieces = [c.emit(G.ReshapeOp, s, shape=piece) for s in final]
            result.append(self._concat(pieces, state_axis))
        return result

    def _concat(self, values: list[SSAValue], axis: int) -> SSAValue:
        if len(values) == 1:
            return values[0]
        return self.c.emit(G.ConcatOp, *values, axis=axis)


def _gate(
    rnn: _Rnn, d: int, gate: int, x: SSAValue, h: SSAValue | None, bias: np.ndarray
) -> SSAValue:
    """x Wᵀ + bias (+ h Rᵀ) for one gate; the second dense takes the add."""
    c = rnn.c
    xw = c.emit(G.DenseOp, x, rnn.weight(1, d, gate), rnn.param(f"b{d}.{gate}", bias))
    if h is None:
        return xw
    return c.emit(G.AddOp, c.emit(G.DenseOp, h, rnn.weight(2, d, gate)), xw)


def _projected(rnn: _Rnn, d: int) -> SSAValue:
    """X by all gates' W of direction `d`, plus both biases, for every step at
    once: (seq, batch, gates * hidden), or (batch, seq, ...) with `layout`."""
    c, x = rnn.c, rnn.c.value(0)
    lead = shape_of(x)[:2]
    rows = c.emit(G.ReshapeOp, x, shape=[lead[0] * lead[1], shape_of(x)[2]])
    w = c.const(1, "W")[d]
    weight = c._materialize(
        f"{c.node.input[1]}.{d}", np.ascontiguousarray(w, np.float32)
    )
    bias = np.concatenate(
        [rnn.bias(d, k, False) + rnn.bias(d, k, True) for k in range(rnn.gates)]
    )
    projected = c.emit(G.DenseOp, rows, weight, rnn.param(f"b{d}", bias))
    return c.emit(G.ReshapeOp, projected, shape=[*lead, rnn.gates * rnn.hidden])


def _step_rows(rnn: _Rnn, projected: SSAValue) -> list[SSAValue]:
    """Each step's rows of `projected`, (batch, gates * hidden), in time order:
    a gather of index t, so every step reads them by one kernel."""
    c = rnn.c
    rows = []
    for t in range(rnn.seq):
        index = c.emit_op(G.ConstantOp.from_numpy(np.asarray(t, np.int64)))
        rows.append(c.emit(G.GatherOp, projected, index, axis=rnn.layout))
    return rows


def _gates(rnn: _Rnn, z: SSAValue) -> list[SSAValue]:
    """The gates' columns of z (batch, gates * hidden), in W's order."""
    b, h = rnn.batch, rnn.hidden
    return [
        rnn.c.emit(G.SliceOp, z, starts=[0, k * h], ends=[b, (k + 1) * h], steps=[1, 1])
        for k in range(rnn.gates)
    ]


@converter("LSTM")
def _lstm(c: NodeContext):
    rnn = _Rnn.of(c, 4)
    hs, h_last, c_last = [], [], []
    for d in range(rnn.dirs):
        h, cell = rnn.initial(5, d), rnn.initial(6, d)
        steps = _step_rows(rnn, _projected(rnn, d))
        r = c.const(2, "R")[d]
        recurrent = c._materialize(
            f"{c.node.input[2]}.{d}", np.ascontiguousarray(r, np.float32)
        )
        states: dict[int, SSAValue] = {}
        for t in rnn.order(d):
            z = c.emit(G.AddOp, c.emit(G.DenseOp, h, recurrent), steps[t])
            a = _gates(rnn, z)
            i, o, f = (c.emit(G.SigmoidOp, a[k]) for k in range(3))
            g = c.emit(G.TanhOp, a[3])
            cell = c.emit(G.AddOp, c.emit(G.MulOp, f, cell), c.emit(G.MulOp, i, g))
            h = c.emit(G.MulOp, o, c.emit(G.TanhOp, cell))
            states[t] = h
        hs.append([states[t] for t in range(rnn.seq)])
        h_last.append(h)
        c_last.append(cell)
    return rnn.outputs(hs, [h_last, c_last])


@converter("GRU")
def _gru(c: NodeContext):
    rnn = _Rnn.of(c, 3)
    before_reset = c.attr("linear_before_reset", 0)
    xs = rnn.step_inputs()
    one = c.constant(1.0)
    hs, h_last = [], []
    for d in range(rnn.dirs):
        h = rnn.initial(5, d)
        wb = [rnn.bias(d, k, False) for k in range(3)]
        rb = [rnn.bias(d, k, True) for k in range(3)]
        rb_h = rnn.param(f"rb{d}", rb[2])
        states: dict[int, SSAValue] = {}
        for t in rnn.order(d):
            z = c.emit(G.SigmoidOp, _gate(rnn, d, 0, xs[t], h, wb[0] + rb[0]))
            r = c.emit(G.SigmoidOp, _gate(rnn, d, 1, xs[t], h, wb[1] + rb[1]))
            xw = _gate(rnn, d, 2, xs[t], None, wb[2])
            if before_reset:
                hr = c.emit(G.DenseOp, h, rnn.weight(2, d, 2), rb_h)
                a = c.emit(G.AddOp, c.emit(G.MulOp, hr, r), xw)
            else:
                hr = c.emit(G.DenseOp, c.emit(G.MulOp, r, h), rnn.weight(2, d, 2), rb_h)
                a = c.emit(G.AddOp, hr, xw)
            candidate = c.emit(G.TanhOp, a)
            # (1 - z) * candidate + z * h
            keep = c.emit(G.MulOp, z, h)
            h = c.emit(
                G.AddOp,
                c.emit(G.MulOp, c.emit(G.SubOp, one, z), candidate),
                keep,
            )
            states[t] = h
        hs.append([states[t] for t in range(rnn.seq)])
        h_last.append(h)
    return rnn.outputs(hs, [h_last])


@converter("RNN")
def _rnn(c: NodeContext):
    rnn = _Rnn.of(c, 1)
    xs = rnn.step_inputs()
    hs, h_last = [], []
    for d in range(rnn.dirs):
        h = rnn.initial(5, d)
        bias = rnn.bias(d, 0, False) + rnn.bias(d, 0, True)
        states: dict[int, SSAValue] = {}
        for t in rnn.order(d):
            h = c.emit(G.TanhOp, _gate(rnn, d, 0, xs[t], h, bias))
            states[t] = h
        hs.append([states[t] for t in range(rnn.seq)])
        h_last.append(h)
    return rnn.outputs(hs, [h_last])

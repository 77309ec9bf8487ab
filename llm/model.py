"""A causal LM's step, written once per architecture in ember's graph IR (as
MLC-LLM writes Relax models): `n` new tokens beside a cache of `past` ones,
both size symbols, so one library runs the prompt (prefill, past 0) and each
token after it (decode, n 1).

    func.func @main(%ids: tensor<?xi64, ["n"]>,
                    %past_key.0: tensor<?xHxDxf32, ["past"]>, %past_value.0: ..., ...)
        -> (logits: tensor<1xVxf32>, key.0: tensor<?xHxDxf32, ["n"]>, value.0, ...)

The caches are the runtime's (`ember.runtime.llm`): token-major (`past`, H,
D) per layer, so the first `past` rows are one contiguous prefix passed as
is, and the step's new keys and values are rows the runtime appends. The
attention reads the cache where it lies: scores against the past and
against the new tokens are two products, combined by one softmax over both
(their shared maximum and sum), so the cache is never concatenated or
copied per token. Grouped-query heads are a reshape of the queries, (H_kv,
group * n, D), so each key/value head is read once for its group. Only the
last position's logits are computed: the next token's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from ember.dialects import graph as G
from ember.dialects.graph_nn import quantize
from ember.dialects.graph_shapes import tensor_of
from ember.frontends.onnx_ops import literal
from ember.llm.config import Arch
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import Sym

N, PAST = Sym("n"), Sym("past")


class _Graph:
    """A `main` function being written: inputs, params and ops; its dense
    layers' weights stored at `bits` (8 or 4, None: float32) with a scale per
    `group` of K (None: one per output channel)."""

    def __init__(
        self, bits: int | None = None, group: int | None = None, fit: bool = False
    ):
        self.block = Block()
        self.params: dict[str, np.ndarray] = {}
        self.names: list[str] = []
        self.bits, self.group, self.fit = bits, group, fit

    def input(self, name: str, dims, element: Attribute = f32) -> SSAValue:
        self.names.append(name)
        return self.block.insert_arg(tensor_of(element, dims), len(self.block.args))

    def param(self, name: str, array: np.ndarray) -> SSAValue:
        array = np.ascontiguousarray(array, np.float32)
        self.params[name] = array
        return self(G.ParamOp(name, TensorType(f32, array.shape)))

    def int_param(self, name: str, array: np.ndarray) -> SSAValue:
        """A param of integers (i8, or ui8 for unsigned bytes)."""
        self.params[name] = array
        element = IntegerType(
            8, Signedness.UNSIGNED if array.dtype == np.uint8 else Signedness.SIGNLESS
        )
        return self(G.ParamOp(name, TensorType(element, array.shape)))

    def const(self, value, dtype: str = "float32") -> SSAValue:
        return self(G.ConstantOp(literal(np.asarray(value, dtype))))

    def __call__(self, op, *operands: SSAValue, **attrs) -> SSAValue:
        if isinstance(op, type):
            op = op.build_inferred(*operands, **attrs)
        self.block.add_op(op)
        return op.results[0]

    def module(self, outputs: list[tuple[str, SSAValue]]) -> ModuleOp:
        self.block.add_op(func.ReturnOp(*(v for _, v in outputs)))

        def names(values) -> ArrayAttr[DictionaryAttr]:
            return ArrayAttr(
                [DictionaryAttr({"ember.name": StringAttr(n)}) for n in values]
            )

        main = func.FuncOp(
            "main",
            (list(self.block.arg_types), [v.type for _, v in outputs]),
            Region(self.block),
            arg_attrs=names(self.names),
            res_attrs=names([n for n, _ in outputs]),
        )
        return ModuleOp([main])


class _Weights:
    """The folder's tensors by their names, the family's prefix
    (`transformer.`, `model.`) optional; a missing one or one of another
    shape is refused by name."""

    def __init__(self, tensors: Mapping[str, np.ndarray], prefix: str):
        self.tensors = dict(tensors)
        self.prefix = prefix

    def __call__(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        for key in (self.prefix + name, name):
            if key in self.tensors:
                array = self.tensors[key]
                if array.shape != shape:
                    raise EmberValueError(
                        f"weight {key!r}: expected shape {shape}, got {array.shape}"
                    )
                return array
        raise EmberValueError(f"weight {self.prefix + name!r} is missing")

    def has(self, name: str) -> bool:
        return self.prefix + name in self.tensors or name in self.tensors


def step_module(
    arch: Arch,
    tensors: Mapping[str, np.ndarray],
    bits: int | None = None,
    group: int | None = None,
    fit: bool = False,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """The step function of `arch` with its weights `tensors` (as the
    folder names them) as params; every dense layer's weight (the LM head's
    too) quantized to `bits` with a scale per `group` of its inputs (None:
    per output channel) when `bits` is given; with `fit`, a layer whose
    inputs `group` does not divide takes the largest group that does.

    Raises:
        EmberValueError: a weight missing or of another shape (named), a group
            that does not divide a layer's inputs.
    """
    g = _Graph(bits, group, fit)
    build = _gpt2 if arch.family == "gpt2" else _llama
    prefix = "transformer." if arch.family == "gpt2" else "model."
    outputs = build(g, arch, _Weights(tensors, prefix))
    return g.module(outputs), g.params


# ---------------------------------------------------------------- shared pieces


def _dense(g: _Graph, x: SSAValue, w: np.ndarray, b: np.ndarray | None, name: str):
    """x wᵀ (+ b), w (out, in): `graph.dense`, or `graph.dense_dequant` of
    the weight quantized at the graph's bits."""
    bias = [] if b is None else [g.param(f"{name}.bias", b)]
    if g.bits is None:
        return g(G.DenseOp, x, g.param(f"{name}.weight", w), *bias)
    group = g.group or w.shape[1]
    if g.fit:  # the default group: the largest that divides the inputs
        group = math.gcd(group, w.shape[1])
    if w.shape[1] % group or (g.bits == 4 and group % 2):
        raise EmberValueError(
            f"{name}: group size {group} does not divide its {w.shape[1]} inputs "
            "(in an even number, at 4 bits)"
        )
    q, scale = quantize(w, g.bits, group)
    weight = g.int_param(f"{name}.weight", q)
    scales = g.param(f"{name}.scale", scale)
    return g(G.DenseDequantOp, x, weight, scales, *bias, bits=g.bits, group=group)


def _split(g: _Graph, x: SSAValue, widths: list[int]) -> list[SSAValue]:
    """Columns of (n, sum(widths)) in consecutive blocks."""
    parts, start = [], 0
    for w in widths:
        parts.append(
            g(G.SliceOp, x, starts=[0, start], ends=[N, start + w], steps=[1, 1])
        )
        start += w
    return parts


def _positions(g: _Graph) -> SSAValue:
    """past, past + 1, ..., past + n - 1 (i64)."""
    offsets = g(G.RangeOp, limit=N)
    return g(G.AddOp, offsets, g(G.SizesOp, values=[PAST], shape=[]))


def _attention(
    g: _Graph,
    arch: Arch,
    q: SSAValue,
    k: SSAValue,
    v: SSAValue,
    past_k: SSAValue,
    past_v: SSAValue,
) -> SSAValue:
    """Causal attention of q (n, H, D) over the past's and the new (n, H_kv,
    D) keys and values: (n, H * D)."""
    hq, hkv, d = arch.heads, arch.kv_heads, arch.head_dim
    group = hq // hkv
    q = g(G.MulOp, q, g.const(1 / math.sqrt(d)))
    # (H, n, D) -> (H_kv, group * n, D): query heads h of kv head h // group
    q = g(G.ReshapeOp, g(G.TransposeOp, q, perm=[1, 0, 2]), shape=[hkv, group * N, d])

    def scores(keys: SSAValue) -> SSAValue:  # (T, H_kv, D) -> (H_kv, group n, T)
        return g(G.BatchMatmulOp, q, g(G.TransposeOp, keys, perm=[1, 2, 0]))

    s_past, s_new = scores(past_k), scores(k)
    # the new tokens see those before them: j <= i
    rows = g(G.ReshapeOp, g(G.RangeOp, limit=N), shape=[N, 1])
    causal = g(G.LessEqualOp, g(G.RangeOp, limit=N), rows)
    s_new = g(G.ReshapeOp, s_new, shape=[hkv, group, N, N])
    lowest = g.const(np.finfo(np.float32).min)
    s_new = g(G.WhereOp, causal, s_new, lowest)
    s_new = g(G.ReshapeOp, s_new, shape=[hkv, group * N, N])
    # one softmax over both: their shared maximum and sum
    peak = g(
        G.MaximumOp,
        g(G.ReduceMaxOp, s_past, axes=[2], keepdims=True),
        g(G.ReduceMaxOp, s_new, axes=[2], keepdims=True),
    )
    e_past = g(G.ExpOp, g(G.SubOp, s_past, peak))
    e_new = g(G.ExpOp, g(G.SubOp, s_new, peak))
    total = g(
        G.AddOp,
        g(G.ReduceSumOp, e_past, axes=[2], keepdims=True),
        g(G.ReduceSumOp, e_new, axes=[2], keepdims=True),
    )

    def weighted(e: SSAValue, values: SSAValue) -> SSAValue:  # (T, H_kv, D)
        return g(G.BatchMatmulOp, e, g(G.TransposeOp, values, perm=[1, 0, 2]))

    out = g(G.AddOp, weighted(e_past, past_v), weighted(e_new, v))
    out = g(G.DivOp, out, total)  # (H_kv, group n, D)
    out = g(G.TransposeOp, g(G.ReshapeOp, out, shape=[hq, N, d]), perm=[1, 0, 2])
    return g(G.ReshapeOp, out, shape=[N, hq * d])


def _activation(g: _Graph, x: SSAValue, kind: str) -> SSAValue:
    if kind == "gelu":
        return g(G.GeluOp, x)
    if kind == "relu":
        return g(G.ReluOp, x)
    if kind == "silu":
        return g(G.MulOp, x, g(G.SigmoidOp, x))
    # gelu_tanh: x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2
    cube = g(G.MulOp, g(G.MulOp, x, x), x)
    inner = g(G.AddOp, x, g(G.MulOp, cube, g.const(0.044715)))
    t = g(G.TanhOp, g(G.MulOp, inner, g.const(math.sqrt(2 / math.pi))))
    return g(G.MulOp, g(G.MulOp, x, g.const(0.5)), g(G.AddOp, t, g.const(1.0)))


def _last_logits(
    g: _Graph, h: SSAValue, norm: Callable[[SSAValue], SSAValue], head: np.ndarray
) -> SSAValue:
    """The logits (1, V) of the last of the n positions."""
    last = g(G.GatherOp, h, g(G.SizesOp, values=[N - 1], shape=[1]), axis=0)
    return _dense(g, norm(last), head, None, "lm_head")


def _cache_inputs(g: _Graph, arch: Arch) -> list[tuple[SSAValue, SSAValue]]:
    dims = [PAST, arch.kv_heads, arch.head_dim]
    return [
        (g.input(f"past_key.{i}", dims), g.input(f"past_value.{i}", dims))
        for i in range(arch.layers)
    ]


# ---------------------------------------------------------------- GPT-2


def _gpt2(g: _Graph, arch: Arch, w: _Weights) -> list[tuple[str, SSAValue]]:
    d, hd = arch.hidden, arch.heads * arch.head_dim
    ids = g.input("ids", [N], i64)
    caches = _cache_inputs(g, arch)
    wte = w("wte.weight", (arch.vocab, d))
    h = g(G.GatherOp, g.param("wte.weight", wte), ids, axis=0)
    wpe = g.param("wpe.weight", w("wpe.weight", (arch.max_positions, d)))
    h = g(G.AddOp, h, g(G.GatherOp, wpe, _positions(g), axis=0))

    def norm(x: SSAValue, name: str) -> SSAValue:
        scale = g.param(f"{name}.weight", w(f"{name}.weight", (d,)))
        bias = g.param(f"{name}.bias", w(f"{name}.bias", (d,)))
        return g(G.LayerNormOp, x, scale, bias, epsilon=arch.eps)

    def conv1d(x: SSAValue, name: str, n_in: int, n_out: int) -> SSAValue:
        """GPT-2's Conv1D: x W + b with W (in, out)."""
        weight = w(f"{name}.weight", (n_in, n_out)).T
        return _dense(g, x, weight, w(f"{name}.bias", (n_out,)), name)

    outputs: list[tuple[str, SSAValue]] = []
    for i, (past_k, past_v) in enumerate(caches):
        p = f"h.{i}"
        qkv = conv1d(norm(h, f"{p}.ln_1"), f"{p}.attn.c_attn", d, 3 * hd)
        q, k, v = (
            g(G.ReshapeOp, x, shape=[N, arch.heads, arch.head_dim])
            for x in _split(g, qkv, [hd, hd, hd])
        )
        a = _attention(g, arch, q, k, v, past_k, past_v)
        h = g(G.AddOp, h, conv1d(a, f"{p}.attn.c_proj", hd, d))
        m = conv1d(norm(h, f"{p}.ln_2"), f"{p}.mlp.c_fc", d, arch.intermediate)
        m = _activation(g, m, arch.activation)
        h = g(G.AddOp, h, conv1d(m, f"{p}.mlp.c_proj", arch.intermediate, d))
        outputs += [(f"key.{i}", k), (f"value.{i}", v)]
    head = w("lm_head.weight", (arch.vocab, d)) if w.has("lm_head.weight") else wte
    logits = _last_logits(g, h, lambda x: norm(x, "ln_f"), head)
    return [("logits", logits), *outputs]


# ---------------------------------------------------------------- Llama family


def _rope(g: _Graph, arch: Arch) -> tuple[SSAValue, SSAValue]:
    """cos and sin (n, 1, D) of the new positions, as transformers computes
    them: angles p / theta^(2i / D) in float32, repeated for both halves."""
    d = arch.head_dim
    inv = 1.0 / (arch.rope_theta ** (np.arange(0, d, 2, dtype=np.int64) / d))
    inv = np.concatenate([inv, inv]).astype(np.float32)
    positions = g(G.CastOp, _positions(g), to="float32")
    angles = g(
        G.MulOp,
        g(G.ReshapeOp, positions, shape=[N, 1, 1]),
        g.const(inv.reshape(1, 1, d)),
    )
    return g(G.CosOp, angles), g(G.SinOp, angles)


def _rotate(g: _Graph, x: SSAValue, cos: SSAValue, sin: SSAValue, heads: int, d: int):
    """x cos + rotate_half(x) sin, x (n, heads, D)."""
    half = d // 2
    lo = g(G.SliceOp, x, starts=[0, 0, 0], ends=[N, heads, half], steps=[1, 1, 1])
    hi = g(G.SliceOp, x, starts=[0, 0, half], ends=[N, heads, d], steps=[1, 1, 1])
    rotated = g(G.ConcatOp, g(G.MulOp, hi, g.const(-1.0)), lo, axis=2)
    return g(G.AddOp, g(G.MulOp, x, cos), g(G.MulOp, rotated, sin))


def _llama(g: _Graph, arch: Arch, w: _Weights) -> list[tuple[str, SSAValue]]:
    d, hd, kvd = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    ids = g.input("ids", [N], i64)
    caches = _cache_inputs(g, arch)
    embed = w("embed_tokens.weight", (arch.vocab, d))
    h = g(G.GatherOp, g.param("embed_tokens.weight", embed), ids, axis=0)
    cos, sin = _rope(g, arch)

    def norm(x: SSAValue, name: str) -> SSAValue:
        """RMSNorm: x / sqrt(mean(x^2) + eps) * weight."""
        weight = g.param(f"{name}.weight", w(f"{name}.weight", (d,)))
        mean = g(G.ReduceMeanOp, g(G.MulOp, x, x), axes=[-1], keepdims=True)
        rms = g(G.SqrtOp, g(G.AddOp, mean, g.const(arch.eps)))
        return g(G.MulOp, g(G.DivOp, x, rms), weight)

    def fused(x: SSAValue, names: list[str], widths: list[int], bias: bool, n_in: int):
        """One dense for several projections of x, then their columns."""
        weight = np.concatenate(
            [w(f"{n}.weight", (o, n_in)) for n, o in zip(names, widths, strict=True)]
        )
        b = None
        if bias:
            b = np.concatenate(
                [w(f"{n}.bias", (o,)) for n, o in zip(names, widths, strict=True)]
            )
        return _split(g, _dense(g, x, weight, b, names[0] + "+"), widths)

    outputs: list[tuple[str, SSAValue]] = []
    for i, (past_k, past_v) in enumerate(caches):
        p = f"layers.{i}"
        a = norm(h, f"{p}.input_layernorm")
        names = [f"{p}.self_attn.{x}_proj" for x in "qkv"]
        q, k, v = fused(a, names, [hd, kvd, kvd], arch.qkv_bias, d)
        q = g(G.ReshapeOp, q, shape=[N, arch.heads, arch.head_dim])
        k = g(G.ReshapeOp, k, shape=[N, arch.kv_heads, arch.head_dim])
        v = g(G.ReshapeOp, v, shape=[N, arch.kv_heads, arch.head_dim])
        q = _rotate(g, q, cos, sin, arch.heads, arch.head_dim)
        k = _rotate(g, k, cos, sin, arch.kv_heads, arch.head_dim)
        o = _attention(g, arch, q, k, v, past_k, past_v)
        out = f"{p}.self_attn.o_proj"
        bias = w(f"{out}.bias", (d,)) if arch.out_bias else None
        h = g(G.AddOp, h, _dense(g, o, w(f"{out}.weight", (d, hd)), bias, out))
        m = norm(h, f"{p}.post_attention_layernorm")
        names = [f"{p}.mlp.{x}_proj" for x in ("gate", "up")]
        gate, up = fused(m, names, [arch.intermediate] * 2, arch.mlp_bias, d)
        m = g(G.MulOp, _activation(g, gate, arch.activation), up)
        down = f"{p}.mlp.down_proj"
        bias = w(f"{down}.bias", (d,)) if arch.mlp_bias else None
        h = g(
            G.AddOp,
            h,
            _dense(g, m, w(f"{down}.weight", (d, arch.intermediate)), bias, down),
        )
        outputs += [(f"key.{i}", k), (f"value.{i}", v)]
    head = embed if arch.tied and not w.has("lm_head.weight") else None
    if head is None:
        head = w("lm_head.weight", (arch.vocab, d))
    logits = _last_logits(g, h, lambda x: norm(x, "norm"), head)
    return [("logits", logits), *outputs]

"""PyTorch models for ember's torch frontend, written with torch.nn by hand
(torchvision is not a dependency), with seeded random weights.

    python examples/torch_models.py            # each, through torch.export and
                                               # torch.compile(backend="ember")

`mobilenet_v2` is torchvision's layout (same parameter count at width 1.0);
`transformer_block` a pre-norm encoder block with multi-head self-attention
written out, LayerNorm and an exact (erf) GELU; `torch_attention_block` the same
with nn.MultiheadAttention (whose core aten graph also slices the packed q/k/v
projection and guards fully masked rows with comparisons and `where`). Weights are re-drawn so that activations stay
of order one (He init before a rectifier, batch-norm statistics near the true
ones, residual branches starting small), which keeps a relative-error comparison
against eager PyTorch meaningful.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import torch
from torch import nn

# t (expansion), c (output channels), n (repeats), s (first stride): MobileNetV2's table.
MOBILENET_V2_SETTINGS = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
]


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act=True):
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    return nn.Sequential(*layers, *([nn.ReLU6()] if act else []))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [_conv_bn(cin, hidden, 1)]
        layers += [
            _conv_bn(hidden, hidden, 3, stride, groups=hidden),
            _conv_bn(hidden, cout, 1, act=False),
        ]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018) as torchvision writes it; `width`
    scales the channel counts (multiples of 8) for small test models."""

    def __init__(self, num_classes: int = 1000, width: float = 1.0):
        super().__init__()

        def channels(c: float) -> int:
            return max(8, int(c * width + 4) // 8 * 8)

        cin = channels(32)
        blocks: list[nn.Module] = [_conv_bn(3, cin, 3, stride=2)]
        for t, c, n, s in MOBILENET_V2_SETTINGS:
            for i in range(n):
                blocks.append(InvertedResidual(cin, channels(c), s if i == 0 else 1, t))
                cin = channels(c)
        self.last = channels(1280) if width > 1.0 else 1280
        blocks.append(_conv_bn(cin, self.last, 1))
        self.features = nn.Sequential(*blocks)
        self.classifier = nn.Sequential(
            nn.Dropout(0.2), nn.Linear(self.last, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class SelfAttention(nn.Module):
    """Multi-head self-attention written out: q, k, v projections, scaled dot
    products, softmax."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        dh = d // self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, dh).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-2, -1) / dh**0.5
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, n, d))


class TransformerBlock(nn.Module):
    """A pre-norm encoder block: x + attention(LN(x)), then h + MLP(LN(h)),
    the MLP with an exact (erf) GELU."""

    def __init__(self, d: int = 128, heads: int = 4, ffn: int | None = None):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(
            nn.Linear(d, ffn or 4 * d), nn.GELU(), nn.Linear(ffn or 4 * d, d)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TorchAttentionBlock(TransformerBlock):
    """The same block with nn.MultiheadAttention."""

    def __init__(self, d: int = 128, heads: int = 4):
        super().__init__(d, heads)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def _init(model: nn.Module, seed: int) -> nn.Module:
    """Seeded weights that keep activations of order one; eval mode."""
    g = torch.Generator().manual_seed(seed)

    def uniform(shape, lo: float, hi: float) -> torch.Tensor:
        return torch.rand(shape, generator=g) * (hi - lo) + lo

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                fan_in = m.weight[0].numel()
                gain = 2.0 if isinstance(m, nn.Conv2d) else 1.0
                m.weight.copy_(torch.randn(m.weight.shape, generator=g))
                m.weight.mul_((gain / fan_in) ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.05)
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(uniform(m.weight.shape, 0.3, 0.6))
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.05)
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g))
                m.running_mean.mul_(0.05)
                m.running_var.copy_(uniform(m.running_var.shape, 0.5, 1.5))
            elif isinstance(m, nn.LayerNorm):
                m.weight.copy_(uniform(m.weight.shape, 0.8, 1.2))
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.05)
            elif isinstance(m, nn.MultiheadAttention):
                d = m.embed_dim
                m.in_proj_weight.copy_(torch.randn(3 * d, d, generator=g) / d**0.5)
                m.in_proj_bias.copy_(torch.randn(3 * d, generator=g) * 0.05)
    return model.eval()


def mobilenet_v2(num_classes: int = 1000, width: float = 1.0, seed: int = 0):
    """MobileNetV2 in eval mode; its input is (batch, 3, H, W)."""
    return _init(MobileNetV2(num_classes, width), seed)


def transformer_block(d: int = 128, heads: int = 4, seed: int = 0):
    """The encoder block in eval mode; its input is (batch, seq, d)."""
    return _init(TransformerBlock(d, heads), seed)


def torch_attention_block(d: int = 128, heads: int = 4, seed: int = 0):
    """The block with nn.MultiheadAttention, in eval mode."""
    return _init(TorchAttentionBlock(d, heads), seed)


def main(argv: Sequence[str] | None = None) -> int:
    import ember.frontends.torch as ember_torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=96, help="MobileNetV2's H and W")
    args = parser.parse_args(argv)
    torch.manual_seed(1)
    cases = [
        ("mobilenet_v2", mobilenet_v2(), torch.randn(1, 3, args.size, args.size)),
        ("transformer_block", transformer_block(), torch.randn(1, 32, 128)),
        ("torch_attention_block", torch_attention_block(), torch.randn(1, 32, 128)),
    ]
    for name, model, x in cases:
        with torch.no_grad():
            want = model(x)
            exported = ember_torch.compile(model, (x,))(x)
            compiled = torch.compile(model, backend="ember")(x)
        for how, got in (("torch.export", exported), ("torch.compile", compiled)):
            error = float((got - want).abs().max() / want.abs().max())
            print(f"{name} via {how}: max relative error {error:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

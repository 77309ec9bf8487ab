"""The architectures people bring, written with torch.nn by hand (torchvision is
not a dependency), seeded, in eval mode: MobileNetV3-small and -large,
ShuffleNetV2, a BERT-style encoder (int64 token ids and attention mask), a
GPT-style decoder block (causal mask), ViT-B/16 and a 2-layer LSTM. They are
the PyTorch twins of `onnx_models.py`'s builders, for ember's torch frontend.

    python examples/torch_zoo.py        # each, through torch.export, against eager

Weights come from `torch_models._init` (activations of order one, so a
relative-error comparison against eager PyTorch means something).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch
from torch import nn
from torch_models import TransformerBlock, _init

# k (kernel), expansion channels, output channels, squeeze-excite, hard-swish,
# stride: torchvision's tables
MOBILENET_V3 = {
    "small": [
        (3, 16, 16, True, False, 2),
        (3, 72, 24, False, False, 2),
        (3, 88, 24, False, False, 1),
        (5, 96, 40, True, True, 2),
        (5, 240, 40, True, True, 1),
        (5, 240, 40, True, True, 1),
        (5, 120, 48, True, True, 1),
        (5, 144, 48, True, True, 1),
        (5, 288, 96, True, True, 2),
        (5, 576, 96, True, True, 1),
        (5, 576, 96, True, True, 1),
    ],
    "large": [
        (3, 16, 16, False, False, 1),
        (3, 64, 24, False, False, 2),
        (3, 72, 24, False, False, 1),
        (5, 72, 40, True, False, 2),
        (5, 120, 40, True, False, 1),
        (5, 120, 40, True, False, 1),
        (3, 240, 80, False, True, 2),
        (3, 200, 80, False, True, 1),
        (3, 184, 80, False, True, 1),
        (3, 184, 80, False, True, 1),
        (3, 480, 112, True, True, 1),
        (3, 672, 112, True, True, 1),
        (5, 672, 160, True, True, 2),
        (5, 960, 160, True, True, 1),
        (5, 960, 160, True, True, 1),
    ],
}


def _divisible(c: float) -> int:
    return max(8, int(c + 4) // 8 * 8)


def _conv_bn_act(cin, cout, k, stride=1, groups=1, act: type[nn.Module] | None = None):
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    return nn.Sequential(*layers, *([act()] if act else []))


class SqueezeExcite(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        squeeze = _divisible(c / 4)
        self.fc1, self.fc2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        s = nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(s))))
        return x * s


class MobileNetV3Block(nn.Module):
    def __init__(self, cin, k, expand, cout, se, hard, stride):
        super().__init__()
        act = nn.Hardswish if hard else nn.ReLU
        layers: list[nn.Module] = []
        if expand != cin:
            layers.append(_conv_bn_act(cin, expand, 1, act=act))
        layers.append(_conv_bn_act(expand, expand, k, stride, expand, act))
        if se:
            layers.append(SqueezeExcite(expand))
        layers.append(_conv_bn_act(expand, cout, 1))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV3(nn.Module):
    """MobileNetV3 (Howard et al. 2019), "small" or "large", as torchvision
    writes it: hard-swish, squeeze-excite with hard-sigmoid gates."""

    def __init__(self, kind: str = "large", num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [_conv_bn_act(3, 16, 3, 2, act=nn.Hardswish)]
        cin = 16
        for k, expand, cout, se, hard, stride in MOBILENET_V3[kind]:
            layers.append(MobileNetV3Block(cin, k, expand, cout, se, hard, stride))
            cin = cout
        last = 6 * cin
        layers.append(_conv_bn_act(cin, last, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        hidden = 1024 if kind == "small" else 1280
        self.classifier = nn.Sequential(
            nn.Linear(last, hidden), nn.Hardswish(), nn.Linear(hidden, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def _channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.shape
    x = x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(b, c, h, w)


class ShuffleBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        half = cout // 2
        self.stride = stride
        if stride > 1:
            self.branch1 = nn.Sequential(
                _conv_bn_act(cin, cin, 3, stride, cin),
                _conv_bn_act(cin, half, 1, act=nn.ReLU),
            )
        first = cin if stride > 1 else half
        self.branch2 = nn.Sequential(
            _conv_bn_act(first, half, 1, act=nn.ReLU),
            _conv_bn_act(half, half, 3, stride, half),
            _conv_bn_act(half, half, 1, act=nn.ReLU),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            a, b = x.chunk(2, dim=1)
            out = torch.cat((a, self.branch2(b)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return _channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNetV2 1.0x (Ma et al. 2018) as torchvision writes it: channel
    split (chunk), concatenation and channel shuffle (view, transpose)."""

    def __init__(self, num_classes: int = 1000, channels=(24, 116, 232, 464, 1024)):
        super().__init__()
        self.stem = nn.Sequential(
            _conv_bn_act(3, channels[0], 3, 2, act=nn.ReLU), nn.MaxPool2d(3, 2, 1)
        )
        blocks: list[nn.Module] = []
        cin = channels[0]
        for repeats, cout in zip((4, 8, 4), channels[1:4], strict=True):
            blocks += [
                ShuffleBlock(cin if i == 0 else cout, cout, 1 + (i == 0))
                for i in range(repeats)
            ]
            cin = cout
        self.stages = nn.Sequential(*blocks)
        self.conv5 = _conv_bn_act(cin, channels[4], 1, act=nn.ReLU)
        self.fc = nn.Linear(channels[4], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv5(self.stages(self.stem(x)))
        return self.fc(x.mean([2, 3]))


class MaskedSelfAttention(nn.Module):
    """Multi-head self-attention with an additive mask (batch, 1, q, k)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5 + mask
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, n, d))


class EncoderLayer(nn.Module):
    """BERT's post-norm layer: x = LN(x + attention(x)), x = LN(x + MLP(x))."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.attn = MaskedSelfAttention(d, heads)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.mlp(x))


class BertEncoder(nn.Module):
    """A BERT-style encoder: int64 token ids and attention mask (1 keeps a
    token); word and position embeddings, LayerNorm, post-norm layers."""

    def __init__(self, vocab=1000, seq=128, d=256, heads=4, layers=4):
        super().__init__()
        self.words = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(seq, d)
        self.ln = nn.LayerNorm(d)
        self.layers = nn.ModuleList(EncoderLayer(d, heads) for _ in range(layers))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1])
        x = self.ln(self.words(ids) + self.positions(positions))
        additive = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, additive)
        return x


class GptBlock(nn.Module):
    """A GPT-2-style pre-norm decoder block; the future is masked with
    `masked_fill` on a registered lower-triangular buffer."""

    def __init__(self, d=256, heads=4, seq=64):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = MaskedSelfAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.register_buffer(
            "causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        mask = torch.zeros(n, n).masked_fill(~self.causal[:n, :n], float("-inf"))
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class VisionTransformer(nn.Module):
    """ViT (Dosovitskiy et al. 2021): patches by a strided conv, a class token,
    learned position embeddings, pre-norm encoder blocks, the head on the class
    token. ViT-B/16 is the default."""

    def __init__(self, size=224, patch=16, d=768, heads=12, layers=12, classes=1000):
        super().__init__()
        self.patches = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.zeros(1, (size // patch) ** 2 + 1, d))
        self.blocks = nn.Sequential(
            *(TransformerBlock(d, heads) for _ in range(layers))
        )
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patches(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
        return self.head(self.ln(self.blocks(x))[:, 0])


class LstmModel(nn.Module):
    """A 2-layer LSTM over (batch, seq, features) and a linear head on every step."""

    def __init__(self, features=32, hidden=64, layers=2, outputs=10):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(x)[0])


def _init_zoo(model: nn.Module, seed: int) -> nn.Module:
    """`_init`, plus the embeddings, class token, position and LSTM weights it
    leaves at torch's defaults."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if isinstance(model, LstmModel) and name.startswith("lstm."):
                p.copy_((torch.rand(p.shape, generator=g) - 0.5) * 0.4)
            elif name in ("cls", "pos") or ".words." in f".{name}":
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif "positions." in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return _init(model, seed)


def mobilenet_v3(kind: str = "large", num_classes: int = 1000, seed: int = 0):
    """MobileNetV3-small or -large; input (batch, 3, H, W)."""
    return _init_zoo(MobileNetV3(kind, num_classes), seed)


def shufflenet_v2(num_classes: int = 1000, seed: int = 0, **kwargs):
    """ShuffleNetV2 1.0x; input (batch, 3, H, W)."""
    return _init_zoo(ShuffleNetV2(num_classes, **kwargs), seed)


def bert_encoder(seed: int = 0, **kwargs):
    """The BERT-style encoder; inputs int64 ids and mask, both (batch, seq)."""
    return _init_zoo(BertEncoder(**kwargs), seed)


def gpt_block(seed: int = 0, **kwargs):
    """The GPT-style block; input (batch, seq, d)."""
    return _init_zoo(GptBlock(**kwargs), seed)


def vit(seed: int = 0, **kwargs):
    """ViT (B/16 by default); input (batch, 3, size, size)."""
    return _init_zoo(VisionTransformer(**kwargs), seed)


def lstm(seed: int = 0, **kwargs):
    """The 2-layer LSTM; input (batch, seq, features)."""
    return _init_zoo(LstmModel(**kwargs), seed)


def examples(small: bool = True) -> dict[str, Callable[[], tuple]]:
    """Each model with example inputs: small sizes for tests, or full size."""
    g = torch.Generator().manual_seed(1)
    seq = 16 if small else 128

    def ids_and_mask():
        ids = torch.randint(0, 100, (2, seq), generator=g)
        mask = torch.ones(2, seq, dtype=torch.int64)
        mask[1, seq // 2 :] = 0
        return ids, mask

    size = 64 if small else 224

    def image():
        return (torch.randn(1, 3, size, size, generator=g),)

    transformer = dict(d=64, heads=4, layers=2) if small else {}
    return {
        "mobilenet_v3_small": lambda: (mobilenet_v3("small", 10), *image()),
        "mobilenet_v3_large": lambda: (mobilenet_v3("large", 10), *image()),
        "shufflenet_v2": lambda: (shufflenet_v2(10), *image()),
        "bert_encoder": lambda: (
            bert_encoder(vocab=100, seq=seq, **transformer),
            *ids_and_mask(),
        ),
        "gpt_block": lambda: (
            gpt_block(d=64, heads=4, seq=seq) if small else gpt_block(),
            torch.randn(1, seq, 64 if small else 256, generator=g),
        ),
        "vit": lambda: (
            vit(size=32, patch=8, classes=10, **transformer) if small else vit(),
            torch.randn(1, 3, 32 if small else 224, 32 if small else 224, generator=g),
        ),
        "lstm": lambda: (lstm(), torch.randn(2, 12, 32, generator=g)),
    }


def main() -> int:
    import ember.frontends.torch as ember_torch

    for name, make in examples(small=True).items():
        model, *inputs = make()
        with torch.no_grad():
            want = model(*inputs)
        got = ember_torch.compile(model, inputs)(*inputs)
        error = float((got - want).abs().max() / want.abs().max())
        print(f"{name}: max relative error {error:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""ONNX models for ember's tests, demo and benchmarks, written with onnx.helper.

Standard architectures with seeded random weights (numpy's default_rng), laid out as
frameworks export them: convolutions without bias followed by unfused
BatchNormalization, Clip(0, 6) as relu6, Gemm classifiers. Weights are scaled so that
activations stay of order one through the whole network (He init before a
rectifier, LeCun init before a linear output, batch-norm statistics near the true
ones), which keeps a relative-error comparison against onnxruntime meaningful.

    python examples/onnx_models.py mobilenet_v2 -o mobilenet_v2.onnx
    python examples/onnx_models.py transformer_block --seq 32 --opset 18 -o t.onnx

Every builder returns an onnx.ModelProto that passes onnx.checker; the input is
named "input" and the output "output" unless the builder says otherwise.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import math
import sys
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSETS = range(13, 19)
DEFAULT_OPSET = 17

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


class GraphBuilder:
    """Accumulates nodes and initializers of one ONNX graph, naming values after
    their node (``<node name>_output``) the way exporters do."""

    def __init__(self, name: str, seed: int, opset: int):
        if opset not in OPSETS:
            raise ValueError(
                f"expected an opset in {OPSETS.start}..{OPSETS.stop - 1}, got {opset}"
            )
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._constants: dict[tuple, str] = {}
        # A rough second moment E[x^2] of each value, propagated layer by layer, so
        # batch-norm statistics can be set near the ones training would have found.
        self.moment: dict[str, float] = {}

    # -- values --------------------------------------------------------------------

    def initializer(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def constant(self, value, dtype=np.float32) -> str:
        """A small literal initializer (a scalar, a shape, axes), shared by value."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            kind = "i" if array.dtype.kind == "i" else "f"
            text = "_".join(str(v) for v in array.ravel().tolist()) or "empty"
            name = f"const_{kind}{array.ndim}_{text}".replace("-", "m").replace(
                ".", "p"
            )
            self._constants[key] = self.initializer(name, array)
        return self._constants[key]

    def node(
        self,
        op: str,
        inputs: Sequence[str],
        name: str,
        moment: float | None = None,
        **attrs,
    ) -> str:
        output = f"{name}_output"
        self.nodes.append(helper.make_node(op, list(inputs), [output], name, **attrs))
        if moment is None and op in ("Add", "Sub"):
            moment = sum(self.moment_of(i) for i in inputs)
        self.moment[output] = self.moment_of(inputs[0]) if moment is None else moment
        return output

    def moment_of(self, value: str) -> float:
        return self.moment.get(value, 1.0)

    def normal(self, shape: Sequence[int], std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def uniform(self, shape: Sequence[int], low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, shape).astype(np.float32)

    # -- layers --------------------------------------------------------------------

    def conv(
        self,
        x: str,
        cin: int,
        cout: int,
        kernel: int,
        name: str,
        stride: int = 1,
        pad: int | None = None,
        groups: int = 1,
        gain: float = 2.0,
        bias: bool = False,
    ) -> str:
        """A Conv whose weight has variance gain / fan_in (He init for gain 2)."""
        fan_in = cin // groups * kernel * kernel
        weight = self.normal(
            (cout, cin // groups, kernel, kernel), math.sqrt(gain / fan_in)
        )
        inputs = [x, self.initializer(f"{name}.weight", weight)]
        if bias:
            inputs.append(self.initializer(f"{name}.bias", self.normal((cout,), 0.05)))
        pad = kernel // 2 if pad is None else pad
        return self.node(
            "Conv",
            inputs,
            f"{name}/Conv",
            moment=gain * self.moment_of(x),
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad] * 4,
            dilations=[1, 1],
            group=groups,
        )

    def batch_norm(self, x: str, channels: int, name: str, gamma=(0.8, 1.2)) -> str:
        """Inference BatchNormalization whose statistics are near the input's
        estimated ones (mean about 0, variance its second moment), so the normalised
        values have a second moment of about gamma^2."""
        m2 = self.moment_of(x)
        params = [
            self.uniform((channels,), *gamma),
            self.normal((channels,), 0.05),
            self.normal((channels,), 0.1 * math.sqrt(m2)),
            self.uniform((channels,), 0.7 * m2, 1.3 * m2),
        ]
        suffixes = ["weight", "bias", "running_mean", "running_var"]
        inputs = [x] + [
            self.initializer(f"{name}.{s}", p)
            for s, p in zip(suffixes, params, strict=True)
        ]
        moment = float(np.mean(np.square(gamma))) + 0.05**2
        return self.node(
            "BatchNormalization",
            inputs,
            f"{name}/BatchNormalization",
            moment,
            epsilon=1e-5,
        )

    def relu(self, x: str, name: str) -> str:
        return self.node("Relu", [x], f"{name}/Relu", self.moment_of(x) / 2)

    def relu6(self, x: str, name: str) -> str:
        inputs = [x, self.constant(0.0), self.constant(6.0)]
        return self.node("Clip", inputs, f"{name}/Clip", self.moment_of(x) / 2)

    def gemm(self, x: str, k: int, n: int, name: str, gain: float = 1.0) -> str:
        """A Gemm as exporters write a Linear layer: weight (n, k), transB=1, bias."""
        weight = self.initializer(
            f"{name}.weight", self.normal((n, k), math.sqrt(gain / k))
        )
        bias = self.initializer(f"{name}.bias", self.normal((n,), 0.05))
        return self.node(
            "Gemm", [x, weight, bias], f"{name}/Gemm", alpha=1.0, beta=1.0, transB=1
        )

    def linear(self, x: str, k: int, n: int, name: str, gain: float = 1.0) -> str:
        """MatMul by a (k, n) weight then Add of a bias: a Linear on any rank."""
        weight = self.initializer(
            f"{name}.weight", self.normal((k, n), math.sqrt(gain / k))
        )
        y = self.node("MatMul", [x, weight], f"{name}/MatMul")
        bias = self.initializer(f"{name}.bias", self.normal((n,), 0.05))
        return self.node("Add", [y, bias], f"{name}/Add")

    def reduce_mean(self, x: str, axes: Sequence[int], name: str) -> str:
        """ReduceMean with keepdims, its axes an attribute before opset 18 and an
        input from 18 on."""
        if self.opset >= 18:
            axes_input = self.constant(list(axes), np.int64)
            return self.node(
                "ReduceMean", [x, axes_input], f"{name}/ReduceMean", keepdims=1
            )
        return self.node(
            "ReduceMean", [x], f"{name}/ReduceMean", axes=list(axes), keepdims=1
        )

    # -- the model -----------------------------------------------------------------

    def model(
        self,
        inputs: Sequence[tuple[str, Sequence[int | str]]],
        outputs: Sequence[tuple[str, str, Sequence[int | str]]],
        input_types: dict[str, int] | None = None,
    ) -> onnx.ModelProto:
        """Finish the graph: inputs as (name, shape), outputs as (value, name, shape);
        each output value is renamed to its public name by an Identity-free rewrite.
        Inputs are float32 unless `input_types` gives their TensorProto type."""
        input_types = input_types or {}
        renames = {value: name for value, name, _ in outputs}
        for node in self.nodes:
            node.output[:] = [renames.get(o, o) for o in node.output]
            node.input[:] = [renames.get(i, i) for i in node.input]
        graph = helper.make_graph(
            self.nodes,
            self.name,
            [
                helper.make_tensor_value_info(
                    n, input_types.get(n, TensorProto.FLOAT), s
                )
                for n, s in inputs
            ],
            [
                helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                for _, n, s in outputs
            ],
            self.initializers,
        )
        opsets = [helper.make_opsetid("", self.opset)]
        model = helper.make_model(
            graph, opset_imports=opsets, producer_name="ember.examples"
        )
        model.ir_version = helper.find_min_ir_version_for(opsets)
        onnx.checker.check_model(model, full_check=True)
        return model


# -- architectures ---------------------------------------------------------------------


def mobilenet_v2(
    batch: int = 1,
    size: int = 224,
    num_classes: int = 1000,
    width: float = 1.0,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """MobileNetV2 (Sandler et al. 2018) as torchvision exports it: a 3x3 stride-2
    stem, 17 inverted residual blocks, a 1x1 conv to 1280 channels, global average
    pooling, a Reshape to (batch, 1280) and a Gemm classifier. `width` scales the
    channel counts (rounded to multiples of 8) for small test models."""

    def channels(c: float) -> int:
        return max(8, int(c * width + 4) // 8 * 8)

    g = GraphBuilder("mobilenet_v2", seed, opset)

    def conv_bn(x, cin, cout, k, name, stride=1, groups=1, act=True):
        gain = 2.0 if act else 1.0
        y = g.conv(x, cin, cout, k, f"{name}.0", stride, groups=groups, gain=gain)
        y = g.batch_norm(y, cout, f"{name}.1")
        return g.relu6(y, name) if act else y

    cin = channels(32)
    x = conv_bn("input", 3, cin, 3, "features.0", stride=2)
    index = 1
    for t, c, n, s in MOBILENET_V2_SETTINGS:
        cout = channels(c)
        for i in range(n):
            stride = s if i == 0 else 1
            prefix = f"features.{index}.conv"
            hidden = cin * t
            y, j = x, 0
            if t != 1:
                y, j = conv_bn(y, cin, hidden, 1, f"{prefix}.{j}"), j + 1
            y = conv_bn(y, hidden, hidden, 3, f"{prefix}.{j}", stride, groups=hidden)
            y = g.conv(y, hidden, cout, 1, f"{prefix}.{j + 1}", gain=1.0)
            # Residual branches start small, as in trained networks, so the sum
            # of seven residual adds stays of order one.
            y = g.batch_norm(y, cout, f"{prefix}.{j + 2}", gamma=(0.3, 0.6))
            if stride == 1 and cin == cout:
                y = g.node("Add", [x, y], f"features.{index}/Add")
            x, cin = y, cout
            index += 1
    last = channels(1280) if width > 1.0 else 1280
    x = conv_bn(x, cin, last, 1, f"features.{index}")
    x = g.node("GlobalAveragePool", [x], "GlobalAveragePool")
    x = g.node("Reshape", [x, g.constant([batch, -1], np.int64)], "Reshape")
    x = g.gemm(x, last, num_classes, "classifier.1")
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


# torchvision's MobileNetV3 tables: input channels, kernel, expanded channels, output
# channels, squeeze-and-excitation, activation (RE: relu, HS: hard-swish), stride.
MOBILENET_V3_SETTINGS = {
    "large": [
        (16, 3, 16, 16, False, "RE", 1),
        (16, 3, 64, 24, False, "RE", 2),
        (24, 3, 72, 24, False, "RE", 1),
        (24, 5, 72, 40, True, "RE", 2),
        (40, 5, 120, 40, True, "RE", 1),
        (40, 5, 120, 40, True, "RE", 1),
        (40, 3, 240, 80, False, "HS", 2),
        (80, 3, 200, 80, False, "HS", 1),
        (80, 3, 184, 80, False, "HS", 1),
        (80, 3, 184, 80, False, "HS", 1),
        (80, 3, 480, 112, True, "HS", 1),
        (112, 3, 672, 112, True, "HS", 1),
        (112, 5, 672, 160, True, "HS", 2),
        (160, 5, 960, 160, True, "HS", 1),
        (160, 5, 960, 160, True, "HS", 1),
    ],
    "small": [
        (16, 3, 16, 16, True, "RE", 2),
        (16, 3, 72, 24, False, "RE", 2),
        (24, 3, 88, 24, False, "RE", 1),
        (24, 5, 96, 40, True, "HS", 2),
        (40, 5, 240, 40, True, "HS", 1),
        (40, 5, 240, 40, True, "HS", 1),
        (40, 5, 120, 48, True, "HS", 1),
        (48, 5, 144, 48, True, "HS", 1),
        (48, 5, 288, 96, True, "HS", 2),
        (96, 5, 576, 96, True, "HS", 1),
        (96, 5, 576, 96, True, "HS", 1),
    ],
}
MOBILENET_V3_LAST = {"large": 1280, "small": 1024}


def mobilenet_v3(
    variant: str = "large",
    batch: int = 1,
    size: int = 224,
    num_classes: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """MobileNetV3 (Howard et al. 2019), "large" or "small", as torchvision
    exports it: HardSwish and HardSigmoid (opset 14+), squeeze-and-excitation
    blocks (GlobalAveragePool, two 1x1 convs with bias, Relu, HardSigmoid, Mul),
    a 1x1 conv to 6x the last block's channels, global pooling, Flatten, and a
    classifier of Gemm, HardSwish, Gemm."""
    if variant not in MOBILENET_V3_SETTINGS:
        raise ValueError(f"expected variant 'large' or 'small', got {variant!r}")
    if opset < 14:
        raise ValueError(f"MobileNetV3 needs HardSwish: opset 14 or newer, got {opset}")
    g = GraphBuilder(f"mobilenet_v3_{variant}", seed, opset)

    def act(x: str, kind: str, name: str) -> str:
        if kind == "RE":
            return g.relu(x, name)
        return g.node("HardSwish", [x], f"{name}/HardSwish", 0.6 * g.moment_of(x))

    def conv_bn(x, cin, cout, k, name, stride=1, groups=1, kind=None):
        y = g.conv(x, cin, cout, k, f"{name}.0", stride, groups=groups)
        y = g.batch_norm(y, cout, f"{name}.1", gamma=(0.8, 1.2) if kind else (0.3, 0.6))
        return act(y, kind, name) if kind else y

    def squeeze_excite(x: str, channels: int, name: str) -> str:
        squeeze = max(8, int(channels // 4 + 4) // 8 * 8)
        s = g.node("GlobalAveragePool", [x], f"{name}/GlobalAveragePool")
        s = g.conv(s, channels, squeeze, 1, f"{name}.fc1", pad=0, bias=True)
        s = g.relu(s, f"{name}/relu")
        s = g.conv(s, squeeze, channels, 1, f"{name}.fc2", pad=0, bias=True, gain=1.0)
        s = g.node(
            "HardSigmoid", [s], f"{name}/HardSigmoid", 0.3, alpha=1.0 / 6, beta=0.5
        )
        return g.node("Mul", [x, s], f"{name}/Mul", 0.3 * g.moment_of(x))

    x = conv_bn("input", 3, 16, 3, "features.0", stride=2, kind="HS")
    cin = 16
    for index, (_, k, hidden, cout, se, kind, stride) in enumerate(
        MOBILENET_V3_SETTINGS[variant], start=1
    ):
        prefix, y, j = f"features.{index}.block", x, 0
        if hidden != cin:
            y, j = conv_bn(y, cin, hidden, 1, f"{prefix}.{j}", kind=kind), j + 1
        y = conv_bn(y, hidden, hidden, k, f"{prefix}.{j}", stride, hidden, kind)
        if se:
            y, j = squeeze_excite(y, hidden, f"{prefix}.{j + 1}"), j + 1
        y = conv_bn(y, hidden, cout, 1, f"{prefix}.{j + 1}")
        if stride == 1 and cin == cout:
            y = g.node("Add", [x, y], f"features.{index}/Add")
        x, cin = y, cout
    last_conv = 6 * cin
    x = conv_bn(x, cin, last_conv, 1, f"features.{index + 1}", kind="HS")
    x = g.node("GlobalAveragePool", [x], "avgpool/GlobalAveragePool")
    x = g.node("Flatten", [x], "Flatten", axis=1)
    hidden_classifier = MOBILENET_V3_LAST[variant]
    x = g.gemm(x, last_conv, hidden_classifier, "classifier.0", gain=2.0)
    x = act(x, "HS", "classifier.1")
    x = g.gemm(x, hidden_classifier, num_classes, "classifier.3")
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


def shufflenet_v2(
    batch: int = 1,
    size: int = 224,
    num_classes: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """ShuffleNetV2 x1.0 (Ma et al. 2018) as torchvision exports it: a 3x3
    stride-2 stem and MaxPool, three stages (4, 8, 4 units; 116, 232, 464
    channels) whose units Split the channels in two (`chunk`), run one half
    through 1x1 / depthwise 3x3 / 1x1 convs, Concat, and shuffle the channels
    (Reshape to 5-D, Transpose, Reshape); a 1x1 conv to 1024, ReduceMean over
    H and W (keepdims 0) and a Gemm."""
    g = GraphBuilder("shufflenet_v2", seed, opset)

    def conv_bn(x, cin, cout, k, name, stride=1, groups=1, relu=True):
        y = g.conv(
            x, cin, cout, k, name, stride, groups=groups, gain=2.0 if relu else 1.0
        )
        y = g.batch_norm(y, cout, f"{name}.bn")
        return g.relu(y, name) if relu else y

    def branch(x, cin, features, stride, name):
        y = conv_bn(x, cin, features, 1, f"{name}.0")
        y = conv_bn(y, features, features, 3, f"{name}.3", stride, features, relu=False)
        return conv_bn(y, features, features, 1, f"{name}.5")

    def shuffle(x, channels, hw, name):
        shape5 = g.constant([batch, 2, channels // 2, hw, hw], np.int64)
        x = g.node("Reshape", [x, shape5], f"{name}/Reshape")
        x = g.node("Transpose", [x], f"{name}/Transpose", perm=[0, 2, 1, 3, 4])
        shape4 = g.constant([batch, channels, hw, hw], np.int64)
        return g.node("Reshape", [x, shape4], f"{name}/Reshape_1")

    x = conv_bn("input", 3, 24, 3, "conv1.0", stride=2)
    x = g.node(
        "MaxPool",
        [x],
        "maxpool/MaxPool",
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1] * 4,
    )
    hw = (size + 1) // 2
    hw = (hw + 1) // 2
    cin = 24
    for stage, (repeats, cout) in enumerate(
        zip((4, 8, 4), (116, 232, 464), strict=True), start=2
    ):
        for unit in range(repeats):
            name = f"stage{stage}.{unit}"
            features = cout // 2
            if unit == 0:
                hw = (hw + 1) // 2
                left = conv_bn(x, cin, cin, 3, f"{name}.branch1.0", 2, cin, relu=False)
                left = conv_bn(left, cin, features, 1, f"{name}.branch1.2")
                right = branch(x, cin, features, 2, f"{name}.branch2")
            else:
                split = g.constant([features, features], np.int64)
                halves = [f"{name}/Split_output_0", f"{name}/Split_output_1"]
                g.nodes.append(
                    helper.make_node(
                        "Split", [x, split], halves, f"{name}/Split", axis=1
                    )
                )
                for h in halves:
                    g.moment[h] = g.moment_of(x)
                left = halves[0]
                right = branch(halves[1], features, features, 1, f"{name}.branch2")
            x = g.node("Concat", [left, right], f"{name}/Concat", axis=1)
            x = shuffle(x, cout, hw, name)
            cin = cout
    x = conv_bn(x, cin, 1024, 1, "conv5.0")
    if opset >= 18:
        axes = g.constant([2, 3], np.int64)
        x = g.node("ReduceMean", [x, axes], "ReduceMean", keepdims=0)
    else:
        x = g.node("ReduceMean", [x], "ReduceMean", axes=[2, 3], keepdims=0)
    x = g.gemm(x, 1024, num_classes, "fc")
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


def resnet18(
    batch: int = 1,
    size: int = 224,
    num_classes: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """ResNet-18 (He et al. 2016) as torchvision exports it: a 7x7 stride-2 stem,
    BatchNormalization, Relu, MaxPool 3x3 stride 2 pad 1, four stages of two basic
    blocks (1x1 stride-2 downsample conv on stages 2-4), GlobalAveragePool, Flatten
    and a Gemm classifier."""
    g = GraphBuilder("resnet18", seed, opset)
    x = g.conv("input", 3, 64, 7, "conv1", stride=2)
    x = g.relu(g.batch_norm(x, 64, "bn1"), "relu")
    # The max of nine rectified unit normals has a second moment near 2.5.
    x = g.node(
        "MaxPool",
        [x],
        "maxpool/MaxPool",
        5 * g.moment_of(x),
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1] * 4,
    )
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            name = f"layer{stage}.{block}"
            y = g.conv(x, cin, cout, 3, f"{name}.conv1", stride)
            y = g.relu(g.batch_norm(y, cout, f"{name}.bn1"), f"{name}/relu1")
            y = g.conv(y, cout, cout, 3, f"{name}.conv2", gain=1.0)
            y = g.batch_norm(y, cout, f"{name}.bn2", gamma=(0.3, 0.6))
            if stride != 1 or cin != cout:
                x = g.conv(x, cin, cout, 1, f"{name}.downsample.0", stride, gain=1.0)
                x = g.batch_norm(x, cout, f"{name}.downsample.1")
            x = g.relu(g.node("Add", [y, x], f"{name}/Add"), f"{name}/relu2")
            cin = cout
    x = g.node("GlobalAveragePool", [x], "avgpool/GlobalAveragePool")
    x = g.node("Flatten", [x], "Flatten", axis=1)
    x = g.gemm(x, 512, num_classes, "fc")
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


# torchvision's Fire modules per SqueezeNet version: squeeze, expand1x1 and
# expand3x3 channels, with "M" for a MaxPool 3x3 stride 2 ceil_mode; and each
# version's stem (output channels, kernel).
SQUEEZENET_SETTINGS = {
    "1.0": [
        (16, 64, 64),
        (16, 64, 64),
        (32, 128, 128),
        "M",
        (32, 128, 128),
        (48, 192, 192),
        (48, 192, 192),
        (64, 256, 256),
        "M",
        (64, 256, 256),
    ],
    "1.1": [
        (16, 64, 64),
        (16, 64, 64),
        "M",
        (32, 128, 128),
        (32, 128, 128),
        "M",
        (48, 192, 192),
        (48, 192, 192),
        (64, 256, 256),
        (64, 256, 256),
    ],
}
SQUEEZENET_STEM = {"1.0": (96, 7), "1.1": (64, 3)}


def squeezenet(
    version: str = "1.1",
    batch: int = 1,
    size: int = 224,
    num_classes: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """SqueezeNet (Iandola et al. 2016), "1.0" or "1.1", as torchvision exports
    it: convolutions with bias and no batch norm, an unpadded stride-2 stem and
    Relu, MaxPool 3x3 stride 2 with ceil_mode, Fire modules (a 1x1 squeeze conv
    and Relu, then 1x1 and padded 3x3 expand convs, each with Relu, Concat on
    channels), a 1x1 conv to the classes with Relu, GlobalAveragePool and
    Flatten (the classifier's Dropout is gone at inference)."""
    if version not in SQUEEZENET_SETTINGS:
        raise ValueError(f"expected version '1.0' or '1.1', got {version!r}")
    g = GraphBuilder(f"squeezenet{version.replace('.', '_')}", seed, opset)

    def conv_relu(x, cin, cout, k, name, stride=1, pad=None):
        # Without batch norms to rescale them, the convs after a MaxPool take
        # its growth of the second moment out of their weights instead.
        gain = 2.0 / g.moment_of(x)
        y = g.conv(x, cin, cout, k, name, stride, pad, gain=gain, bias=True)
        return g.relu(y, f"{name}_activation")

    def max_pool(x, name, growth=2.0):
        # The max of nine rectified normals has 5 times their second moment
        # (the stem's outputs are nearly independent); later, overlapping
        # receptive fields correlate the nine and the max grows about half as much.
        return g.node(
            "MaxPool",
            [x],
            f"{name}/MaxPool",
            growth * g.moment_of(x),
            ceil_mode=1,
            kernel_shape=[3, 3],
            pads=[0] * 4,
            strides=[2, 2],
        )

    stem, k = SQUEEZENET_STEM[version]
    x = conv_relu("input", 3, stem, k, "features.0", stride=2, pad=0)
    x, cin = max_pool(x, "features.2", growth=5.0), stem
    for index, fire in enumerate(SQUEEZENET_SETTINGS[version], start=3):
        if fire == "M":
            x = max_pool(x, f"features.{index}")
            continue
        squeeze, e1, e3 = fire
        name = f"features.{index}"
        s = conv_relu(x, cin, squeeze, 1, f"{name}.squeeze")
        left = conv_relu(s, squeeze, e1, 1, f"{name}.expand1x1")
        right = conv_relu(s, squeeze, e3, 3, f"{name}.expand3x3")
        x, cin = g.node("Concat", [left, right], f"{name}/Concat", axis=1), e1 + e3
    x = conv_relu(x, cin, num_classes, 1, "classifier.1")
    x = g.node("GlobalAveragePool", [x], "classifier.3/GlobalAveragePool")
    x = g.node("Flatten", [x], "Flatten", axis=1)
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


def _silu(g: GraphBuilder, x: str, name: str) -> str:
    """SiLU as torch exports it before opset 22: x * Sigmoid(x)."""
    s = g.node("Sigmoid", [x], f"{name}/Sigmoid", 0.3)
    return g.node("Mul", [x, s], f"{name}/Mul", 0.36 * g.moment_of(x))


def _squeeze_excite(
    g: GraphBuilder,
    x: str,
    channels: int,
    squeeze: int,
    name: str,
    act: Callable[[str, str], str],
) -> str:
    """torchvision's SqueezeExcitation: GlobalAveragePool, a 1x1 conv with bias
    to `squeeze` channels, `act`, a 1x1 conv back, Sigmoid, and the input
    scaled by it (Mul)."""
    s = g.node("GlobalAveragePool", [x], f"{name}/avgpool/GlobalAveragePool")
    s = g.conv(s, channels, squeeze, 1, f"{name}.fc1", pad=0, bias=True)
    s = act(s, f"{name}/activation")
    s = g.conv(s, squeeze, channels, 1, f"{name}.fc2", pad=0, bias=True, gain=1.0)
    s = g.node("Sigmoid", [s], f"{name}/scale_activation/Sigmoid", 0.3)
    return g.node("Mul", [s, x], f"{name}/Mul", 0.3 * g.moment_of(x))


# expansion, kernel, stride, input channels, output channels, layers:
# torchvision's EfficientNet-B0 stages.
EFFICIENTNET_B0_SETTINGS = [
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
]


def efficientnet_b0(
    batch: int = 1,
    size: int = 224,
    num_classes: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """EfficientNet-B0 (Tan and Le 2019) as torchvision exports it: SiLU as
    x * Sigmoid(x), a 3x3 stride-2 stem, 16 MBConv blocks (a 1x1 expansion
    conv unless the ratio is 1, a depthwise 3x3 or 5x5 conv, squeeze-and-
    excitation to a quarter of the block's input channels with SiLU and
    Sigmoid, a 1x1 projection conv without activation, and a residual Add
    where the shape allows), a 1x1 conv to 1280, GlobalAveragePool, Flatten
    and a Gemm (the Dropout and stochastic depth are gone at inference)."""
    g = GraphBuilder("efficientnet_b0", seed, opset)
    silu = functools.partial(_silu, g)

    def conv_bn(x, cin, cout, k, name, stride=1, groups=1, act=True):
        gain = 2.0 if act else 1.0
        y = g.conv(x, cin, cout, k, f"{name}.0", stride, groups=groups, gain=gain)
        y = g.batch_norm(y, cout, f"{name}.1", gamma=(0.8, 1.2) if act else (0.3, 0.6))
        return silu(y, f"{name}.2") if act else y

    x = conv_bn("input", 3, 32, 3, "features.0", stride=2)
    for stage, (t, k, s, cin, cout, layers) in enumerate(
        EFFICIENTNET_B0_SETTINGS, start=1
    ):
        for i in range(layers):
            cin, stride = (cin, s) if i == 0 else (cout, 1)
            prefix, hidden = f"features.{stage}.{i}.block", cin * t
            y, j = x, 0
            if hidden != cin:
                y, j = conv_bn(y, cin, hidden, 1, f"{prefix}.0"), 1
            y = conv_bn(y, hidden, hidden, k, f"{prefix}.{j}", stride, hidden)
            y = _squeeze_excite(
                g, y, hidden, max(1, cin // 4), f"{prefix}.{j + 1}", silu
            )
            y = conv_bn(y, hidden, cout, 1, f"{prefix}.{j + 2}", act=False)
            if stride == 1 and cin == cout:
                y = g.node("Add", [y, x], f"features.{stage}.{i}/Add")
            x = y
    x = conv_bn(x, 320, 1280, 1, "features.8")
    x = g.node("GlobalAveragePool", [x], "avgpool/GlobalAveragePool")
    x = g.node("Flatten", [x], "Flatten", axis=1)
    x = g.gemm(x, 1280, num_classes, "classifier.1")
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


def regnet_y_400mf(
    batch: int = 1,
    size: int = 224,
    num_classes: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """RegNetY-400MF (Radosavovic et al. 2020) as torchvision exports it: a 3x3
    stride-2 stem to 32 channels, four stages (widths 48, 104, 208, 440; 1, 3,
    6, 6 blocks; stride 2 at each stage's first block) of bottleneck blocks (a
    1x1 conv, a 3x3 conv in groups of 8 channels, squeeze-and-excitation to a
    quarter of the block's input width with Relu and Sigmoid, a 1x1 conv
    without activation; a 1x1 strided conv and BatchNormalization on the
    shortcut where the shape changes; Add, Relu), GlobalAveragePool, Flatten
    and a Gemm."""
    g = GraphBuilder("regnet_y_400mf", seed, opset)

    def conv_bn(x, cin, cout, k, name, stride=1, groups=1, relu=True, gamma=None):
        gain = 2.0 if relu else 1.0
        y = g.conv(x, cin, cout, k, f"{name}.0", stride, groups=groups, gain=gain)
        y = g.batch_norm(y, cout, f"{name}.1", gamma=gamma or (0.8, 1.2))
        return g.relu(y, f"{name}.2") if relu else y

    x, cin = conv_bn("input", 3, 32, 3, "stem", stride=2), 32
    for stage, (width, depth) in enumerate(
        zip((48, 104, 208, 440), (1, 3, 6, 6), strict=True), start=1
    ):
        for i in range(depth):
            stride = 2 if i == 0 else 1
            name = f"trunk_output.block{stage}.block{stage}-{i}"
            y = conv_bn(x, cin, width, 1, f"{name}.f.a")
            y = conv_bn(y, width, width, 3, f"{name}.f.b", stride, width // 8)
            squeeze = int(round(0.25 * cin))
            y = _squeeze_excite(g, y, width, squeeze, f"{name}.f.se", g.relu)
            # The residual branch starts small, as in trained networks.
            y = conv_bn(y, width, width, 1, f"{name}.f.c", relu=False, gamma=(0.3, 0.6))
            # Relu keeps an identity shortcut, already rectified, nearly whole.
            moment = g.moment_of(x) + g.moment_of(y) / 2
            if stride != 1 or cin != width:
                x = conv_bn(x, cin, width, 1, f"{name}.proj", stride, relu=False)
                moment = (g.moment_of(x) + g.moment_of(y)) / 2
            x = g.node("Add", [x, y], f"{name}/Add")
            x = g.node("Relu", [x], f"{name}.activation/Relu", moment)
            cin = width
    x = g.node("GlobalAveragePool", [x], "avgpool/GlobalAveragePool")
    x = g.node("Flatten", [x], "Flatten", axis=1)
    x = g.gemm(x, cin, num_classes, "fc")
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


def mlp(
    batch: int = 8,
    in_features: int = 64,
    hidden: Sequence[int] = (128, 64),
    num_classes: int = 10,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """A small multilayer perceptron: Gemm (transB=1) then MatMul + Add layers, each
    followed by Relu (a Dropout, identity at inference, after the first), a last
    linear layer and a Softmax over the classes. With `dynamic_batch` the batch
    dimension is the symbol "N" (a shape override at import sets it)."""
    g = GraphBuilder("mlp", seed, opset)
    x, k = "input", in_features
    for i, n in enumerate(hidden):
        name = f"fc{i}"
        x = g.gemm(x, k, n, name, gain=2.0) if i == 0 else g.linear(x, k, n, name, 2.0)
        x = g.relu(x, name)
        if i == 0:
            x = g.node("Dropout", [x], f"{name}/Dropout")
        k = n
    x = g.linear(x, k, num_classes, "head")
    x = g.node("Softmax", [x], "Softmax", axis=-1)
    n = "N" if dynamic_batch else batch
    return g.model([("input", [n, in_features])], [(x, "output", [n, num_classes])])


def transformer_block(
    batch: int = 1,
    seq: int = 64,
    d: int = 128,
    heads: int = 4,
    ffn: int | None = None,
    layer_norm: str = "decomposed",
    shape_ops: bool = False,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """A pre-norm transformer encoder block: x + attention(LN(x)), then
    h + MLP(LN(h)) with a Gelu written out through Erf.

    `layer_norm` is "decomposed" (ReduceMean, Sub, Mul, Add, Sqrt, Div, as older
    exporters write it) or "onnx" (the opset-17 LayerNormalization op). With
    `shape_ops` the head split's Reshape target is computed the way torch exports
    it (Shape, Gather, Unsqueeze, Concat) instead of a constant.
    """
    if d % heads:
        raise ValueError(f"expected d divisible by heads, got d={d}, heads={heads}")
    if layer_norm not in ("decomposed", "onnx"):
        raise ValueError(
            f"expected layer_norm 'decomposed' or 'onnx', got {layer_norm!r}"
        )
    if layer_norm == "onnx" and opset < 17:
        raise ValueError(f"LayerNormalization needs opset 17 or later, got {opset}")
    ffn = 4 * d if ffn is None else ffn
    g = GraphBuilder("transformer_block", seed, opset)
    decomposed = layer_norm == "decomposed"
    h = _layer_norm(g, "input", d, "ln1", decomposed)
    a = _attention(g, h, batch, seq, d, heads, "attn", shape_ops=shape_ops)
    x = g.node("Add", ["input", a], "attn/Add")
    h = _mlp(g, _layer_norm(g, x, d, "ln2", decomposed), d, ffn, "mlp")
    x = g.node("Add", [x, h], "mlp/Add")
    shape = [batch, seq, d]
    return g.model([("input", shape)], [(x, "output", shape)])


def _layer_norm(
    g: GraphBuilder, x: str, d: int, name: str, decomposed: bool = False
) -> str:
    """Layer norm over the last axis: the opset-17 LayerNormalization, as torch
    exports it, or `decomposed` (ReduceMean, Sub, Mul, Add, Sqrt, Div), as older
    exporters write it."""
    gamma = g.initializer(f"{name}.weight", g.uniform((d,), 0.8, 1.2))
    beta = g.initializer(f"{name}.bias", g.normal((d,), 0.05))
    if not decomposed:
        return g.node(
            "LayerNormalization",
            [x, gamma, beta],
            f"{name}/LayerNormalization",
            1.0,
            axis=-1,
            epsilon=1e-5,
        )
    mean = g.reduce_mean(x, [-1], f"{name}/mean")
    centred = g.node("Sub", [x, mean], f"{name}/Sub")
    square = g.node("Mul", [centred, centred], f"{name}/Mul")
    var = g.reduce_mean(square, [-1], f"{name}/var")
    eps = g.node("Add", [var, g.constant(1e-5)], f"{name}/Add")
    y = g.node("Div", [centred, g.node("Sqrt", [eps], f"{name}/Sqrt")], f"{name}/Div")
    y = g.node("Mul", [y, gamma], f"{name}/Mul_1", 1.0)
    return g.node("Add", [y, beta], f"{name}/Add_1", 1.0)


def _gelu(g: GraphBuilder, x: str, name: str) -> str:
    """Gelu written out through Erf, as exporters before opset 20 write it."""
    erf = g.node(
        "Erf",
        [g.node("Div", [x, g.constant(math.sqrt(2.0))], f"{name}/Div")],
        f"{name}/Erf",
    )
    y = g.node(
        "Mul", [x, g.node("Add", [erf, g.constant(1.0)], f"{name}/Add")], f"{name}/Mul"
    )
    return g.node("Mul", [y, g.constant(0.5)], f"{name}/Mul_1", 0.5 * g.moment_of(x))


def _attention(
    g: GraphBuilder,
    x: str,
    batch: int,
    seq: int,
    d: int,
    heads: int,
    name: str,
    additive_mask: str | None = None,
    causal: bool = False,
    shape_ops: bool = False,
) -> str:
    """Multi-head self-attention: Q, K, V projections (MatMul + Add), heads
    split by Reshape and Transpose, softmax(Q Kᵀ / √dh + mask) V, heads merged,
    the output projection. `additive_mask` is added to the scores (BERT's
    (1 - mask) * -10000); `causal` masks the future with Where on a constant
    boolean matrix, as GPT-2's export does. With `shape_ops` the head split's
    Reshape target is computed the way torch exports it (Shape, Gather,
    Unsqueeze, Concat) instead of a constant."""
    dh = d // heads

    def split_shape(t: str, what: str) -> str:
        if not shape_ops:
            return g.constant([batch, seq, heads, dh], np.int64)
        shape = g.node("Shape", [t], f"{name}/Shape_{what}")
        dims = [
            g.node(
                "Unsqueeze",
                [
                    g.node(
                        "Gather",
                        [shape, g.constant(axis, np.int64)],
                        f"{name}/Gather_{what}{axis}",
                        axis=0,
                    ),
                    g.constant([0], np.int64),
                ],
                f"{name}/Unsqueeze_{what}{axis}",
            )
            for axis in (0, 1)
        ]
        tail = g.constant([heads, dh], np.int64)
        return g.node("Concat", [*dims, tail], f"{name}/Concat_{what}", axis=0)

    def split(t: str, what: str) -> str:
        shape = split_shape(t, what)
        t = g.node("Reshape", [t, shape], f"{name}/Reshape_{what}")
        return g.node("Transpose", [t], f"{name}/Transpose_{what}", perm=[0, 2, 1, 3])

    q = split(g.linear(x, d, d, f"{name}.query"), "q")
    k = split(g.linear(x, d, d, f"{name}.key"), "k")
    v = split(g.linear(x, d, d, f"{name}.value"), "v")
    kt = g.node("Transpose", [k], f"{name}/Transpose_kt", perm=[0, 1, 3, 2])
    scores = g.node("MatMul", [q, kt], f"{name}/MatMul_qk")
    scores = g.node("Div", [scores, g.constant(math.sqrt(dh))], f"{name}/Div", 1.0)
    if additive_mask is not None:
        scores = g.node("Add", [scores, additive_mask], f"{name}/Add_mask", 1.0)
    if causal:
        allowed = g.initializer(
            f"{name}.causal", np.tril(np.ones((1, 1, seq, seq), dtype=bool))
        )
        low = g.constant(np.finfo(np.float32).min)
        scores = g.node("Where", [allowed, scores, low], f"{name}/Where", 1.0)
    probs = g.node("Softmax", [scores], f"{name}/Softmax", axis=-1)
    ctx = g.node("MatMul", [probs, v], f"{name}/MatMul_v")
    ctx = g.node("Transpose", [ctx], f"{name}/Transpose_ctx", perm=[0, 2, 1, 3])
    ctx = g.node(
        "Reshape", [ctx, g.constant([batch, seq, d], np.int64)], f"{name}/Reshape_ctx"
    )
    return g.linear(ctx, d, d, f"{name}.output")


def _mlp(g: GraphBuilder, x: str, d: int, ffn: int, name: str) -> str:
    h = _gelu(g, g.linear(x, d, ffn, f"{name}.fc1", gain=2.0), f"{name}/gelu")
    return g.linear(h, ffn, d, f"{name}.fc2")


def bert_encoder(
    batch: int = 1,
    seq: int = 128,
    d: int = 256,
    heads: int = 4,
    layers: int = 4,
    vocab: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """A BERT-style encoder as Hugging Face exports it: int64 `input_ids` and an
    int64 `attention_mask` (1 keeps a token, 0 masks it); word and position
    embeddings gathered and summed, LayerNorm, then `layers` post-norm layers
    (x = LN(x + attention(x)), x = LN(x + MLP(x)) with an Erf Gelu). The mask
    becomes (1 - mask) * -10000 added to every head's scores. Output: the last
    hidden state (batch, seq, d)."""
    if d % heads:
        raise ValueError(f"expected d divisible by heads, got d={d}, heads={heads}")
    g = GraphBuilder("bert_encoder", seed, opset)
    words = g.initializer("embeddings.word", g.normal((vocab, d), 1.0))
    x = g.node("Gather", [words, "input_ids"], "embeddings/Gather_word", 1.0, axis=0)
    positions = g.initializer("embeddings.position", g.normal((1, seq, d), 0.5))
    x = g.node("Add", [x, positions], "embeddings/Add")
    x = _layer_norm(g, x, d, "embeddings.LayerNorm")
    mask = g.node("Cast", ["attention_mask"], "mask/Cast", to=TensorProto.FLOAT)
    mask = g.node("Unsqueeze", [mask, g.constant([1, 2], np.int64)], "mask/Unsqueeze")
    mask = g.node("Sub", [g.constant(1.0), mask], "mask/Sub")
    mask = g.node("Mul", [mask, g.constant(-10000.0)], "mask/Mul")
    for i in range(layers):
        name = f"encoder.layer.{i}"
        a = _attention(g, x, batch, seq, d, heads, f"{name}.attention", mask)
        x = _layer_norm(g, g.node("Add", [x, a], f"{name}/Add_1"), d, f"{name}.ln1")
        m = _mlp(g, x, d, 4 * d, f"{name}.mlp")
        x = _layer_norm(g, g.node("Add", [x, m], f"{name}/Add_2"), d, f"{name}.ln2")
    return g.model(
        [("input_ids", [batch, seq]), ("attention_mask", [batch, seq])],
        [(x, "output", [batch, seq, d])],
        input_types={
            "input_ids": TensorProto.INT64,
            "attention_mask": TensorProto.INT64,
        },
    )


def gpt_block(
    batch: int = 1,
    seq: int = 64,
    d: int = 256,
    heads: int = 4,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """A GPT-2-style pre-norm decoder block: x + attention(LN(x)) with a causal
    mask (Where on a constant lower-triangular boolean matrix), then
    h + MLP(LN(h))."""
    if d % heads:
        raise ValueError(f"expected d divisible by heads, got d={d}, heads={heads}")
    g = GraphBuilder("gpt_block", seed, opset)
    h = _layer_norm(g, "input", d, "ln_1")
    x = g.node(
        "Add",
        ["input", _attention(g, h, batch, seq, d, heads, "attn", causal=True)],
        "attn/Add",
    )
    x = g.node(
        "Add", [x, _mlp(g, _layer_norm(g, x, d, "ln_2"), d, 4 * d, "mlp")], "mlp/Add"
    )
    shape = [batch, seq, d]
    return g.model([("input", shape)], [(x, "output", shape)])


def vit(
    batch: int = 1,
    size: int = 224,
    patch: int = 16,
    d: int = 768,
    heads: int = 12,
    layers: int = 12,
    num_classes: int = 1000,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """ViT (Dosovitskiy et al. 2021), B/16 by default, as torchvision exports
    it: a patch-size-strided Conv, the patches as tokens (Reshape, Transpose),
    a class token Concat-ed in front, position embeddings added, `layers`
    pre-norm encoder layers, a final LayerNorm, the class token taken out
    (Gather index 0 on the token axis) and a Gemm head."""
    if size % patch or d % heads:
        raise ValueError(
            f"expected size divisible by patch and d by heads, got {size}/{patch}, {d}/{heads}"
        )
    g = GraphBuilder("vit", seed, opset)
    tokens = (size // patch) ** 2
    x = g.conv(
        "input", 3, d, patch, "conv_proj", stride=patch, pad=0, gain=1.0, bias=True
    )
    x = g.node("Reshape", [x, g.constant([batch, d, tokens], np.int64)], "Reshape")
    x = g.node("Transpose", [x], "Transpose", perm=[0, 2, 1])
    cls = g.initializer("class_token", g.normal((batch, 1, d), 1.0))
    x = g.node("Concat", [cls, x], "Concat", axis=1)
    seq = tokens + 1
    x = g.node(
        "Add", [x, g.initializer("pos_embedding", g.normal((1, seq, d), 0.5))], "Add"
    )
    for i in range(layers):
        name = f"encoder.layers.{i}"
        a = _attention(
            g,
            _layer_norm(g, x, d, f"{name}.ln_1"),
            batch,
            seq,
            d,
            heads,
            f"{name}.self_attention",
        )
        x = g.node("Add", [x, a], f"{name}/Add_1")
        m = _mlp(g, _layer_norm(g, x, d, f"{name}.ln_2"), d, 4 * d, f"{name}.mlp")
        x = g.node("Add", [x, m], f"{name}/Add_2")
    x = _layer_norm(g, x, d, "encoder.ln")
    x = g.node("Gather", [x, g.constant(0, np.int64)], "Gather", axis=1)
    x = g.gemm(x, d, num_classes, "heads.head")
    return g.model(
        [("input", [batch, 3, size, size])], [(x, "output", [batch, num_classes])]
    )


def lstm(
    batch: int = 1,
    seq: int = 32,
    features: int = 64,
    hidden: int = 128,
    layers: int = 2,
    seed: int = 0,
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """A `layers`-deep unidirectional LSTM as torch exports nn.LSTM: one ONNX
    LSTM op per layer (gates i, o, f, c; W, R and both biases as
    initializers), its (seq, 1, batch, hidden) output squeezed for the next."""
    g = GraphBuilder("lstm", seed, opset)
    x, size = "input", features
    for i in range(layers):
        scale = 1.0 / math.sqrt(hidden)
        w = g.initializer(f"lstm.W{i}", g.uniform((1, 4 * hidden, size), -scale, scale))
        r = g.initializer(
            f"lstm.R{i}", g.uniform((1, 4 * hidden, hidden), -scale, scale)
        )
        b = g.initializer(f"lstm.B{i}", g.uniform((1, 8 * hidden), -scale, scale))
        outputs = [f"lstm{i}/Y", f"lstm{i}/Y_h", f"lstm{i}/Y_c"]
        g.nodes.append(
            helper.make_node(
                "LSTM", [x, w, r, b], outputs, f"lstm{i}/LSTM", hidden_size=hidden
            )
        )
        x = g.node(
            "Squeeze", [outputs[0], g.constant([1], np.int64)], f"lstm{i}/Squeeze"
        )
        size = hidden
    return g.model(
        [("input", [seq, batch, features])], [(x, "output", [seq, batch, hidden])]
    )


MODELS: dict[str, Callable[..., onnx.ModelProto]] = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3": mobilenet_v3,
    "shufflenet_v2": shufflenet_v2,
    "resnet18": resnet18,
    "squeezenet": squeezenet,
    "efficientnet_b0": efficientnet_b0,
    "regnet_y_400mf": regnet_y_400mf,
    "mlp": mlp,
    "transformer_block": transformer_block,
    "bert_encoder": bert_encoder,
    "gpt_block": gpt_block,
    "vit": vit,
    "lstm": lstm,
}


def random_input(model: onnx.ModelProto, seed: int = 1) -> dict[str, np.ndarray]:
    """Inputs for every graph input with a static shape: standard normal for
    floats; for integer inputs, token ids below the size of the table a Gather
    reads them into, or, for a name with "mask" in it, ones with the last
    quarter of each row 0 (padding)."""
    rng = np.random.default_rng(seed)
    tables = {i.name: list(i.dims) for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if any(not dim.HasField("dim_value") for dim in dims):
            raise ValueError(f"input {value.name!r} has a symbolic dimension")
        shape = [dim.dim_value for dim in dims]
        elem = value.type.tensor_type.elem_type
        if elem == TensorProto.FLOAT:
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
            continue
        dtype = helper.tensor_dtype_to_np_dtype(elem)
        if "mask" in value.name:
            mask = np.ones(shape, dtype)
            mask[..., shape[-1] - shape[-1] // 4 :] = 0
            feeds[value.name] = mask
            continue
        gathers = [
            n
            for n in model.graph.node
            if n.op_type == "Gather"
            and n.input[1] == value.name
            and n.input[0] in tables
        ]
        high = tables[gathers[0].input[0]][0] if gathers else 2
        feeds[value.name] = rng.integers(0, high, shape).astype(dtype)
    return feeds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write one of ember's example ONNX models (seeded random weights)."
    )
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    parser.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    parser.add_argument("--seed", type=int, default=0)
    for option in (
        "batch",
        "size",
        "num-classes",
        "seq",
        "d",
        "heads",
        "ffn",
        "layers",
        "vocab",
        "patch",
        "features",
        "hidden",
    ):
        parser.add_argument(f"--{option}", type=int)
    parser.add_argument("--width", type=float, help="mobilenet_v2 channel multiplier")
    parser.add_argument("--layer-norm", choices=["decomposed", "onnx"])
    parser.add_argument("--variant", choices=["large", "small"], help="mobilenet_v3")
    parser.add_argument("--version", choices=["1.0", "1.1"], help="squeezenet")
    parser.add_argument("--shape-ops", action="store_true", default=None)
    args = parser.parse_args(argv)

    build = MODELS[args.model]
    accepted = inspect.signature(build).parameters
    kwargs = {}
    for key, value in vars(args).items():
        if key in ("model", "output") or value is None:
            continue
        if key not in accepted:
            parser.error(f"--{key.replace('_', '-')} does not apply to {args.model}")
        kwargs[key] = value
    try:
        model = build(**kwargs)
    except ValueError as error:
        parser.error(str(error))
    onnx.save(model, args.output)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(
        f"wrote {args.output}: {args.model}, {len(model.graph.node)} nodes, {params:,} parameters"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Operator library: te computes and default CPU schedules for graph operators
(TVM's topi): what a graph op lowers to, and how it is scheduled.

Every builder takes te tensors in the graph's layouts (NCHW, row-major) and returns
a `Kernel` (`ember.topi.kernel`): its output tensor (graph layout), its
placeholders in call order (data inputs, weight placeholders, epilogue inputs), the
numpy functions that turn each graph-layout param into its placeholder's layout
(applied at compile time), and `schedule()`, the default schedule:

    from ember import te, topi
    x = te.placeholder((1, 64, 56, 56), name="x")
    k = topi.conv2d(x, (64, 64, 3, 3), strides=1, padding=1, bias=True,
                    epilogue=lambda v, idx: te.max(v, 0.0), name="conv")
    mod = ember.build(k.schedule(), k.args, name="conv")
    mod(x_np, k.transform("conv.weight", w_oihw), bias_np, y_np)

Anchor ops (conv2d, dense, matmul, batch_matmul) take
`epilogue(value, indices) -> expr`, applied in the stage that writes their output
(indices are the logical output indices: (n, c, h, w), (m, n), (b, m, n)), with
the tensors it reads in `epilogue_inputs`:

- `conv2d(data, weight_shape, *, strides, padding, dilation, groups, bias,
  epilogue, epilogue_inputs, name)`: NCHWc register-tiled for groups == 1, a
  specialised depthwise kernel, a direct kernel for other groups.
- `dense(data, weight_shape, *, bias, epilogue, epilogue_inputs, name)`:
  x (M, K) . w (N, K)^T + b.
- `matmul(a, b, *, epilogue, epilogue_inputs, name)` (numpy matmul semantics,
  batch broadcasting) and `batch_matmul(a, b, ...)` ((B, M, K) x (B, K, N)).
- `matmul_weight(a, weight_shape, ...)`: a (..., M, K) @ w (K, N), w known at
  compile time and packed as dense packs its weight.
"""

from ember.topi.conv2d import conv2d, conv2d_shape
from ember.topi.dense import batch_matmul, dense, matmul, matmul_shape, matmul_weight
from ember.topi.kernel import Kernel

__all__ = [
    "Kernel",
    "batch_matmul",
    "conv2d",
    "conv2d_shape",
    "dense",
    "matmul",
    "matmul_shape",
    "matmul_weight",
]

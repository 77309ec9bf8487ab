"""How to optimize a 3x3 convolution on a CPU with ember's schedules, step by step.

    .venv/bin/python examples/conv2d_schedule.py

A ResNet-style layer: input 1x64x28x28 (NCHW), 64 filters of 3x3, padding 1,
stride 1. As in the matmul tutorial (examples/matmul_schedule.py), the
computation is written once and each step changes only its schedule; every step
is checked against numpy. Padding is a stage of the computation:
Xp[n, c, y, x] = te.if_then_else(inside the image, X[n, c, y-1, x-1], 0.0).

1. naive. Y[n, oc, oh, ow] = sum over (ic, kh, kw) of Xp[n, ic, oh+kh, ow+kw] *
   W[oc, ic, kh, kw]: for every output element, 576 multiply-adds, one load of
   the output per step.

2. blocking. Work on a tile of 16 output channels x 14 output columns at a time,
   with the reduction (ic, kh, kw) outside the tile: each input element loaded is
   used 16 times (once per channel of the tile), each weight 14 times.

3. vectorize. Vectorize the 16 channels of the tile. In NCHW, neighbouring
   channels of Y are 28*28 floats apart: the lanes must be gathered and
   scattered, which costs more than the SIMD arithmetic saves (this step is
   slower than step 2). The layout is in the way.

4. pack. Put the channels innermost, in blocks of 16 (NCHW16c, TVM's NCHWc):
   data_pack[n, c, h, w, ci] = Xp[n, c*16 + ci, h, w] (padding and packing in
   one stage), weights (once, outside
   the call, as TVM's alter-layout does) to (OC/16, IC/16, 3, 3, 16i, 16o),
   and the result to (N, OC/16, OH, OW, 16), unpacked to NCHW at the end. Now
   the 16 output channels are one contiguous AVX-512 vector.

5. write cache. `cache_write(conv, "local")` computes the 14 x 16 tile in local
   accumulators attached at the width-outer loop, the reduction loops outside,
   the 14 columns unrolled and the 16 channels vectorized: 14 vector registers
   accumulate for the whole reduction and are written once.

6. parallel. Fuse the outer output loops (n, oc-block, oh) and run them on all
   cores; packing and unpacking in parallel too.

benchmarks/conv2d.py runs step 6 on 1x64x56x56 beside onnxruntime, PyTorch,
numpy and apache-tvm with the same schedule.
"""

import statistics
import time

import numpy as np

import ember
from ember import te

C, H, W = 64, 28, 28  # channels in and out, height and width
R = 3  # kernel size
CB = 16  # channels a block
OWB = 14  # output columns a register tile


def padded(X, y, x, c):
    """X[0, c, y-1, x-1] inside the image, 0 on the border of width 1."""
    inside = te.all(y >= 1, y < H + 1, x >= 1, x < W + 1)
    return te.if_then_else(inside, X[0, c, y - 1, x - 1], 0.0)


def direct():
    """The convolution as written, over NCHW."""
    X = te.placeholder((1, C, H, W), name="X")
    Wt = te.placeholder((C, C, R, R), name="W")
    Xp = te.compute(
        (1, C, H + 2, W + 2), lambda n, c, y, x: padded(X, y, x, c), name="pad"
    )
    rc = te.reduce_axis((0, C), name="rc")
    rh = te.reduce_axis((0, R), name="rh")
    rw = te.reduce_axis((0, R), name="rw")
    Y = te.compute(
        (1, C, H, W),
        lambda n, o, y, x: te.sum(
            Xp[n, rc, y + rh, x + rw] * Wt[o, rc, rh, rw], axis=[rc, rh, rw]
        ),
        name="Y",
    )
    return X, Wt, Y


def naive():
    X, Wt, Y = direct()
    return te.create_schedule(Y.op), [X, Wt, Y]


def blocking(vectorize: bool = False):
    X, Wt, Y = direct()
    s = te.create_schedule(Y.op)
    n, o, y, x = Y.op.axis
    rc, rh, rw = Y.op.reduce_axis
    oo, oi = s[Y].split(o, factor=CB)
    xo, xi = s[Y].split(x, factor=OWB)
    s[Y].reorder(n, oo, y, xo, rc, rh, rw, xi, oi)
    if vectorize:
        s[Y].vectorize(oi)
    return s, [X, Wt, Y]


def vectorized():
    return blocking(vectorize=True)


def nchwc():
    """The convolution over NCHW16c: pack the input, convolve, unpack."""
    X = te.placeholder((1, C, H, W), name="X")
    Wp = te.placeholder((C // CB, C // CB, R, R, CB, CB), name="Wp")
    D = te.compute(
        (1, C // CB, H + 2, W + 2, CB),
        lambda n, c, y, x, ci: padded(X, y, x, c * CB + ci),
        name="data_pack",
    )
    rco = te.reduce_axis((0, C // CB), name="rco")
    rh = te.reduce_axis((0, R), name="rh")
    rw = te.reduce_axis((0, R), name="rw")
    rci = te.reduce_axis((0, CB), name="rci")
    Z = te.compute(
        (1, C // CB, H, W, CB),
        lambda n, o, y, x, oi: te.sum(
            D[n, rco, y + rh, x + rw, rci] * Wp[o, rco, rh, rw, rci, oi],
            axis=[rco, rh, rw, rci],
        ),
        name="conv",
    )
    Y = te.compute(
        (1, C, H, W), lambda n, o, y, x: Z[n, o // CB, y, x, o % CB], name="Y"
    )
    return X, Wp, D, Z, Y


def pack():
    X, Wp, D, Z, Y = nchwc()
    s = te.create_schedule(Y.op)
    s[D].vectorize(D.op.axis[4])
    n, o, y, x, oi = Z.op.axis
    xo, xi = s[Z].split(x, factor=OWB)
    s[Z].reorder(n, o, y, xo, *Z.op.reduce_axis, xi, oi)
    s[Z].vectorize(oi)
    return s, [X, Wp, Y]


def write_cache(parallel: bool = False):
    X, Wp, D, Z, Y = nchwc()
    s = te.create_schedule(Y.op)
    s[D].vectorize(D.op.axis[4])
    ZL = s.cache_write(Z, "local")
    n, o, y, x, oi = s[Z].op.axis
    xo, xi = s[Z].split(x, factor=OWB)
    s[Z].unroll(xi)
    s[Z].vectorize(oi)
    s[ZL].compute_at(s[Z], xo)
    nl, ol, yl, xl, oil = s[ZL].op.axis
    s[ZL].reorder(nl, ol, yl, *s[ZL].op.reduce_axis, xl, oil)
    s[ZL].unroll(xl)
    s[ZL].vectorize(oil)
    if parallel:
        s[Z].parallel(s[Z].fuse(n, o, y))
        dn, dc, dy, _, _ = s[D].op.axis
        s[D].parallel(s[D].fuse(dn, dc, dy))
        yn, yo, _, _ = s[Y].op.axis
        s[Y].parallel(s[Y].fuse(yn, yo))
    return s, [X, Wp, Y]


def parallel():
    return write_cache(parallel=True)


STEPS = [
    ("1 naive", naive, False),
    ("2 blocking", blocking, False),
    ("3 vectorize", vectorized, False),
    ("4 pack", pack, True),
    ("5 write cache", write_cache, True),
    ("6 parallel", parallel, True),
]


def pack_weights(w: np.ndarray) -> np.ndarray:
    """OIHW to (O/16, I/16, KH, KW, 16i, 16o)."""
    blocks = w.reshape(C // CB, CB, C // CB, CB, R, R)
    return np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 3, 1))


def pad(x: np.ndarray) -> np.ndarray:
    """numpy's zero padding of H and W by 1."""
    return np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))


def reference(xp: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy's convolution: im2col, then one matmul."""
    windows = np.lib.stride_tricks.sliding_window_view(xp[0], (R, R), axis=(1, 2))
    cols = windows.transpose(0, 3, 4, 1, 2).reshape(C * R * R, H * W)
    return (w.reshape(C, -1) @ cols).reshape(1, C, H, W)


def median_time(fn, repeat: int = 5) -> float:
    """The median of `repeat` timed calls of fn(), after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (1, C, H, W)).astype(np.float32)
    w = rng.uniform(-1, 1, (C, C, R, R)).astype(np.float32)
    wp = pack_weights(w)
    expected = reference(pad(x.astype(np.float64)), w.astype(np.float64))
    flops = 2.0 * C * H * W * C * R * R
    print(
        f"conv2d 1x{C}x{H}x{W}, {C} filters {R}x{R}, pad 1, fp32; numpy im2col: ",
        end="",
    )
    print(f"{flops / median_time(lambda: reference(pad(x), w)) / 1e9:.1f} GFLOPS")
    print(f"{'step':16} {'compile':>8} {'time':>10} {'GFLOPS':>8}  check")
    failed = []
    for label, make, packed in STEPS:
        weights = wp if packed else w
        try:
            start = time.perf_counter()
            s, args = make()
            mod = ember.build(s, args, name="conv2d")
            compile_s = time.perf_counter() - start
            y = np.zeros((1, C, H, W), np.float32)
            mod(x, weights, y)
        except Exception as exc:
            print(f"{label:16} failed: {type(exc).__name__}: {exc}")
            failed.append(label)
            continue
        if not np.allclose(y, expected, rtol=1e-4, atol=1e-4):
            print(f"{label:16} WRONG: max |error| {np.abs(y - expected).max():.3g}")
            failed.append(label)
            continue
        seconds = median_time(lambda mod=mod, weights=weights, y=y: mod(x, weights, y))
        print(
            f"{label:16} {compile_s:7.2f}s {seconds * 1e3:8.2f}ms "
            f"{flops / seconds / 1e9:8.1f}  ok"
        )
    if failed:
        raise SystemExit(f"steps that did not run right: {', '.join(failed)}")


if __name__ == "__main__":
    main()

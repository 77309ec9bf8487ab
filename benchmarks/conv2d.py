"""fp32 conv2d side by side: onnxruntime, PyTorch, numpy, apache-tvm and ember.

    .venv/bin/python benchmarks/conv2d.py            # 1x64x56x56, 64 filters 3x3
    .venv/bin/python benchmarks/conv2d.py --quick    # 1x32x28x28, 32 filters 3x3
    .venv/bin/python benchmarks/conv2d.py --ow-block 7

NCHW input, OIHW weights, padding 1, stride 1 (a ResNet-18 3x3 layer). The
reference is onnxruntime; every row is checked against numpy first. GFLOPS count
the true convolution, 2 * N * OC * OH * OW * IC * KH * KW.

ember and apache-tvm run the same NCHWc schedule (TVM's x86 conv2d_NCHWc):

    weights     packed outside the timed call to (OC/16, IC/16, KH, KW, 16i, 16o),
                as TVM's alter-layout does once per model
    data_pack   pads and packs the NCHW input in one stage, (N, IC/16, H+2, W+2,
                16), zero outside the image by te.if_then_else: outer loops
                fused and parallel, the 16 channels vectorized
    conv        (N, OC/16, OH, OW, 16) = sum over (ic_outer, kh, kw, ic_inner);
                cache_write local, output width split by 14: the (14 x 16) tile
                of accumulators is computed at the width-outer loop with the
                reduction loops outside, 14 unrolled, 16 output channels vectorized;
                the output's (n, oc_outer, oh) fused and parallel
    unpack      back to NCHW, (n, oc) fused and parallel

The target ember's team works to: ember scheduled >= 0.5 x onnxruntime.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from common import (
    Impl,
    Prepared,
    add_timing_options,
    check_target,
    cores,
    describe_machine,
    ember_threads,
    openblas_threads,
    run_all,
    threads_note,
    timing_options,
    tvm_target,
)

REFERENCE = "onnxruntime"
EMBER_SCHEDULED = "ember scheduled"
TVM_SCHEDULED = "apache-tvm same schedule"
KH = KW = 3
PAD = 1


def pad_into(x: np.ndarray, xp: np.ndarray) -> np.ndarray:
    """Copy NCHW `x` into the interior of the zeroed, PAD-wider `xp`."""
    xp[:, :, PAD:-PAD, PAD:-PAD] = x
    return xp


def inside(te, y, x, h: int, w: int):
    """Whether padded coordinates (y, x) fall on the image (ember's te or TVM's)."""
    return te.all(y >= PAD, y < h + PAD, x >= PAD, x < w + PAD)


def pack_weights(w: np.ndarray, block: int) -> np.ndarray:
    """OIHW to (O/b, I/b, KH, KW, b_in, b_out), TVM's OIHW{b}i{b}o."""
    oc, ic, kh, kw = w.shape
    packed = w.reshape(oc // block, block, ic // block, block, kh, kw)
    return np.ascontiguousarray(packed.transpose(0, 2, 4, 5, 3, 1))


def conv_numpy(xp: np.ndarray, w: np.ndarray) -> np.ndarray:
    """im2col + one matmul over a padded NCHW input (N = 1)."""
    oc, ic, kh, kw = w.shape
    windows = np.lib.stride_tricks.sliding_window_view(xp[0], (kh, kw), axis=(1, 2))
    oh, ow = windows.shape[1:3]
    cols = windows.transpose(0, 3, 4, 1, 2).reshape(ic * kh * kw, oh * ow)
    return (w.reshape(oc, -1) @ cols).reshape(1, oc, oh, ow)


def ember_naive(n: int, ic: int, h: int, w: int, oc: int):
    """ember's default schedule of the direct convolution, padding as a stage."""
    from ember import te

    X = te.placeholder((n, ic, h, w), name="X")
    W = te.placeholder((oc, ic, KH, KW), name="W")
    Xp = te.compute(
        (n, ic, h + 2 * PAD, w + 2 * PAD),
        lambda b, c, y, x: te.if_then_else(
            inside(te, y, x, h, w), X[b, c, y - PAD, x - PAD], 0.0
        ),
        name="pad",
    )
    rc = te.reduce_axis((0, ic), name="rc")
    rh = te.reduce_axis((0, KH), name="rh")
    rw = te.reduce_axis((0, KW), name="rw")
    Y = te.compute(
        (n, oc, h, w),
        lambda b, o, y, x: te.sum(
            Xp[b, rc, y + rh, x + rw] * W[o, rc, rh, rw], axis=[rc, rh, rw]
        ),
        name="Y",
    )
    return te.create_schedule(Y.op), [X, W, Y]


def ember_scheduled(n: int, ic: int, h: int, w: int, oc: int, cb: int, owb: int):
    """The NCHWc schedule of the module docstring; `cb` channels a block, `owb`
    output columns a register tile."""
    from ember import te

    X = te.placeholder((n, ic, h, w), name="X")
    Wp = te.placeholder((oc // cb, ic // cb, KH, KW, cb, cb), name="Wp")
    D = te.compute(
        (n, ic // cb, h + 2 * PAD, w + 2 * PAD, cb),
        lambda b, c, y, x, ci: te.if_then_else(
            inside(te, y, x, h, w), X[b, c * cb + ci, y - PAD, x - PAD], 0.0
        ),
        name="data_pack",
    )
    rco = te.reduce_axis((0, ic // cb), name="rco")
    rh = te.reduce_axis((0, KH), name="rh")
    rw = te.reduce_axis((0, KW), name="rw")
    rci = te.reduce_axis((0, cb), name="rci")
    Z = te.compute(
        (n, oc // cb, h, w, cb),
        lambda b, o, y, x, oi: te.sum(
            D[b, rco, y + rh, x + rw, rci] * Wp[o, rco, rh, rw, rci, oi],
            axis=[rco, rh, rw, rci],
        ),
        name="conv",
    )
    Y = te.compute(
        (n, oc, h, w), lambda b, o, y, x: Z[b, o // cb, y, x, o % cb], name="Y"
    )
    s = te.create_schedule(Y.op)

    b, c, y, x, ci = s[D].op.axis
    s[D].parallel(s[D].fuse(b, c, y))
    s[D].vectorize(ci)

    ZL = s.cache_write(Z, "local")
    b, o, y, x, oi = s[Z].op.axis
    xo, xi = s[Z].split(x, factor=owb)
    s[Z].reorder(b, o, y, xo, xi, oi)
    s[Z].unroll(xi)
    s[Z].vectorize(oi)
    s[Z].parallel(s[Z].fuse(b, o, y))
    s[ZL].compute_at(s[Z], xo)
    bl, ol, yl, xl, oil = s[ZL].op.axis
    rco, rh, rw, rci = s[ZL].op.reduce_axis
    s[ZL].reorder(bl, ol, yl, rco, rh, rw, rci, xl, oil)
    s[ZL].unroll(xl)
    s[ZL].vectorize(oil)

    b, o, _, _ = s[Y].op.axis
    s[Y].parallel(s[Y].fuse(b, o))
    return s, [X, Wp, Y]


def tvm_scheduled(n: int, ic: int, h: int, w: int, oc: int, cb: int, owb: int):
    """The same schedule in apache-tvm 0.27 (te.create_prim_func + s_tir.Schedule).

    As in the matmul, TIR's cache_write returns the copy-out block: it is the one
    split and fused, and the computing block is attached to it."""
    import tvm
    from tvm import te
    from tvm.tirx import indexdiv, indexmod

    X = te.placeholder((n, ic, h, w), name="X")
    Wp = te.placeholder((oc // cb, ic // cb, KH, KW, cb, cb), name="Wp")
    D = te.compute(
        (n, ic // cb, h + 2 * PAD, w + 2 * PAD, cb),
        lambda b, c, y, x, ci: te.if_then_else(
            inside(te, y, x, h, w), X[b, c * cb + ci, y - PAD, x - PAD], 0.0
        ),
        name="data_pack",
    )
    rco = te.reduce_axis((0, ic // cb), name="rco")
    rh = te.reduce_axis((0, KH), name="rh")
    rw = te.reduce_axis((0, KW), name="rw")
    rci = te.reduce_axis((0, cb), name="rci")
    Z = te.compute(
        (n, oc // cb, h, w, cb),
        lambda b, o, y, x, oi: te.sum(
            D[b, rco, y + rh, x + rw, rci] * Wp[o, rco, rh, rw, rci, oi],
            axis=[rco, rh, rw, rci],
        ),
        name="conv",
    )
    Y = te.compute(
        (n, oc, h, w),
        lambda b, o, y, x: Z[b, indexdiv(o, cb), y, x, indexmod(o, cb)],
        name="Y",
    )
    sch = tvm.s_tir.Schedule(te.create_prim_func([X, Wp, Y]))

    pack = sch.get_sblock("data_pack")
    b, c, y, x, ci = sch.get_loops(pack)
    sch.parallel(sch.fuse(b, c, y))
    sch.vectorize(ci)

    conv = sch.get_sblock("conv")
    copy_out = sch.cache_write(conv, 0, "local")
    b, o, y, x, oi = sch.get_loops(copy_out)
    xo, xi = sch.split(x, [None, owb])
    sch.reorder(b, o, y, xo, xi, oi)
    sch.unroll(xi)
    sch.vectorize(oi)
    sch.parallel(sch.fuse(b, o, y))
    sch.compute_at(conv, xo)
    # compute_at drops the attached block's unit loops (n, oc_outer, oh here)
    xl, oil, rco, rh, rw, rci = sch.get_loops(conv)[-6:]
    sch.reorder(rco, rh, rw, rci, xl, oil)
    sch.unroll(xl)
    sch.vectorize(oil)
    sch.decompose_reduction(conv, rco)

    b, o, _, _ = sch.get_loops(sch.get_sblock("Y"))
    sch.parallel(sch.fuse(b, o))
    return sch.mod


def implementations(x: np.ndarray, w: np.ndarray, cb: int, owb: int) -> list[Impl]:
    n, ic, h, wd = x.shape
    oc = w.shape[0]
    out_shape = (n, oc, h, wd)

    def padded() -> np.ndarray:
        return np.zeros((n, ic, h + 2 * PAD, wd + 2 * PAD), np.float32)

    def ort_setup() -> Prepared:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper

        node = helper.make_node(
            "Conv",
            ["X", "W"],
            ["Y"],
            kernel_shape=[KH, KW],
            pads=[PAD] * 4,
            strides=[1, 1],
        )
        graph = helper.make_graph(
            [node],
            "conv2d",
            [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(out_shape))],
            initializer=[numpy_helper.from_array(w, "W")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        y = np.empty(out_shape, np.float32)
        binding = session.io_binding()
        binding.bind_cpu_input("X", x)
        binding.bind_output("Y", "cpu", 0, np.float32, list(out_shape), y.ctypes.data)
        return Prepared(
            lambda: session.run_with_iobinding(binding),
            lambda: y,
            f"onnxruntime {ort.__version__}, Conv (weights an initializer)",
        )

    def torch_setup() -> Prepared:
        import torch
        import torch.nn.functional as F

        torch.set_num_threads(cores())
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        result = {}

        def run() -> None:
            with torch.no_grad():
                result["y"] = F.conv2d(tx, tw, padding=PAD)

        return Prepared(
            run,
            lambda: result["y"].numpy(),
            f"torch {torch.__version__}, F.conv2d",
        )

    def torch_threads() -> str:
        import torch

        return str(torch.get_num_threads())

    def numpy_setup() -> Prepared:
        xp = padded()
        result = {}

        def run() -> None:
            result["y"] = conv_numpy(pad_into(x, xp), w)

        return Prepared(run, lambda: result["y"], "pad + im2col + matmul")

    def tvm_setup() -> Prepared:
        import tvm

        start = time.perf_counter()
        lib = tvm.compile(tvm_scheduled(n, ic, h, wd, oc, cb, owb), target=tvm_target())
        compile_s = time.perf_counter() - start
        dev = tvm.cpu()
        tx = tvm.runtime.tensor(x, dev)
        twp = tvm.runtime.tensor(pack_weights(w, cb), dev)
        ty = tvm.runtime.tensor(np.zeros(out_shape, np.float32), dev)
        return Prepared(
            lambda: lib(tx, twp, ty),
            ty.numpy,
            f"tvm {tvm.__version__}, cb={cb} owb={owb}, compile {compile_s:.2f} s",
        )

    def tvm_threads() -> str:
        import tvm

        return str(tvm.runtime.num_threads())

    def ember_setup(scheduled: bool) -> Prepared:
        import ember

        start = time.perf_counter()
        if scheduled:
            s, args = ember_scheduled(n, ic, h, wd, oc, cb, owb)
            weights = pack_weights(w, cb)
        else:
            s, args = ember_naive(n, ic, h, wd, oc)
            weights = w
        mod = ember.build(s, args, name="conv2d")
        compile_s = time.perf_counter() - start
        y = np.empty(out_shape, np.float32)
        tile = f"cb={cb} owb={owb}, " if scheduled else ""
        return Prepared(
            lambda: mod(x, weights, y),
            lambda: y,
            f"{tile}compile {compile_s:.2f} s",
            {"compile_s": compile_s},
        )

    return [
        Impl(REFERENCE, ort_setup, lambda: str(cores())),
        Impl("torch", torch_setup, torch_threads),
        Impl("numpy im2col", numpy_setup, openblas_threads),
        Impl(TVM_SCHEDULED, tvm_setup, tvm_threads),
        Impl("ember naive", lambda: ember_setup(False), ember_threads),
        Impl(EMBER_SCHEDULED, lambda: ember_setup(True), ember_threads),
    ]


def main(argv: list[str] | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=64, help="IC = OC")
    parser.add_argument("--size", type=int, default=56, help="H = W")
    parser.add_argument(
        "--quick", action="store_true", help="1x32x28x28 and shorter timing"
    )
    parser.add_argument(
        "--channel-block", type=int, default=16, help="channels a block (NCHWc)"
    )
    parser.add_argument(
        "--ow-block", type=int, default=14, help="output columns a register tile"
    )
    add_timing_options(parser)
    opts = parser.parse_args(argv)
    channels, size = (32, 28) if opts.quick else (opts.channels, opts.size)
    cb, owb = opts.channel_block, opts.ow_block
    if cb <= 0 or channels % cb:
        parser.error(f"--channel-block {cb} must divide the channels {channels}")
    if owb <= 0 or size % owb:
        parser.error(f"--ow-block {owb} must divide the output width {size}")

    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (1, channels, size, size)).astype(np.float32)
    w = rng.uniform(-1, 1, (channels, channels, KH, KW)).astype(np.float32)
    xp64 = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (PAD, PAD), (PAD, PAD)))
    expected = conv_numpy(xp64, w.astype(np.float64)).astype(np.float32)
    flops = 2.0 * channels * size * size * channels * KH * KW

    print(
        f"fp32 conv2d NCHW 1x{channels}x{size}x{size}, {channels} filters "
        f"{KH}x{KW}, pad {PAD}, stride 1 ({flops / 1e9:.3f} GFLOP)"
    )
    print(describe_machine())
    print(threads_note())
    print(
        "ember and TVM scheduled: weights packed outside the timed call (as an "
        "alter-layout would); padding inside it, by te.if_then_else in the "
        "data_pack stage."
    )
    rows = run_all(
        implementations(x, w, cb, owb),
        expected,
        flops,
        REFERENCE,
        **timing_options(opts),
    )
    scheduled = next(r for r in rows if r.name == EMBER_SCHEDULED)
    if "compile_s" in scheduled.extra:
        print(
            f"ember scheduled compile time: {scheduled.extra['compile_s']:.2f} s "
            "(built after the naive kernel)"
        )
    print("targets:")
    print(check_target(rows, EMBER_SCHEDULED, REFERENCE, 0.5))
    return rows


if __name__ == "__main__":
    main()

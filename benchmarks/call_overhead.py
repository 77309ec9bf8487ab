"""Call overhead side by side: one tiny kernel, called from Python, in each runtime.

    .venv/bin/python benchmarks/call_overhead.py                # n = 1 and n = 16
    .venv/bin/python benchmarks/call_overhead.py --sizes 1,4,16
    .venv/bin/python benchmarks/call_overhead.py --quick        # n = 16, short

The kernel is C = A + B over n float32s, so small that a call measures the round
trip Python -> native code -> Python and nothing else. Rows:

    ember NDArray          f(a, b, c) on ember NDArrays, f = mod["vecadd"] (reference)
    ember numpy            f(a, b, c) on numpy arrays (zero-copy, DLPack)
    ember torch            f(a, b, c) on torch tensors: each call fills their DLTensors
                           through torch's DLPack C exchange API (zero-copy)
    ember torch from_dlpack once
                           f(a, b, c) on NDArray views of torch tensors made once
    ember time_evaluator   mod.time_evaluator("vecadd", cpu()) on NDArrays: its
                           own timing loop, in Python, so the same round trip
    apache-tvm function    tvm.compile of the same TE vecadd, on tvm tensors
    apache-tvm Relax VM    relax.VirtualMachine running R.add (allocates C)
    onnxruntime run        session.run of an ONNX Add model (allocates C)
    onnxruntime iobinding  run_with_iobinding, C bound once
    torch add              torch.add(a, b, out=c), eager
    numpy add              np.add(a, b, out=c): the floor of a Python -> C call

Every row is checked against numpy before it is timed. The target ember's team
works to: ember NDArray, ember numpy and ember torch at most 2 us a call (median;
the torch row says "cannot tell" where torch is absent)."""

from __future__ import annotations

import argparse

import numpy as np
from common import (
    Impl,
    Prepared,
    Timing,
    add_timing_options,
    check_latency,
    describe_machine,
    print_latency_table,
    run_all,
    timing_options,
    tvm_target,
)

REFERENCE = "ember NDArray"
EMBER_NUMPY = "ember numpy"
EMBER_TORCH = "ember torch"
LIMIT = 2e-6


def ember_vecadd(n: int):
    """The kernel, compiled by ember with its default schedule."""
    import ember
    from ember import te

    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")


def implementations(a: np.ndarray, b: np.ndarray) -> list[Impl]:
    (n,) = a.shape

    def ember_setup(kind: str) -> Prepared:
        import ember.runtime as rt

        mod = ember_vecadd(n)
        f = mod["vecadd"]
        c = np.zeros(n, np.float32)
        if kind == "ndarray":
            args = (rt.array(a), rt.array(b), rt.array(c))
            fetch = args[2].numpy
        elif kind == "numpy":
            args = (a.copy(), b.copy(), c)
            fetch = lambda: c  # noqa: E731
        else:
            import torch

            args = (torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c))
            fetch = lambda: c  # noqa: E731
            if kind == "torch once":  # NDArray views made once, then reused
                args = tuple(map(rt.from_dlpack, args))
        return Prepared(lambda: f(*args), fetch, f'f = mod["vecadd"], {kind}')

    def time_evaluator_setup() -> Prepared:
        import ember.runtime as rt

        mod = ember_vecadd(n)
        args = (rt.array(a), rt.array(b), rt.empty(n))

        def timing(min_time: float, repeat: int) -> Timing:
            # number grows until a measurement lasts min_time, as measure() does
            timer = mod.time_evaluator(
                "vecadd",
                rt.cpu(),
                number=1,
                repeat=repeat,
                min_repeat_ms=min_time * 1e3,
            )
            result = timer(*args)
            return Timing(result.median, result.min, result.max, 0, repeat)

        return Prepared(
            lambda: mod["vecadd"](*args),
            args[2].numpy,
            "its own loop; min_repeat_ms = the harness' min time",
            timing=timing,
        )

    def tvm_setup() -> Prepared:
        import tvm
        from tvm import te

        A = te.placeholder((n,), name="A")
        B = te.placeholder((n,), name="B")
        C = te.compute((n,), lambda i: A[i] + B[i], name="C")
        prim = te.create_prim_func([A, B, C]).with_attr("global_symbol", "vecadd")
        lib = tvm.compile(tvm.IRModule({"vecadd": prim}), target=tvm_target())
        f = lib["vecadd"]
        dev = tvm.cpu()
        ta, tb = tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev)
        tc = tvm.runtime.tensor(np.zeros(n, np.float32), dev)
        return Prepared(
            lambda: f(ta, tb, tc), tc.numpy, f"tvm {tvm.__version__}, tvm tensors"
        )

    def relax_setup() -> Prepared:
        import tvm
        from tvm import relax

        bb = relax.BlockBuilder()
        x = relax.Var(name="x", ty=relax.TensorType(shape=(n,), dtype="float32"))
        y = relax.Var(name="y", ty=relax.TensorType(shape=(n,), dtype="float32"))
        with bb.function("main", [x, y]):
            with bb.dataflow():
                out = bb.emit_output(bb.emit(relax.op.add(x, y)))
            bb.emit_func_output(out)
        target = tvm.target.Target(tvm_target())  # relax.build reads target.keys
        executable = tvm.compile(bb.get(), target=target)
        dev = tvm.cpu()
        main = relax.VirtualMachine(executable, dev)["main"]
        ta, tb = tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev)
        last = []

        def run():
            last[:] = [main(ta, tb)]

        return Prepared(run, lambda: last[0].numpy(), "vm['main'](a, b) -> new C")

    def ort_session():
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        vector = [n]
        graph = helper.make_graph(
            [helper.make_node("Add", ["A", "B"], ["C"])],
            "vecadd",
            [
                helper.make_tensor_value_info("A", TensorProto.FLOAT, vector),
                helper.make_tensor_value_info("B", TensorProto.FLOAT, vector),
            ],
            [helper.make_tensor_value_info("C", TensorProto.FLOAT, vector)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return ort, session

    def ort_run_setup() -> Prepared:
        ort, session = ort_session()
        feeds = {"A": a, "B": b}
        last = []

        def run():
            last[:] = session.run(None, feeds)

        return Prepared(
            run, lambda: last[0], f"onnxruntime {ort.__version__}, run -> new C"
        )

    def ort_binding_setup() -> Prepared:
        ort, session = ort_session()
        c = np.zeros(n, np.float32)
        binding = session.io_binding()
        binding.bind_cpu_input("A", a)
        binding.bind_cpu_input("B", b)
        binding.bind_output("C", "cpu", 0, np.float32, [n], c.ctypes.data)
        return Prepared(
            lambda: session.run_with_iobinding(binding), lambda: c, "C bound once"
        )

    def torch_setup() -> Prepared:
        import torch

        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        c = np.zeros(n, np.float32)
        tc = torch.from_numpy(c)
        return Prepared(
            lambda: torch.add(ta, tb, out=tc),
            lambda: c,
            f"torch {torch.__version__}, out=",
        )

    def numpy_setup() -> Prepared:
        c = np.zeros(n, np.float32)
        return Prepared(lambda: np.add(a, b, out=c), lambda: c, "out=")

    return [
        Impl(REFERENCE, lambda: ember_setup("ndarray")),
        Impl(EMBER_NUMPY, lambda: ember_setup("numpy")),
        Impl(EMBER_TORCH, lambda: ember_setup("torch")),
        Impl("ember torch from_dlpack once", lambda: ember_setup("torch once")),
        Impl("ember time_evaluator", time_evaluator_setup),
        Impl("apache-tvm function", tvm_setup),
        Impl("apache-tvm Relax VM", relax_setup),
        Impl("onnxruntime run", ort_run_setup),
        Impl("onnxruntime iobinding", ort_binding_setup),
        Impl("torch add", torch_setup),
        Impl("numpy add", numpy_setup),
    ]


def main(argv: list[str] | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1,16", help="comma-separated vector lengths n"
    )
    parser.add_argument(
        "--quick", action="store_true", help="n = 16 only and shorter timing"
    )
    add_timing_options(parser)
    opts = parser.parse_args(argv)
    try:
        sizes = [16] if opts.quick else [int(s) for s in opts.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes expects integers like 1,16, got {opts.sizes!r}")
    if any(n <= 0 for n in sizes):
        parser.error(f"--sizes must be positive, got {opts.sizes!r}")

    print("call overhead: C = A + B over n float32s, called from Python")
    print(describe_machine())
    rng = np.random.default_rng(0)
    rows: dict[int, list] = {}
    for n in sizes:
        a = rng.uniform(-1, 1, n).astype(np.float32)
        b = rng.uniform(-1, 1, n).astype(np.float32)
        print(f"\nn = {n}")
        rows[n] = run_all(
            implementations(a, b),
            a + b,
            0.0,
            REFERENCE,
            table=print_latency_table,
            **timing_options(opts),
        )
    print("targets:")
    for n, sized in rows.items():
        for name in (REFERENCE, EMBER_NUMPY, EMBER_TORCH):
            print(f"{check_latency(sized, name, LIMIT)} [n = {n}]")
    return [row for sized in rows.values() for row in sized]


if __name__ == "__main__":
    main()

"""One graph executor from many threads, and executors freed when dropped.

``GraphModule(...)(**inputs)`` must give every thread its own right answer;
the stateful ``set_input/run/get_output`` used from several threads must give
each a right answer or an EmberError, never another thread's result. A
dropped executor must be freed by reference counting alone (no cycle)."""

import gc
import threading
import weakref

import numpy as np
import pytest

import ember
from ember.backends.kernel_cache import CompileCache
from ember.runtime import EmberError, GraphModule, cpu, save_param_dict

IR = """
func.func @main(%x: tensor<1x8x8x8xf32> {ember.name = "x"}) -> tensor<1x16xf32> {
  %w = graph.param "w" : tensor<16x8x3x3xf32>
  %b = graph.param "b" : tensor<16xf32>
  %c = graph.conv2d %x, %w, %b {padding = [1, 1, 1, 1]} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r = graph.relu %c : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %g = graph.global_avg_pool2d %r : (tensor<1x16x8x8xf32>) -> tensor<1x16x1x1xf32>
  %f = graph.flatten %g {axis = 1} : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32>
  func.return %f : tensor<1x16xf32>
}
"""
RNG = np.random.default_rng(0)
PARAMS = {
    "w": RNG.standard_normal((16, 8, 3, 3)).astype("float32"),
    "b": RNG.standard_normal(16).astype("float32"),
}
THREADS = 8
CALLS = 100
XS = [RNG.standard_normal((1, 8, 8, 8)).astype("float32") for _ in range(THREADS)]


def _reference(x):
    """conv2d 3x3 pad 1 + bias, relu, global average pool, in numpy."""
    padded = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((16, 8, 8), "float64")
    for i in range(3):
        for j in range(3):
            patch = padded[:, i : i + 8, j : j + 8]
            out += np.einsum("oc,chw->ohw", PARAMS["w"][:, :, i, j], patch)
    out += PARAMS["b"][:, None, None]
    return np.maximum(out, 0).mean(axis=(1, 2))[None].astype("float32")


WANT = [_reference(x) for x in XS]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """The model compiled once (kernels cached for the module's tests)."""
    cache = CompileCache(tmp_path_factory.mktemp("cache"))
    return ember.compile_model(IR, PARAMS, cache=cache)


def _right(y, i) -> bool:
    return np.allclose(y, WANT[i], rtol=1e-4, atol=1e-5)


def _in_threads(work) -> list:
    """Run ``work(i)`` in THREADS threads started together; their results."""
    results: list = [None] * THREADS
    start = threading.Barrier(THREADS)

    def body(i):
        start.wait()
        results[i] = work(i)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_calls_from_many_threads_are_all_right(lib):
    m = GraphModule(lib["default"](cpu()))

    def work(i):
        wrong = 0
        for k in range(CALLS):
            # positional and by name; an unaligned, a strided input
            buffer = np.empty(XS[i].size * 2 + 1, "float32")
            if k % 4 == 0:
                (y,) = m(XS[i])
            elif k % 4 == 1:
                (y,) = m(x=XS[i])
            elif k % 4 == 2:
                unaligned = buffer[1 : XS[i].size + 1].reshape(XS[i].shape)
                unaligned[...] = XS[i]
                (y,) = m(x=unaligned)
            else:
                strided = buffer[1::2].reshape(XS[i].shape)
                strided[...] = XS[i]
                (y,) = m(x=strided)
            wrong += not _right(y, i)
        return wrong

    assert _in_threads(work) == [0] * THREADS
    # the pool holds at most one workspace per call that ran at once
    assert 1 <= len(m.module._free_workspaces) <= THREADS


def test_stateful_use_from_many_threads_is_right_or_an_error(lib):
    """Before the fix, about 1 in 200 of these results was another
    thread's, silently; now each is the thread's own or an EmberError."""
    m = GraphModule(lib["default"](cpu()))

    def work(i):
        wrong = errors = 0
        for _ in range(CALLS):
            try:
                m.set_input("x", XS[i])
                m.run()
                y = m.get_output(0).numpy()
            except EmberError as e:
                assert "one thread's at a time" in str(e)
                errors += 1
                continue
            wrong += not _right(y, i)
        return wrong, errors

    results = _in_threads(work)
    assert [wrong for wrong, _ in results] == [0] * THREADS
    # One thread at a time still works, whichever thread it is.
    for i in range(3):
        got = []
        thread = threading.Thread(target=lambda i=i, got=got: got.append(m(XS[i])))
        thread.start()
        thread.join()
        m.run(x=XS[i])
        assert _right(m.get_output(0).numpy(), i) and _right(got[0][0], i)


def test_outputs_a_thread_holds_are_not_overwritten(lib):
    m = GraphModule(lib["default"](cpu()))
    m.run(x=XS[0])
    held = m.get_output(0)
    other = threading.Thread(target=lambda: m.run(x=XS[1]))
    other.start()
    other.join()
    assert _right(held.numpy(), 0)
    with pytest.raises(EmberError, match="another thread has set this graph"):
        m.get_output(0)
    with pytest.raises(EmberError, match="another thread has set this graph"):
        m.run()
    m.set_input("x", XS[2])  # taking it back
    m.run()
    assert _right(m.get_output(0).numpy(), 2)


def test_call_errors(lib):
    m = GraphModule(lib["default"](cpu()))
    with pytest.raises(EmberError, match=r"input\(s\) 'x' not given"):
        m()
    with pytest.raises(EmberError, match="model has no input named 'y'"):
        m(XS[0], y=XS[0])
    with pytest.raises(EmberError, match="input 'x' given twice"):
        m(XS[0], x=XS[0])
    with pytest.raises(EmberError, match="takes 1 input"):
        m(XS[0], XS[0])
    with pytest.raises(
        EmberError, match=r"expected float32 \(1, 8, 8, 8\), got float64"
    ):
        m(x=XS[0].astype("float64"))


def test_a_call_needs_the_params_and_load_params_waits_for_no_run(tmp_path):
    cache = CompileCache(tmp_path)
    separate = ember.compile_model(IR, PARAMS, embed_params=False, cache=cache)
    m = GraphModule(separate["default"](cpu()))
    with pytest.raises(EmberError, match="are not loaded"):
        m(x=XS[0])
    executor = m.module
    executor._calls = 1  # as while a call runs in another thread
    with pytest.raises(EmberError, match="load_params: the model is running"):
        m.load_params(save_param_dict(separate.params))
    executor._calls = 0
    m.load_params(save_param_dict(separate.params))
    assert _right(m(x=XS[3])[0], 3)


@pytest.mark.parametrize("kind", ["compiled", "loaded"])
def test_a_dropped_executor_is_freed_without_the_collector(lib, tmp_path, kind):
    if kind == "loaded":
        lib.export_library(tmp_path / "model.so")
        lib = ember.runtime.load_module(tmp_path / "model.so")
    gc.collect()
    gc.disable()
    try:
        for k in range(20):
            executor = lib["default"](cpu())
            m = GraphModule(executor)
            m.run(x=XS[0])
            if k % 2:  # with pooled workspaces too
                m(x=XS[1])
            executor["run"]  # a function handed out, then dropped too
            alive = weakref.ref(executor)
            del executor, m
            assert alive() is None, "the executor is kept by a reference cycle"
    finally:
        gc.enable()


def test_calls_from_many_threads_on_a_remote_executor(tmp_path):
    """A remote executor's calls keep each one's set_input, run and
    get_output together (the server runs one request at a time)."""
    import handmade_model as hm
    from rpc_util import rpc_server

    import ember.rpc

    KEY = "a key of sixteen bytes or more"
    params = hm.random_params()
    xs = [np.full((1, hm.K), i, "float32") for i in range(THREADS)]
    hm.build(params).export_library(tmp_path / "mlp.so")
    with (
        rpc_server(key=KEY) as server,
        ember.rpc.connect("127.0.0.1", server.port, key=KEY) as remote,
    ):
        remote.upload(tmp_path / "mlp.so")
        m = GraphModule(remote.load_module("mlp.so")["default"](remote.cpu()))

        def work(i):
            want = hm.reference(xs[i], params)
            return sum(
                not np.allclose(m(x=xs[i])[0], want, rtol=1e-5, atol=1e-5)
                for _ in range(10)
            )

        assert _in_threads(work) == [0] * THREADS

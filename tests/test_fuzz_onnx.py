"""Fuzzing `ember-compile`: small valid ONNX models, mutated.

Seeds are five tiny models built with onnx.helper (conv+relu+pool,
matmul+add+softmax, a Shape/Gather/Concat/Reshape chain, Cast/Where/Expand,
ConstantOfShape/Range). Each case applies zero to three mutations to the
ModelProto: dims (0, negative, huge, symbolic, absent), elem types (unknown
numbers, other types), attribute values (extreme, of the wrong kind, absent,
unknown), node inputs/outputs (dangling, duplicated, empty), op types, nodes
and initializers removed or duplicated, initializer data truncated or too
long, opset and IR versions, a graph without outputs, huge ConstantOfShape and
Range requests. The model is written to a file and compiled with
`ember-compile model.onnx -o model.so -qq`.

The oracle: exit 0, and then the library loads and runs on random inputs, and
where onnxruntime also runs the mutated model the outputs agree (dtype, shape,
values within tolerance); a library whose buffers this machine cannot allocate
may refuse to load, and one with inputs past `RUN_ELEMENTS` is not run; or exit 1/2 with one non-empty line on stderr. No
"Traceback", no run past `CASE_TIMEOUT`, no death by a signal (subprocess
slice). Exit 3 (an internal error) is a failure when the exception was raised
in ember's code; one raised inside a dependency's Python code (onnx, numpy,
llvmlite) is tolerated, as the ember-opt fuzzer tolerates xDSL's, and shows in
the catalogue.

    pytest tests/test_fuzz_onnx.py                        # the quick, fixed slice
    EMBER_FUZZ_EXAMPLES=300 EMBER_FUZZ_SEED=7 pytest tests/test_fuzz_onnx.py
    pytest -m slow tests/test_fuzz_onnx.py                # the nightly size
    python tests/test_fuzz_onnx.py --examples 300 --seed 7   # a catalogue
"""

import argparse
import contextlib
import dataclasses
import io
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from fuzz_util import SEED, fuzz_given
from onnx import TensorProto, helper, numpy_helper

from ember.tools.ember_compile import main as ember_compile_main

CASE_TIMEOUT = 30.0
QUICK_EXAMPLES = 150
NIGHTLY_EXAMPLES = 1000
EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", QUICK_EXAMPLES))
RUN_ELEMENTS = 2**22  # inputs larger than this are compiled, not run
F = TensorProto.FLOAT
I64 = TensorProto.INT64


# ---------------------------------------------------------------- the seeds


def _model(nodes, inputs, outputs, inits, opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "seed",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8
    )


def conv_relu_pool() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    return _model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node(
                "MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2]
            ),
        ],
        [("x", F, [1, 2, 6, 6])],
        [("y", F, [1, 3, 3, 3])],
        {
            "w": rng.standard_normal((3, 2, 3, 3)).astype("float32"),
            "b": rng.standard_normal(3).astype("float32"),
        },
    )


def matmul_add_softmax() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    return _model(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("Softmax", ["a"], ["y"], axis=-1),
        ],
        [("x", F, [2, 4])],
        [("y", F, [2, 3])],
        {
            "w": rng.standard_normal((4, 3)).astype("float32"),
            "b": rng.standard_normal(3).astype("float32"),
        },
    )


def shape_chain() -> onnx.ModelProto:
    return _model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "i"], ["g"], axis=0),
            helper.make_node("Concat", ["g", "minus1"], ["shape"], axis=0),
            helper.make_node("Reshape", ["x", "shape"], ["r"]),
            helper.make_node("Unsqueeze", ["r", "ax"], ["y"]),
        ],
        [("x", F, [2, 3, 4])],
        [("y", F, [2, 1, 12])],
        {
            "i": np.array([0], "int64"),
            "minus1": np.array([-1], "int64"),
            "ax": np.array([1], "int64"),
        },
    )


def cast_where_expand() -> onnx.ModelProto:
    return _model(
        [
            helper.make_node("Greater", ["x", "zero"], ["pos"]),
            helper.make_node("Neg", ["x"], ["n"]),
            helper.make_node("Where", ["pos", "x", "n"], ["w"]),
            helper.make_node("Expand", ["w", "shape"], ["e"]),
            helper.make_node("Cast", ["e"], ["y"], to=TensorProto.INT32),
        ],
        [("x", F, [3, 1])],
        [("y", TensorProto.INT32, [2, 3, 4])],
        {
            "zero": np.array(0.0, "float32"),
            "shape": np.array([2, 3, 4], "int64"),
        },
    )


def constant_of_shape_range() -> onnx.ModelProto:
    one = numpy_helper.from_array(np.array([1.5], "float32"), "value")
    return _model(
        [
            helper.make_node("ConstantOfShape", ["shape"], ["c"], value=one),
            helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
            helper.make_node("Cast", ["r"], ["rf"], to=F),
            helper.make_node("Add", ["c", "rf"], ["a"]),
            helper.make_node("Mul", ["a", "x"], ["y"]),
        ],
        [("x", F, [4])],
        [("y", F, [4])],
        {
            "shape": np.array([4], "int64"),
            "start": np.array(0, "int64"),
            "limit": np.array(4, "int64"),
            "delta": np.array(1, "int64"),
        },
    )


SEEDS: dict[str, Callable[[], onnx.ModelProto]] = {
    f.__name__: f
    for f in (
        conv_relu_pool,
        matmul_add_softmax,
        shape_chain,
        cast_where_expand,
        constant_of_shape_range,
    )
}


# ---------------------------------------------------------------- mutations

_INT64 = (0, -1, 1, 2, 3, -2, 7, 2**31 - 1, 2**31, 2**40, 2**63 - 1, -(2**63))
_DIMS = (0, -1, -7, 2**31, 2**40, 2**62, 2**63 - 1, 1, 5)
_ELEM_TYPES = (0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 16, 17, 23, 99, 1000)
_FLOATS = (0.0, -1.0, 1e30, -1e30, float("nan"), float("inf"), 1e-45, 2.5)
_STRINGS = (b"", b"bogus", b"NOTSET", b"SAME_UPPER", b"\xff\xfe", b"constant")
_OPS = (
    "Relu", "Add", "MatMul", "Conv", "Gather", "Reshape", "Concat", "Softmax",
    "Cast", "Where", "Expand", "Range", "ConstantOfShape", "Transpose", "Bogus",
    "Identity", "Shape", "MaxPool", "Slice", "Squeeze", "", "TopK", "Pad",
)  # fmt: skip
_NAMES = ("", "nowhere", "x", "y", "w", "shape")


def _value_infos(m: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    return [*m.graph.input, *m.graph.output, *m.graph.value_info]


def mutate_dim(r: random.Random, m: onnx.ModelProto) -> None:
    vi = r.choice(_value_infos(m))
    dims = vi.type.tensor_type.shape.dim
    if not dims:
        return
    d = r.choice(dims)
    roll = r.random()
    if roll < 0.6:
        d.dim_value = r.choice(_DIMS)
    elif roll < 0.8:
        d.dim_param = r.choice(("N", "batch", "", "x"))
    elif roll < 0.9:
        d.Clear()
    else:
        vi.type.tensor_type.ClearField("shape")


def mutate_elem_type(r: random.Random, m: onnx.ModelProto) -> None:
    if r.random() < 0.7:
        r.choice(_value_infos(m)).type.tensor_type.elem_type = r.choice(_ELEM_TYPES)
    elif m.graph.initializer:
        r.choice(m.graph.initializer).data_type = r.choice(_ELEM_TYPES)


def _attribute_value(r: random.Random, a: onnx.AttributeProto) -> None:
    roll = r.random()
    if roll < 0.15:  # a value of another kind
        kind = r.choice(("i", "f", "s", "ints", "t"))
        name = a.name
        a.Clear()
        new = {
            "i": lambda: helper.make_attribute(name, r.choice(_INT64)),
            "f": lambda: helper.make_attribute(name, r.choice(_FLOATS)),
            "s": lambda: helper.make_attribute(name, r.choice(_STRINGS)),
            "ints": lambda: helper.make_attribute(name, [r.choice(_INT64)] * 2),
            "t": lambda: helper.make_attribute(
                name, numpy_helper.from_array(np.zeros(2, "int32"))
            ),
        }[kind]()
        a.CopyFrom(new)
    elif a.type == onnx.AttributeProto.INT:
        a.i = r.choice(_INT64)
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = r.choice(_FLOATS)
    elif a.type == onnx.AttributeProto.STRING:
        a.s = r.choice(_STRINGS)
    elif a.type == onnx.AttributeProto.INTS:
        n = r.choice((0, 1, 2, 3, 4, 5, 8, len(a.ints)))
        a.ClearField("ints")
        a.ints.extend(r.choice(_INT64) for _ in range(n))
    elif a.type == onnx.AttributeProto.TENSOR:
        roll = r.random()
        if roll < 0.3:
            a.t.data_type = r.choice(_ELEM_TYPES)
        elif roll < 0.6:
            a.t.dims[:] = [r.choice(_DIMS)]
        else:
            a.t.raw_data = a.t.raw_data[: r.randrange(len(a.t.raw_data) + 1)]


_ATTRS = {
    "pads": [[1, 1, 1, 1]], "strides": [[2, 2]], "kernel_shape": [[2, 2]],
    "axis": [0], "to": [TensorProto.FLOAT], "auto_pad": [b"SAME_LOWER"],
    "group": [2], "dilations": [[2, 2]], "ceil_mode": [1], "bogus": [1],
    "storage_order": [1], "perm": [[1, 0]],
}  # fmt: skip


def mutate_attribute(r: random.Random, m: onnx.ModelProto) -> None:
    if not m.graph.node:  # an earlier mutation removed every node
        return
    node = r.choice(m.graph.node)
    roll = r.random()
    if node.attribute and roll < 0.65:
        _attribute_value(r, r.choice(node.attribute))
    elif node.attribute and roll < 0.8:
        del node.attribute[r.randrange(len(node.attribute))]
    else:
        name = r.choice(sorted(_ATTRS))
        node.attribute.append(helper.make_attribute(name, r.choice(_ATTRS[name])))


def mutate_names(r: random.Random, m: onnx.ModelProto) -> None:
    if not m.graph.node:  # an earlier mutation removed every node
        return
    node = r.choice(m.graph.node)
    field = node.input if (r.random() < 0.6 and node.input) else node.output
    roll = r.random()
    if roll < 0.5 and field:
        i = r.randrange(len(field))
        other = r.choice([*_NAMES, *(n for nd in m.graph.node for n in nd.output)])
        field[i] = other
    elif roll < 0.7:
        field.append(r.choice(_NAMES) if r.random() < 0.5 else (field or ["x"])[0])
    elif field:
        del field[r.randrange(len(field))]
    if r.random() < 0.15 and m.graph.output:  # a graph output nothing makes
        r.choice(m.graph.output).name = r.choice(_NAMES)


def mutate_op_type(r: random.Random, m: onnx.ModelProto) -> None:
    if not m.graph.node:  # an earlier mutation removed every node
        return
    node = r.choice(m.graph.node)
    if r.random() < 0.85:
        node.op_type = r.choice(_OPS)
    else:
        node.domain = r.choice(("com.bogus", "ai.onnx.ml", "com.microsoft"))


def mutate_structure(r: random.Random, m: onnx.ModelProto) -> None:
    g = m.graph
    what = r.choice(("del node", "dup node", "del init", "dup init", "swap nodes"))
    if what == "del node" and g.node:
        del g.node[r.randrange(len(g.node))]
    elif what == "dup node":
        g.node.insert(r.randrange(len(g.node) + 1), r.choice(g.node))
    elif what == "del init" and g.initializer:
        del g.initializer[r.randrange(len(g.initializer))]
    elif what == "dup init" and g.initializer:
        init = onnx.TensorProto()
        init.CopyFrom(r.choice(g.initializer))
        if r.random() < 0.5:  # the same name, other data
            init.raw_data = init.raw_data[: len(init.raw_data) // 2]
        g.initializer.append(init)
    elif len(g.node) > 1:
        i, j = r.sample(range(len(g.node)), 2)
        a, b = onnx.NodeProto(), onnx.NodeProto()
        a.CopyFrom(g.node[i])
        b.CopyFrom(g.node[j])
        g.node[i].CopyFrom(b)
        g.node[j].CopyFrom(a)


def mutate_data(r: random.Random, m: onnx.ModelProto) -> None:
    if not m.graph.initializer:
        return
    init = r.choice(m.graph.initializer)
    roll = r.random()
    if roll < 0.4:
        init.raw_data = init.raw_data[: r.randrange(len(init.raw_data) + 1)]
    elif roll < 0.6:
        init.raw_data += bytes(r.choice((1, 3, 4, 8)))
    elif roll < 0.8:
        init.dims[:] = [r.choice(_DIMS) for _ in range(r.choice((0, 1, 2)))]
    else:  # data in a typed field and in raw_data, or only a typed field
        init.int64_data.extend([1, 2])
        if r.random() < 0.5:
            init.ClearField("raw_data")


def mutate_version(r: random.Random, m: onnx.ModelProto) -> None:
    roll = r.random()
    if roll < 0.5:
        m.opset_import[0].version = r.choice((0, 1, 5, 7, 9, 11, 13, 18, 21, 99))
    elif roll < 0.6:
        del m.opset_import[:]
    elif roll < 0.7:
        m.opset_import.append(helper.make_opsetid("", r.choice((1, 13))))
    else:
        m.ir_version = r.choice((0, 1, 3, 4, 10, 11, 99, -1))


def mutate_outputs(r: random.Random, m: onnx.ModelProto) -> None:
    if r.random() < 0.5:
        del m.graph.output[:]
    elif r.random() < 0.5:
        del m.graph.input[:]
    else:  # an initializer or an intermediate as a graph output
        name = r.choice([*(n for nd in m.graph.node for n in nd.output)])
        m.graph.output.append(helper.make_tensor_value_info(name, F, None))


_HUGE = {
    "shape": ([2**31], [2**20, 2**20], [2**62], [-1], [0], [4, 0], []),
    "limit": (2**40, 2**62, -(2**40), 0),
    "delta": (0, -1, 2**62),
    "start": (-(2**62), 2**62),
}


def mutate_huge(r: random.Random, m: onnx.ModelProto) -> None:
    """A huge or degenerate ConstantOfShape shape, Range or Expand extent."""
    inits = [i for i in m.graph.initializer if i.name in _HUGE]
    if not inits:
        return
    init = r.choice(inits)
    value = np.array(r.choice(_HUGE[init.name]), "int64")
    if init.dims:  # keep a vector a vector
        value = value.reshape(-1)
    init.CopyFrom(numpy_helper.from_array(value, init.name))


MUTATIONS: dict[str, Callable[[random.Random, onnx.ModelProto], None]] = {
    "dim": mutate_dim,
    "elem-type": mutate_elem_type,
    "attribute": mutate_attribute,
    "names": mutate_names,
    "op-type": mutate_op_type,
    "structure": mutate_structure,
    "data": mutate_data,
    "version": mutate_version,
    "outputs": mutate_outputs,
    "huge": mutate_huge,
}


@dataclasses.dataclass
class Case:
    model: onnx.ModelProto
    origin: str

    def repro(self) -> str:
        try:
            text = onnx.printer.to_text(self.model)
        except Exception:  # a model too broken to print: its protobuf text
            text = str(self.model)
        return f"--- {self.origin}\n{text}"


def random_case(r: random.Random) -> Case:
    name = r.choice(sorted(SEEDS))
    model = SEEDS[name]()
    names = r.sample(sorted(MUTATIONS), r.choice((0, 1, 1, 1, 2, 2, 3)))
    for mutation in names:
        # an earlier mutation may have left nothing to mutate (r.choice of [])
        with contextlib.suppress(IndexError):
            MUTATIONS[mutation](r, model)
    return Case(model, f"{name} mutated by {', '.join(names) or 'nothing'}")


# ---------------------------------------------------------------- running, the oracle


@dataclasses.dataclass
class Outcome:
    rc: int
    stderr: str
    seconds: float
    problem: str | None = None  # a run or a comparison that failed after exit 0


class CaseTimeout(BaseException):
    """Raised by the alarm in a case that runs too long (a BaseException, so that
    ember's handlers do not catch it)."""


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout


def _argv(d: Path) -> list[str]:
    return [str(d / "model.onnx"), "-o", str(d / "model.so"), "-qq"]


def run_in_process(case: Case, d: Path) -> Outcome:
    (d / "model.onnx").write_bytes(case.model.SerializeToString())
    err = io.StringIO()
    start = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                rc = ember_compile_main(_argv(d))
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
        problem = run_library(case, d) if rc == 0 else None
    except CaseTimeout:
        rc, problem = -signal.SIGALRM, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return Outcome(rc, err.getvalue(), time.perf_counter() - start, problem)


def run_subprocess(case: Case, d: Path) -> Outcome:
    (d / "model.onnx").write_bytes(case.model.SerializeToString())
    cmd = [sys.executable, "-m", "ember.tools.ember_compile", *_argv(d)]
    env = {k: v for k, v in os.environ.items() if k != "EMBER_TRACEBACK"}
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=CASE_TIMEOUT + 5, env=env)
    except subprocess.TimeoutExpired:
        return Outcome(-signal.SIGALRM, "", CASE_TIMEOUT)
    stderr = p.stderr.decode(errors="replace")
    return Outcome(p.returncode, stderr, time.perf_counter() - start)


def _random_input(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 3, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def run_library(case: Case, d: Path) -> str | None:
    """Load and run the library on random inputs; where onnxruntime runs the
    model too, compare. Returns what went wrong, or None."""
    from ember.runtime import EmberError, GraphModule, cpu, load_module

    try:
        gm = GraphModule(load_module(str(d / "model.so"))["default"](cpu()))
    except EmberError as e:
        if "cannot allocate" in str(e):  # a model too big for this machine
            return None
        return f"the compiled library fails to load: {e}"
    try:
        shapes, dtypes = gm.get_input_info()
        if sum(np.prod(s, dtype=float) for s in shapes.values()) > RUN_ELEMENTS:
            return None
        rng = np.random.default_rng(0)
        feeds = {n: _random_input(rng, shapes[n], dtypes[n]) for n in shapes}
        got = gm(**feeds)
    except Exception as e:
        return f"the compiled library fails: {type(e).__name__}: {e}"
    try:
        import onnxruntime as ort

        ort.set_default_logger_severity(4)  # its complaints on mutated models
        options = ort.SessionOptions()
        options.log_severity_level = 4
        session = ort.InferenceSession(
            case.model.SerializeToString(), options, ["CPUExecutionProvider"]
        )
        expected = session.run(None, feeds)
    except Exception:
        return None  # onnxruntime refuses the model: nothing to compare with
    if len(got) != len(expected):
        return f"{len(got)} outputs, onnxruntime has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        g = np.asarray(g)
        if g.dtype != e.dtype or g.shape != e.shape:
            return f"output {i}: {g.dtype}{g.shape}, onnxruntime {e.dtype}{e.shape}"
        if not np.allclose(g, e, rtol=1e-4, atol=1e-5, equal_nan=True):
            return f"output {i} differs from onnxruntime's:\n{g}\n{e}"
    return None


def verdict(o: Outcome) -> str | None:
    """Why the outcome breaks the oracle, or None."""
    if o.rc == -signal.SIGALRM:
        return f"hang: no result after {CASE_TIMEOUT:.0f} s"
    if o.rc < 0:
        return f"killed by signal {-o.rc}"
    if o.problem:
        return o.problem
    if o.rc not in (0, 1, 2, 3):
        return f"exit status {o.rc}"
    if "Traceback" in o.stderr:
        return "a Python traceback"
    # one message line; a list under it (the unsupported operators) is indented
    lines = [ln for ln in o.stderr.strip().splitlines() if not ln[:1].isspace()]
    if o.rc != 0 and len(lines) != 1:
        return f"exit status {o.rc} with {len(lines)} message lines on stderr"
    return None


def _where(case: Case, d: Path) -> str:
    """The innermost frame (`ember file:line function`, or `dependency ...`) of
    the exception behind an internal error, found by compiling again with
    EMBER_TRACEBACK=1."""
    os.environ["EMBER_TRACEBACK"] = "1"
    try:
        with (
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            ember_compile_main(_argv(d))
    except Exception as e:
        f = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{Path(f.filename).name}:{f.lineno} {f.name}"
        if "site-packages" in f.filename or "/lib/python" in f.filename:
            return f"dependency {where}"
        return f"ember {where}"
    finally:
        del os.environ["EMBER_TRACEBACK"]
    return "-"


def check(case: Case, o: Outcome, d: Path) -> None:
    why = verdict(o)
    if why is None and o.rc == 3:
        where = _where(case, d)
        if not where.startswith("dependency"):
            why = f"internal error at {where}"
    assert why is None, f"{why}\n{case.repro()}\n--- rc {o.rc}, stderr:\n{o.stderr}"


# ---------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@fuzz_given(EXAMPLES)
def test_fuzz_in_process(workdir: Path, r: random.Random) -> None:
    case = random_case(r)
    check(case, run_in_process(case, workdir), workdir)


@pytest.mark.slow
@fuzz_given(max(EXAMPLES, NIGHTLY_EXAMPLES))
def test_fuzz_in_process_nightly(workdir: Path, r: random.Random) -> None:
    case = random_case(r)
    check(case, run_in_process(case, workdir), workdir)


@pytest.mark.parametrize("index", range(3))
def test_fuzz_subprocess(workdir: Path, index: int) -> None:
    r = random.Random(int(SEED or 0))
    case = [random_case(r) for _ in range(3)][index]
    check(case, run_subprocess(case, workdir), workdir)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seeds_compile_and_match_onnxruntime(workdir: Path, name: str) -> None:
    case = Case(SEEDS[name](), name)
    onnx.checker.check_model(case.model, full_check=True)
    o = run_in_process(case, workdir)
    assert o.rc == 0 and o.problem is None, (o.stderr, o.problem)


def test_oracle_rejects_what_it_should() -> None:
    assert verdict(Outcome(0, "", 0.1)) is None
    assert verdict(Outcome(1, "ember-compile: error: x\n", 0.1)) is None
    assert verdict(Outcome(1, "", 0.1)) is not None
    assert verdict(Outcome(1, "a\nb\n", 0.1)) is not None
    assert verdict(Outcome(1, "error: 1 unsupported op:\n  Cast: 1\n", 0.1)) is None
    assert verdict(Outcome(3, "Traceback (most recent call last)", 0.1))
    assert verdict(Outcome(-11, "", 0.1)) == "killed by signal 11"
    assert verdict(Outcome(0, "", 0.1, "output 0 differs"))


# ---------------------------------------------------------------- the catalogue


def catalogue(examples: int, seed_value: int) -> int:
    """Run `examples` cases, print what happened; returns the number that broke
    the oracle."""
    r = random.Random(seed_value)
    tally: Counter[str] = Counter()
    broken = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for _ in range(examples):
            case = random_case(r)
            o = run_in_process(case, d)
            tally[
                {0: "ok", 1: "refused", 2: "usage", 3: "internal"}.get(o.rc, "?")
            ] += 1
            try:
                check(case, o, d)
            except AssertionError as e:
                broken += 1
                print(f"BROKEN: {e}\n")
    print(f"{examples} cases, seed {seed_value}, {time.perf_counter() - start:.0f} s")
    print(dict(tally), f"broken: {broken}")
    return broken


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=NIGHTLY_EXAMPLES)
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args()
    sys.exit(1 if catalogue(a.examples, a.seed) else 0)

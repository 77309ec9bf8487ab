"""One conformance case run and classified: the worker side of
`ember.tools.conformance`.

A worker is a long-lived process (`python -m ember.tools.conformance_worker`)
that reads case folders, one JSON line each, on stdin and answers each with
one JSON line per step on the protocol stream: onnxruntime's verdict when
asked for it, then ember's. Everything the compiler prints goes to stderr, so
stdout carries nothing but the protocol. The parent kills and replaces a
worker that dies or runs past its timeout; an exception leaves it running.

A case folder is onnx's own layout: `model.onnx` and
`test_data_set_0/{input,output}_<i>.pb` (tensors, sequences or optionals).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

PASS, REFUSED, UNCLEAR, WRONG, CRASH = "pass", "refused", "unclear", "wrong", "crash"
CLASSES = (PASS, REFUSED, UNCLEAR, WRONG, CRASH)
_MESSAGE_CHARS = 2000


def load_case(folder: str | Path) -> tuple[onnx.ModelProto, list[Any], list[Any]]:
    """The model, inputs and expected outputs of a case folder."""
    folder = Path(folder)
    model = onnx.load_model(str(folder / "model.onnx"))
    data = folder / "test_data_set_0"
    inputs = [
        _load_value(data / f"input_{i}.pb", v.type)
        for i, v in enumerate(model.graph.input)
    ]
    outputs = [
        _load_value(data / f"output_{i}.pb", v.type)
        for i, v in enumerate(model.graph.output)
    ]
    return model, inputs, outputs


def _load_value(path: Path, type_proto: onnx.TypeProto) -> Any:
    raw = path.read_bytes()
    if type_proto.HasField("sequence_type"):
        return numpy_helper.to_list(onnx.SequenceProto.FromString(raw))
    if type_proto.HasField("optional_type"):
        return numpy_helper.to_optional(onnx.OptionalProto.FromString(raw))
    return numpy_helper.to_array(onnx.TensorProto.FromString(raw))


def compare(expected: Sequence[Any], got: Sequence[Any], rtol: float, atol: float):
    """None when `got` matches `expected` as onnx's backend tests compare them
    (count, shape, dtype, then values within rtol/atol, NaN where NaN is;
    integers and strings exactly), else what differs."""
    if len(got) != len(expected):
        return f"expected {len(expected)} outputs, got {len(got)}"
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        if isinstance(e, list) or isinstance(g, list) or e is None or g is None:
            if type(e) is not type(g):
                return (
                    f"output {i}: expected {type(e).__name__}, got {type(g).__name__}"
                )
            if (
                isinstance(e, list)
                and isinstance(g, list)
                and (why := compare(e, g, rtol, atol))
            ):
                return f"output {i}: {why}"
            continue
        g = np.asarray(g)
        if g.shape != e.shape:
            return f"output {i}: expected shape {e.shape}, got {g.shape}"
        if g.dtype != e.dtype:
            return f"output {i}: expected dtype {e.dtype}, got {g.dtype}"
        if e.dtype.kind in "OUSbiu":
            if not np.array_equal(g, e):
                return f"output {i}: values differ (exact comparison)"
            continue
        if e.dtype.kind not in "fc":  # float8/bfloat16 (ml_dtypes) as float32
            e, g = e.astype(np.float32), g.astype(np.float32)
        try:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        except AssertionError as err:
            lines = [s for s in str(err).splitlines() if s.strip()]
            return f"output {i}: " + " ".join(lines[1:4])
    return None


def names_the_op(message: str, model: onnx.ModelProto) -> bool:
    """Whether a refusal names an op type of the model (its ONNX name as a
    word, `Conv`; or the graph op it became, `graph.conv2d`, `fused_conv2d_0`)
    or an attribute of one of its nodes (`auto_pad`). The model's own name is
    removed first: onnx names its test models after the op (`test_conv_...`).
    A lowercase word alone does not count ("shape computations" names no
    Shape)."""
    text = message.replace(model.graph.name, "<model>")
    patterns = []
    for node in model.graph.node:
        op, low = re.escape(node.op_type), re.escape(node.op_type.lower())
        patterns.append(rf"(?<![A-Za-z0-9]){op}(?![A-Za-z0-9])")
        patterns.append(rf"(?:graph\.|fused_){low}|(?<![a-z0-9]){low}\dd(?![a-z0-9])")
        patterns += [
            rf"(?<![A-Za-z0-9_]){re.escape(a.name)}(?![A-Za-z0-9_])"
            for a in node.attribute
        ]
    return any(re.search(p, text) for p in patterns)


def classify_exception(error: BaseException, model: onnx.ModelProto) -> dict:
    """An exception from compiling or running a case: refused (an ember error,
    unclear when it names no op or attribute) or crash (anything else: a
    traceback in front of a user is a bug)."""
    from ember.runtime.errors import EmberError

    message = f"{type(error).__name__}: {error}"
    if isinstance(error, EmberError):
        kind = REFUSED if names_the_op(str(error), model) else UNCLEAR
    else:
        kind = CRASH
        frames = traceback.extract_tb(error.__traceback__)
        if frames:
            where = frames[-1]
            message += f" (at {Path(where.filename).name}:{where.lineno})"
    return {"class": kind, "message": message[:_MESSAGE_CHARS]}


# Operands that say how to compute rather than what to compute on: a node
# test passes them as graph inputs, a real model as constants. ember's shapes
# are static, so such an input is fixed at compile time (compile_model's
# params, TVM's relay.build(params=...)) when every reader takes it as one.
SHAPE_LIKE = frozenset(
    {
        "axes",
        "shape",
        "starts",
        "ends",
        "steps",
        "split",
        "repeats",
        "pads",
        "sizes",
        "scales",
        "roi",
        "K",
        "axis",
        "training_mode",
        "ratio",
        "min",
        "max",
        "OneHot.depth",
        # a diagonal offset, a fill value, an output's shape or its selection
        "Trilu.k",
        "Pad.constant_value",
        "ConstantOfShape.input",
        "Compress.condition",
        # a generated grid's or window's extent, Col2Im's image and block
        "AffineGrid.size",
        *(f"{op}.size" for op in ("BlackmanWindow", "HammingWindow", "HannWindow")),
        "Col2Im.image_shape",
        "Col2Im.block_shape",
        # the recurrent ops' weights, initializers in every real model
        *(
            f"{op}.{operand}"
            for op in ("LSTM", "GRU", "RNN")
            for operand in ("W", "R", "B", "sequence_lens")
        ),
    }
)


def compile_time_inputs(model: onnx.ModelProto) -> set[str]:
    """The graph inputs that only shape-like operands read (see SHAPE_LIKE;
    an entry "Op.input" names one op's operand only)."""
    opset = next(
        (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0
    )
    roles: dict[str, set[str]] = {}
    for node in model.graph.node:
        try:
            schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        except onnx.defs.SchemaError:
            return set()
        for i, name in enumerate(node.input):
            formal = schema.inputs[min(i, len(schema.inputs) - 1)].name
            qualified = f"{node.op_type}.{formal}"
            roles.setdefault(name, set()).add(
                qualified if qualified in SHAPE_LIKE else formal
            )
    return {
        i.name
        for i in model.graph.input
        if roles.get(i.name) and roles[i.name] <= SHAPE_LIKE
    }


def run_ember(model: onnx.ModelProto, inputs: list, expected: list, rtol, atol):
    """Compile and run a case with ember and classify the outcome; inputs that
    only shape-like operands read are fixed at compile time."""
    import ember
    import ember.runtime

    fixed = compile_time_inputs(model)
    values = {i.name: v for i, v in zip(model.graph.input, inputs, strict=True)}
    try:
        mod = ember.compile_model(
            model, params={n: values[n] for n in fixed}, workers=1
        )
        gm = ember.runtime.GraphModule(mod["default"](ember.runtime.cpu()))
        for name, value in values.items():
            if name not in fixed:
                gm.set_input(name, value)
        gm.run()
        count = gm.module["get_num_outputs"]()
        got = [gm.get_output(i).numpy() for i in range(count)]
    except Exception as e:  # noqa: BLE001 - classifying every exception is the point
        return classify_exception(e, model)
    why = compare(expected, got, rtol, atol)
    return (
        {"class": PASS, "message": ""}
        if why is None
        else {"class": WRONG, "message": why}
    )


@functools.cache
def ort_newest_opset() -> int:
    """The newest default-domain opset onnxruntime runs (it lags onnx)."""
    import onnxruntime as ort

    for opset in range(onnx.defs.onnx_opset_version(), 13, -1):
        graph = onnx.helper.make_graph(
            [onnx.helper.make_node("Relu", ["x"], ["y"])],
            "probe",
            [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
        )
        model = onnx.helper.make_model_gen_version(
            graph, opset_imports=[onnx.helper.make_opsetid("", opset)]
        )
        try:
            ort.InferenceSession(model.SerializeToString(), _ort_options())
        except Exception:  # noqa: BLE001, S112 - ORT raises its own untyped errors
            continue
        return opset
    return 13


def _ort_options():
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return options


def run_ort(model: onnx.ModelProto, inputs: list, expected: list, rtol, atol):
    """Whether onnxruntime passes the case: the baseline. A model newer than
    onnxruntime's opsets is converted to its newest by onnx.version_converter."""
    import onnxruntime as ort

    opset = next(
        (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0
    )
    note = ""
    if opset > ort_newest_opset():
        try:
            model = onnx.version_converter.convert_version(model, ort_newest_opset())
            # the converter keeps the IR version, which may be newer than
            # onnxruntime reads; the converted opsets need no newer one
            model.ir_version = onnx.helper.find_min_ir_version_for(
                list(model.opset_import)
            )
            note = f" (converted from opset {opset} to {ort_newest_opset()})"
        except Exception as e:  # noqa: BLE001 - the converter's C++ errors are untyped
            return {
                "pass": False,
                "message": f"version_converter: {e}"[:_MESSAGE_CHARS],
            }
    try:
        session = ort.InferenceSession(
            model.SerializeToString(),
            _ort_options(),
            providers=["CPUExecutionProvider"],
        )
        feed = {v.name: x for v, x in zip(model.graph.input, inputs, strict=True)}
        got = session.run(None, feed)
    except Exception as e:  # noqa: BLE001 - ORT raises its own untyped errors
        return {"pass": False, "message": f"{type(e).__name__}: {e}"[:_MESSAGE_CHARS]}
    why = compare(expected, got, rtol, atol)
    return {"pass": why is None, "message": f"{why or ''}{note}".strip()}


def serve(protocol) -> None:
    """Answer requests from stdin until it closes."""
    for line in sys.stdin:
        request = json.loads(line)
        folder = Path(request["case"])
        meta = json.loads((folder / "meta.json").read_text())
        model, inputs, expected = load_case(folder)
        rtol, atol = meta["rtol"], meta["atol"]
        if request.get("ort"):
            answer = run_ort(model, inputs, expected, rtol, atol)
            protocol.write(json.dumps({"step": "ort", **answer}) + "\n")
            protocol.flush()
        start = time.perf_counter()
        answer = run_ember(model, inputs, expected, rtol, atol)
        seconds = round(time.perf_counter() - start, 3)
        protocol.write(json.dumps({"step": "ember", **answer, "seconds": seconds}))
        protocol.write("\n")
        protocol.flush()


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the compiler prints goes to stderr
    hello = {"step": "ready"}
    try:  # a build that cannot compile a Relu is broken, not 2000 crashes
        _smoke_test()
    except Exception as e:  # noqa: BLE001 - reported to the parent as it is
        frame = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        hello = {"step": "broken", "message": f"{type(e).__name__}: {e} (at {where})"}
    protocol.write(json.dumps(hello) + "\n")
    protocol.flush()
    if hello["step"] == "ready":
        serve(protocol)


def _smoke_test() -> None:
    """Compile and run a one-Relu model (imports the compiler once, too)."""
    import ember
    import ember.runtime

    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])],
        "smoke",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )
    model = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", 17)]
    )
    mod = ember.compile_model(model, workers=1)
    gm = ember.runtime.GraphModule(mod["default"](ember.runtime.cpu()))
    (y,) = gm(np.array([-1.0, 2.0], np.float32))
    if not np.array_equal(y, [0.0, 2.0]):
        raise AssertionError(f"Relu([-1, 2]) gave {y}")


if __name__ == "__main__":
    main()

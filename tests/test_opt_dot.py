"""`ember-opt -t dot`: edges outside the fusion clusters (a node belongs to
the cluster that declares it, so a model's input stays outside its first
group), and the compiled graph's kernels by name."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.parser import Parser

from ember.passes import get_context, run
from ember.tools.opt_dot import module_to_dot

RESIDUAL = Path(__file__).parent / "lit" / "e2e" / "ember-opt-graph.mlir"


def _clusters(dot: str) -> dict[str, list[str]]:
    """The lines directly inside each subgraph, by the subgraph's name."""
    stack: list[str] = []
    inside: dict[str, list[str]] = {"": []}
    for line in dot.splitlines()[1:-1]:
        m = re.match(r'\s*subgraph "([^"]+)" \{', line)
        if m:
            stack.append(m.group(1))
            inside[m.group(1)] = []
        elif line.strip() == "}":
            stack.pop()
        else:
            inside[stack[-1] if stack else ""].append(line.strip())
    return inside


def _fused(ir: str) -> str:
    module = Parser(get_context(), ir).parse_module()
    run(module, "ember-graph")
    return module_to_dot(module)


def test_edges_are_drawn_outside_every_cluster():
    inside = _clusters(_fused(RESIDUAL.read_text()))
    groups = [name for name in inside if name.startswith("cluster_fused")]
    assert len(groups) == 3
    for name, lines in inside.items():
        edges = [line for line in lines if "->" in line]
        assert not edges or name == "", (name, edges)
    # the input is declared in the function's cluster, not in a group
    func = next(n for n in inside if n.startswith("cluster_func"))
    assert any(line.startswith('n0 [label="input 0') for line in inside[func])
    assert all("input 0" not in line for g in groups for line in inside[g])


def test_the_compiled_graph_names_its_kernels():
    module = Parser(get_context(), RESIDUAL.read_text()).parse_module()
    run(module, "ember-graph,convert-graph-to-te")
    dot = module_to_dot(module)
    assert re.search(r"call_kernel\\ncallee=@ember_conv2d_relu_[0-9a-f]+", dot), dot


def test_ember_opt_draws_the_graph_as_compiled(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "ember.tools.ember_opt", str(RESIDUAL)]
        + ["--emit=graph", "-t", "dot"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "cluster_fused_conv2d_add_relu_2" in out
    assert out.rstrip().endswith("}")


@pytest.mark.slow  # 13 s: a whole model compiled to draw it
def test_an_onnx_file_is_drawn_as_compiled(tmp_path):
    """`ember-opt model.onnx` imports with the params bound: the picture has
    one cluster or lone op per call of the compiled model (batch norms folded
    into the convolutions with their weights, as `compile_model` folds them)."""
    import onnx

    import ember

    sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
    try:
        import onnx_models
    finally:
        sys.path.pop(0)
    model = onnx_models.mobilenet_v2(size=32, width=0.35, num_classes=10)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    dot = subprocess.run(
        [sys.executable, "-m", "ember.tools.ember_opt", str(path)]
        + ["--emit=te", "-t", "dot"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    calls = len(re.findall(r"call_kernel\\n", dot))
    assert "batch_norm" not in dot
    mod = ember.compile_model(model)
    assert calls == mod.compile_stats.calls  # type: ignore[attr-defined]


def test_a_file_that_is_not_onnx_is_one_error(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x00\x01 not a protobuf \xff" * 10)
    done = subprocess.run(
        [sys.executable, "-m", "ember.tools.ember_opt", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert "bad.onnx" in done.stderr

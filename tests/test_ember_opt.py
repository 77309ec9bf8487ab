"""ember-opt's driver from Python: stages, stderr-only instrumentation, elided
constants refused when read back, obj output, DOT that Graphviz accepts."""

import re
import shutil
import subprocess

import pytest

from ember.passes.pipelines import EMBER_CPU
from ember.tools.ember_opt import expand_pipelines, main

NEG = """func.func @neg(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    %b = arith.negf %a : f32
    te.yield %b : f32
  }
  func.return %B : tensor<4xf32>
}
"""

CONST = """func.func @c() -> tensor<64xf32> {
  %c = graph.constant dense<1.5> : tensor<64xf32>
  func.return %c : tensor<64xf32>
}
"""


@pytest.fixture
def neg(tmp_path):
    p = tmp_path / "neg.mlir"
    p.write_text(NEG)
    return p


def test_time_passes_and_dumps_leave_stdout_parseable(neg, capsys):
    assert (
        main([str(neg), "-p", "ember-cpu", "--print-ir-after-all", "--time-passes"])
        == 0
    )
    out, err = capsys.readouterr()
    assert out.lstrip().startswith("builtin.module") and "IR Dump" not in out
    assert err.count("// -----// IR Dump After ") == len(EMBER_CPU)
    assert "Execution time report" in err and "100.0%)  Total" in err


def test_obj_to_file_is_an_elf_object(neg, tmp_path):
    o = tmp_path / "neg.o"
    assert main([str(neg), "--emit=obj", "-o", str(o)]) == 0
    assert o.read_bytes()[:4] == b"\x7fELF"


def test_obj_loads_as_a_module(neg, tmp_path):
    """`load_module` links a `.o` with the system compiler, as TVM's does."""
    import numpy as np

    from ember import runtime as rt

    o = tmp_path / "neg.o"
    assert main([str(neg), "-p", "ember-cpu", "--emit=obj", "-o", str(o)]) == 0
    a, b = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    rt.load_module(o)["neg"](a, b)
    np.testing.assert_array_equal(b, -a)
    (tmp_path / "text.o").write_text("not an object")
    with pytest.raises(rt.InvalidLibraryError, match="not an ELF object file"):
        rt.load_module(tmp_path / "text.o")


SIGMOID = """func.func @main(%x: tensor<1x12x10x12xf32>) -> tensor<1x12x10x12xf32> {
  %y = graph.sigmoid %x : (tensor<1x12x10x12xf32>) -> tensor<1x12x10x12xf32>
  func.return %y : tensor<1x12x10x12xf32>
}
"""


def test_a_sigmoid_model_goes_through_ember_model(tmp_path, capsys):
    """The issue's case: compile_model ran it, `ember-opt -p ember-model`
    failed verification after loop-vectorize (an arith.fptosi on vectors)."""
    src = tmp_path / "net.mlir"
    src.write_text(SIGMOID)
    assert main([str(src), "-p", "ember-model", "-t", "llvm"]) == 0
    assert "define i32 @default_run(" in capsys.readouterr().out


def test_elided_constants_print_and_are_refused(tmp_path, capsys):
    src = tmp_path / "c.mlir"
    src.write_text(CONST)
    assert main([str(src), "--mlir-elide-elementsattrs-if-larger=16"]) == 0
    out = capsys.readouterr().out
    assert "dense_resource<__elided__> : tensor<64xf32>" in out
    assert main([str(src), "--mlir-elide-elementsattrs-if-larger=64"]) == 0
    assert "dense<1.5" in capsys.readouterr().out
    back = tmp_path / "elided.mlir"
    back.write_text(out)
    assert main([str(back)]) == 1
    err = capsys.readouterr().err
    assert "elided.mlir:3:25: error:" in err and "has no data" in err


def test_expand_graph_pipeline_by_level():
    assert expand_pipelines("ember-graph{opt-level=0}") == ""
    assert expand_pipelines("ember-graph{opt-level=1},cse") == (
        "graph-fold-constants,graph-fuse-ops,cse"
    )


def test_internal_error_is_one_line_unless_asked(neg, capsys, monkeypatch):
    from ember.tools import opt_stages

    def boom(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(opt_stages, "codegen", boom)
    assert main([str(neg), "--emit=asm"]) == 3
    assert "internal error: RuntimeError: boom" in capsys.readouterr().err
    with pytest.raises(RuntimeError):
        main([str(neg), "--emit=asm", "--show-traceback"])


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz not installed")
def test_dot_renders_with_graphviz(neg, capsys):
    assert main([str(neg), "-t", "dot"]) == 0
    dot = capsys.readouterr().out
    assert "te.compute B\\n4xf32" in dot
    svg = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
    assert svg.returncode == 0 and "<svg" in svg.stdout


def test_targets_are_those_that_print_ember_ir(neg, capsys):
    """ember's formats, then every source kind a backend defines."""
    from ember.tools.ember_opt import source_kinds

    choices = ", ".join(("mlir", "llvm", "dot", *source_kinds()))
    assert {"c", "cuda", "opencl", "metal", "vulkan"} <= set(source_kinds())
    for target in ("x86-asm", "wgsl", "riscv-asm", "csl"):
        assert main([str(neg), "-t", target]) == 2
        err = capsys.readouterr().err
        assert f"invalid choice: '{target}' (choose from {choices})" in err
    assert main([str(neg), "-p", "ember-cpu", "-t", "llvm"]) == 0
    assert "define " in capsys.readouterr().out


def test_pass_pipeline_in_mlir_form(neg, capsys):
    assert main([str(neg), "-p", "convert-te-to-loop,cse"]) == 0
    want = capsys.readouterr().out
    spec = "builtin.module(convert-te-to-loop{scratch-args=false},cse)"
    assert main([str(neg), f"--pass-pipeline={spec}"]) == 0
    assert capsys.readouterr().out == want and "memref<4xf32>" in want
    assert main([str(neg), "-p", "builtin.module(convert-te-to-loop,cse)"]) == 0
    assert capsys.readouterr().out == want
    assert main([str(neg), "--pass-pipeline=func.func(cse)"]) == 2
    assert "expected builtin.module(...)" in capsys.readouterr().err
    assert main([str(neg), "-p", "cse", "--pass-pipeline=builtin.module(cse)"]) == 2
    assert "not both" in capsys.readouterr().err


def test_list_passes_and_help_give_summaries(capsys):
    assert main(["--list-passes"]) == 0
    listing = capsys.readouterr().out
    ours, xdsl = listing.split("xDSL's passes:")
    assert ours.startswith("ember's passes:")
    assert re.search(r"\n  convert-te-to-loop +Lower te functions to loop nests", ours)
    assert re.search(r"\n  licm +Moves operations without side effects", xdsl)
    assert "\n  cse\n" in xdsl and "convert-te-to-loop" not in xdsl  # cse: no doc
    assert main(["--help"]) == 0
    help_text = capsys.readouterr().out
    assert help_text.startswith("usage: ember-opt") and listing in help_text


def test_version_and_verbosity_flags(neg, capsys):
    import ember

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"ember-opt (ember) {ember.__version__} (xdsl ")
    assert main([str(neg), "-v", "-q", "-p", "cse"]) == 0  # -v is not --version
    assert capsys.readouterr().out.lstrip().startswith("builtin.module")


def test_an_output_that_is_the_input_is_refused(neg, capsys, monkeypatch):
    """-o opens its file before the input is read: naming the input, or a
    symlink to it, would leave it empty."""
    monkeypatch.chdir(neg.parent)
    (neg.parent / "link.mlir").symlink_to(neg)
    for output in ("./neg.mlir", "link.mlir"):
        assert main(["neg.mlir", "-p", "cse", "-o", output]) == 2
        assert capsys.readouterr().err == (
            f"ember-opt: error: -o {output}: the same file as the input neg.mlir; "
            "name another file\n"
        )
        assert neg.read_text() == NEG


def test_an_upstream_pass_that_asserts_on_its_input_is_an_input_error(tmp_path, capsys):
    """xDSL's apply-eqsat-pdl asserts its PDL file exists: ember-opt reports
    the pass and the assertion as an error of the input (status 1), not as
    an internal error of ember's."""
    p = tmp_path / "f.mlir"
    p.write_text("func.func @f() {\n  func.return\n}\n")
    assert main([str(p), "-p", "apply-eqsat-pdl{pdl-file=missing}"]) == 1
    err = capsys.readouterr().err
    assert "xDSL's pass (apply_eqsat_pdl.py:" in err and "AssertionError" in err
    assert "internal error" not in err and "Traceback" not in err

"""ember-compile: ONNX file to library, progress and one-line errors."""

import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.runtime import GraphModule, cpu, load_module
from ember.tools.ember_compile import UsageError, main, parse_shapes, shapes_flag


def _conv_model(path, op="Relu"):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(
        (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype("float32"), "w"
    )
    nodes = [
        helper.make_node("Conv", ["data", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node(op, ["c"], ["r"], name="act"),
        helper.make_node("GlobalAveragePool", ["r"], ["out"], name="gap"),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 8, 1, 1])],
        [w],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8
    )
    onnx.save(model, path)
    return model


def _ember_compile(*args):
    return subprocess.run(
        [sys.executable, "-m", "ember.tools.ember_compile", *map(str, args)],
        capture_output=True,
        text=True,
    )


def test_compiles_runs_and_matches_onnxruntime(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    onnxruntime = pytest.importorskip("onnxruntime")
    model = _conv_model(tmp_path / "m.onnx")
    lib = tmp_path / "m.so"
    run = _ember_compile(
        tmp_path / "m.onnx", "-o", lib, "--input-shape", "data:2,3,8,8"
    )
    assert run.returncode == 0, run.stderr
    assert "kernels 2/2 (0 cached)" in run.stderr and f"wrote {lib}" in run.stderr
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype("float32")
    gm = GraphModule(load_module(str(lib))["default"](cpu()))
    gm.set_input("data", x)
    gm.run()
    want = onnxruntime.InferenceSession(model.SerializeToString()).run(
        None, {"data": x}
    )
    np.testing.assert_allclose(gm.get_output(0).numpy(), want[0], rtol=1e-4, atol=1e-5)
    again = _ember_compile(
        tmp_path / "m.onnx", "-o", lib, "--input-shape", "data:2,3,8,8"
    )
    assert "kernels 2/2 (2 cached)" in again.stderr


def test_params_separate(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    _conv_model(tmp_path / "m.onnx")
    lib, params = tmp_path / "m.tar", tmp_path / "m.params"
    code = main(
        [
            str(tmp_path / "m.onnx"),
            "-o",
            str(lib),
            "--input-shape",
            "data:1,3,8,8",
            "--params-separate",
            str(params),
            "-q",
        ]
    )
    assert code == 0 and params.stat().st_size > 8 * 27 * 4
    mod = load_module(str(lib))
    assert mod.metadata["model"]["params_embedded"] is False
    gm = GraphModule(mod["default"](cpu()))
    gm.load_params(params.read_bytes())
    gm.set_input(0, np.ones((1, 3, 8, 8), "float32"))
    gm.run()
    assert gm.get_output(0).shape == (1, 8, 1, 1)


@pytest.mark.parametrize(
    ("setup", "args", "status", "message"),
    [
        (lambda p: p.write_text("not a model"), [], 1, "is not an ONNX model"),
        (None, [], 1, "no such model file"),
        (
            lambda p: _conv_model(p, op="Relu"),
            ["--input-shape", "data:1,x"],
            2,
            "NAME:D0",
        ),
        (lambda p: _conv_model(p, op="Relu"), ["--opt-level", "7"], 2, "expected 0..3"),
        (lambda p: _conv_model(p, op="RandomNormalLike"), [], 1, "RandomNormalLike"),
    ],
)
def test_errors_are_one_line(tmp_path, capsys, setup, args, status, message):
    path = tmp_path / "m.onnx"
    if setup is not None:
        setup(path)
    code = main([str(path), "-o", str(tmp_path / "m.so"), "-q", *args])
    err = capsys.readouterr().err
    assert code == status
    assert message in err and "Traceback" not in err
    assert err.startswith("ember-compile: error: ")


def test_wrong_output_suffix(tmp_path, capsys):
    _conv_model(tmp_path / "m.onnx")
    assert main([str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.dll")]) == 2
    assert "expected a .so or .tar" in capsys.readouterr().err


def test_parse_shapes():
    want = {"data": (1, 3, 224, 224), "mask": (1, 8)}
    assert parse_shapes(["data:1,3,224,224", "mask:1,8"]) == want
    assert parse_shapes(["data:1x3x224x224", "mask:1x8"]) == want
    # tvmc's --input-shapes: several in one string, bracketed, spaces allowed
    assert parse_shapes(["data:[1,3,224,224] mask:[1,8]"]) == want
    assert parse_shapes(["data: [1, 3, 224, 224]", "mask:[1,8]"]) == want
    assert parse_shapes(["a:b:2"]) == {"a:b": (2,)}
    assert parse_shapes(["input/0:[2]"]) == {"input/0": (2,)}
    for bad in ("1,2", "x:", "x:0,2", "x:a", "x:[-1,3]", "x:[1,2", "x:1x", "x:1 x:2"):
        with pytest.raises(UsageError):
            parse_shapes([bad])


def test_tvmc_input_shapes_flag(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    _conv_model(tmp_path / "m.onnx")
    lib = tmp_path / "m.so"
    argv = [str(tmp_path / "m.onnx"), "-o", str(lib), "-q"]
    assert main([*argv, "--input-shapes", "data:[2,3,8,8]"]) == 0
    model = load_module(str(lib)).metadata["model"]
    assert model["inputs"][0]["shape"] == [2, 3, 8, 8]


def test_an_open_input_shape_stays_symbolic_and_the_flags_fix_or_bound_it(
    tmp_path, capsys, monkeypatch
):
    """A model whose batch is `N` compiles to one library for every batch;
    `--input-shapes data:1,3,8,8` fixes it; `--bounds N=4` bounds it; a bad
    bound is one error naming the flag. The Python API's `from_onnx` without
    `symbolic=True` still asks for `shape={...}`."""
    from ember.frontends.onnx import InputShapeError, from_onnx
    from ember.runtime import load_module

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    _conv_model(tmp_path / "m.onnx")
    argv = [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.so"), "-q"]
    assert main(argv) == 0
    model = load_module(str(tmp_path / "m.so")).metadata["model"]
    assert model["inputs"][0]["shape"] == ["N", 3, 8, 8]
    assert main([*argv, "--input-shapes", "data:1,3,8,8"]) == 0
    model = load_module(str(tmp_path / "m.so")).metadata["model"]
    assert model["inputs"][0]["shape"] == [1, 3, 8, 8]
    assert main([*argv, "--bounds", "N=4"]) == 0
    assert load_module(str(tmp_path / "m.so")).metadata["model"]["bounds"] == {"N": 4}
    capsys.readouterr()
    assert main([*argv, "--bounds", "N=0"]) == 2
    assert "--bounds: expected NAME=N with N a positive int, got 'N=0'" in (
        capsys.readouterr().err
    )
    with pytest.raises(
        InputShapeError, match=r"e\.g\. shape=\{'data': \(1, 3, 8, 8\)\}"
    ):
        from_onnx(str(tmp_path / "m.onnx"))


def test_shapes_flag_reads_back_through_the_shell():
    flag = shapes_flag({"img": (1, 3, 224, 224), "mask": (1, 8), "x": None})
    assert flag == "--input-shapes 'img:1,3,224,224 mask:1,8 x:D0,D1,...'"
    name, value = shlex.split(flag)
    assert name == "--input-shapes"
    assert parse_shapes([value.replace(" x:D0,D1,...", "")]) == {
        "img": (1, 3, 224, 224),
        "mask": (1, 8),
    }


def test_output_checked_before_compiling(tmp_path, capsys, monkeypatch):
    import ember

    _conv_model(tmp_path / "m.onnx")

    def never(*args, **kwargs):
        raise AssertionError("compiled before checking the output")

    monkeypatch.setattr(ember, "compile_model", never, raising=False)
    model = str(tmp_path / "m.onnx")
    for args, message in [
        (["-o", str(tmp_path / "no" / "m.so")], f"no such directory: {tmp_path}/no"),
        (["-o", str(tmp_path / "d.so")], "is a directory"),
        (
            ["-o", str(tmp_path / "m.so"), "--params-separate", "/no/dir/m.params"],
            "--params-separate /no/dir/m.params: no such directory",
        ),
    ]:
        (tmp_path / "d.so").mkdir(exist_ok=True)
        assert main([model, "-q", *args]) == 1
        err = capsys.readouterr().err
        assert err.startswith("ember-compile: error: ") and message in err


def test_internal_error_is_exit_3(tmp_path, capsys, monkeypatch):
    import ember

    _conv_model(tmp_path / "m.onnx")

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(ember, "compile_model", boom, raising=False)
    argv = [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.so")]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "ember-compile: internal error: RuntimeError: boom" in err
    assert "importing" in err and "Traceback" not in err
    assert main([*argv, "-q"]) == 3
    assert "importing" not in capsys.readouterr().err
    assert main([*argv, "-v"]) == 3
    assert "target 'llvm', opt-level 3" in capsys.readouterr().err
    with pytest.raises(RuntimeError):
        main([*argv, "--show-traceback"])


def test_an_output_that_is_an_input_or_the_other_output_is_refused(
    tmp_path, capsys, monkeypatch
):
    """Before anything is written: --params-separate naming the model or the
    library, -o a symlink or a hard link to the model, however spelled."""
    import ember

    def never(*args, **kwargs):
        raise AssertionError("compiled before checking the outputs")

    monkeypatch.setattr(ember, "compile_model", never, raising=False)
    monkeypatch.chdir(tmp_path)
    _conv_model(tmp_path / "m.onnx")
    model = (tmp_path / "m.onnx").read_bytes()
    (tmp_path / "r.jsonl").write_text("")
    (tmp_path / "link.so").symlink_to(tmp_path / "m.onnx")
    os.link(tmp_path / "m.onnx", tmp_path / "hard.tar")
    for args, message in [
        (
            ["-o", "m.so", "--params-separate", str(tmp_path / "m.onnx")],
            f"--params-separate {tmp_path}/m.onnx: the same file as the model m.onnx",
        ),
        (
            ["-o", "m.so", "--params-separate", "./m.so"],
            "--params-separate ./m.so: the same file as -o m.so",
        ),
        (["-o", "link.so"], "-o link.so: the same file as the model m.onnx"),
        (["-o", "hard.tar"], "-o hard.tar: the same file as the model m.onnx"),
        (
            [
                "-o",
                "m.so",
                "--tuning-records",
                "r.jsonl",
                "--params-separate",
                "r.jsonl",
            ],
            "--params-separate r.jsonl: the same file as --tuning-records r.jsonl",
        ),
    ]:
        assert main(["m.onnx", "-q", *args]) == 2
        err = capsys.readouterr().err
        assert err == f"ember-compile: error: {message}; name another file\n"
        assert (tmp_path / "m.onnx").read_bytes() == model
        assert not (tmp_path / "m.so").exists()

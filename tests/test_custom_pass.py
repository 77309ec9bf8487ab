"""The pass API (`ember.passes.register_pass`, `PatternPass`, plugins, entry
points, pipeline errors) and the tutorial (docs/tutorial_custom_pass.md), whose
plugin file and Python blocks must not drift apart."""

import os
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

import ember.passes
from ember.passes import (
    ModulePass,
    PassPluginError,
    PatternPass,
    api,
    get_all_passes,
    get_context,
    load_pass_plugin,
    pattern_pass,
    register_pass,
    unregister_pass,
)
from ember.passes.graph_reference import run_graph

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial_custom_pass.md"
PLUGIN = ROOT / "examples" / "custom_pass" / "simplify_layout.py"
SAMPLE = ROOT / "examples" / "custom_pass" / "layout.mlir"
BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def registry(monkeypatch):
    """Each test starts from ember's and xDSL's passes only, and leaves them so."""
    monkeypatch.setattr(api, "_registered", {})
    monkeypatch.setattr(api, "_plugins", {})
    monkeypatch.setattr(api, "_entry_points_loaded", True)


def parse(text: str) -> ModuleOp:
    return Parser(get_context(), text).parse_module()


@dataclass(frozen=True)
class CountOps(ModulePass):
    """Counts ops into a module attribute (a pass with every kind of option)."""

    name = "test-count-ops"

    scale: float = 1.0
    verbose: bool = False
    sizes: tuple[int, ...] = ()
    label: str = "n"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects.builtin import StringAttr

        value = f"{len(list(op.walk())) * self.scale} {self.verbose} {self.sizes}"
        op.attributes[self.label] = StringAttr(value)


# ---------------------------------------------------------------- the tutorial


def _blocks(fence: str) -> list[str]:
    return re.findall(rf"```{re.escape(fence)}\n(.*?)```", TUTORIAL.read_text(), re.S)


def test_tutorial_pieces_put_together_are_the_plugin_file():
    pieces = _blocks("python file=examples/custom_pass/simplify_layout.py")
    assert len(pieces) >= 5
    assert "\n\n\n".join(p.rstrip("\n") for p in pieces) + "\n" == PLUGIN.read_text()


def test_tutorial_python_blocks_run_in_order(monkeypatch):
    monkeypatch.chdir(ROOT)
    blocks = _blocks("python")
    assert len(blocks) == 3
    scope: dict = {}
    for block in blocks:
        exec(compile(block, str(TUTORIAL), "exec"), scope)
    assert "graph-simplify-layout" in get_all_passes()


def test_tutorial_ember_opt_output_is_what_ember_opt_prints():
    text = TUTORIAL.read_text()
    found = re.search(r"```sh\n(.*?)\n```\n\n```mlir\n(.*?)```", text, re.S)
    assert found, "the tutorial shows an ember-opt command and its output"
    command, shown = found.groups()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip() == shown.rstrip()


def test_tutorial_lit_snippet_is_from_the_lit_test():
    lit = (ROOT / "tests/lit/passes/tutorial-graph-simplify-layout.mlir").read_text()
    (snippet,) = [b for b in _blocks("mlir") if "// RUN:" in b]
    for line in snippet.splitlines():
        if line.strip() not in ("", "..."):
            assert line in lit.splitlines(), line


# ---------------------------------------------------------------- the pass itself


def _chain(shape: tuple[int, ...], steps: list) -> tuple[str, list]:
    """A function applying `steps` (("t", perm) or ("r", shape)) to %x, and the
    numpy functions computing the same."""
    lines, ref, cur, name = [], [], shape, "%x"
    for i, (kind, arg) in enumerate(steps):
        src = "x".join(map(str, cur))
        if kind == "t":
            new = tuple(cur[p] for p in arg)
            attr = f" {{perm = [{', '.join(map(str, arg))}]}}"
            ref.append(lambda a, p=arg: np.transpose(a, p))
        else:
            new, attr = arg, ""
            ref.append(lambda a, s=arg: a.reshape(s))
        op = "graph.transpose" if kind == "t" else "graph.reshape"
        dst = "x".join(map(str, new))
        lines.append(
            f"  %v{i} = {op} {name}{attr} : (tensor<{src}xf32>) -> tensor<{dst}xf32>"
        )
        cur, name = new, f"%v{i}"
    src, dst = "x".join(map(str, shape)), "x".join(map(str, cur))
    body = "\n".join(lines)
    text = (
        f"func.func @main(%x: tensor<{src}xf32>) -> tensor<{dst}xf32> {{\n{body}\n"
        f"  func.return {name} : tensor<{dst}xf32>\n}}\n"
    )
    return text, ref


@st.composite
def layout_chains(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(
        draw(st.lists(st.sampled_from([1, 2, 3]), min_size=rank, max_size=rank))
    )
    steps, cur = [], shape
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            perm = tuple(draw(st.permutations(range(len(cur)))))
            steps.append(("t", perm))
            cur = tuple(cur[p] for p in perm)
        else:
            size = int(np.prod(cur))
            new = [d for d in (1, 2, 3, 4, 6, 9) if size % d == 0]
            first = draw(st.sampled_from(new))
            cur = draw(st.sampled_from([(size,), (first, size // first), (1, size, 1)]))
            steps.append(("r", cur))
    return shape, steps


def _assert_nothing_left_to_cancel(fn) -> None:
    from ember.dialects import graph

    for op in fn.walk():
        if isinstance(op, graph.ReshapeOp | graph.TransposeOp):
            assert op.input.type != op.result.type or isinstance(op, graph.TransposeOp)
            assert not isinstance(op.input.owner, type(op)), str(fn)
        if isinstance(op, graph.TransposeOp):
            assert op.permutation != tuple(range(len(op.permutation))), str(fn)


@settings(max_examples=40, deadline=None)
@given(layout_chains())
def test_simplify_layout_pattern_and_walk_agree_and_match_numpy(chain):
    load_pass_plugin(PLUGIN)
    shape, steps = chain
    text, ref = _chain(shape, steps)
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = x
    for f in ref:
        expected = f(expected)
    results = {}
    for name in ("graph-simplify-layout", "graph-simplify-layout-walk"):
        module = ember.passes.run(parse(text), name)
        module.verify()
        (fn,) = module.ops
        (y,) = run_graph(fn, [x], {})  # pyright: ignore[reportArgumentType]
        np.testing.assert_array_equal(y, expected)
        results[name] = str(module)
        _assert_nothing_left_to_cancel(fn)
    assert results["graph-simplify-layout"] == results["graph-simplify-layout-walk"]


def test_simplify_layout_options_turn_rules_off():
    load_pass_plugin(PLUGIN)
    text = SAMPLE.read_text()
    kept = str(ember.passes.run(parse(text), "graph-simplify-layout{transposes=false}"))
    assert kept.count("graph.transpose") == 3 and "graph.flatten" not in kept
    kept = str(ember.passes.run(parse(text), "graph-simplify-layout{reshapes=false}"))
    assert "graph.flatten" in kept and "graph.transpose" not in kept


# ---------------------------------------------------------------- register_pass


def test_register_pass_makes_a_pass_runnable_with_options():
    assert register_pass(CountOps) is CountOps
    module = parse("func.func @f() {\n  func.return\n}\n")
    ember.passes.run(module, 'test-count-ops{scale=2 verbose sizes=1,2 label="k"},cse')
    assert module.attributes["k"].data == "6.0 True (1, 2)"  # pyright: ignore
    assert get_all_passes()["test-count-ops"]() is CountOps
    register_pass(CountOps)  # the same class again: nothing happens
    unregister_pass("test-count-ops")
    assert "test-count-ops" not in get_all_passes()


def test_register_pass_as_decorator_and_override():
    @register_pass(override=True)
    @dataclass(frozen=True)
    class MyCse(ModulePass):
        name = "cse"

        def apply(self, ctx: Context, op: ModuleOp) -> None:
            pass

    assert get_all_passes()["cse"]() is MyCse


def test_a_factory_is_called_only_when_the_pass_is_used():
    calls = []

    def load():
        calls.append(1)
        return CountOps

    register_pass(load, name="test-count-ops")
    assert "test-count-ops" in get_all_passes() and not calls
    ember.passes.run(ModuleOp([]), "test-count-ops")
    assert calls


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((CountOps,), ValueError, None),  # registered twice below
        ((int,), TypeError, "expected a ModulePass subclass, got class int"),
        ((CountOps(),), TypeError, "got an instance of CountOps: register the class"),
        ((42,), TypeError, "got int 42"),
        ((lambda: CountOps,), TypeError, "a pass factory needs name="),
    ],
)
def test_register_pass_refuses(args, error, message):
    if message is None:
        register_pass(*args)

        @dataclass(frozen=True)
        class Other(CountOps):
            pass

        with pytest.raises(ValueError, match="'test-count-ops' is already registered"):
            register_pass(Other)
        return
    with pytest.raises(error, match=re.escape(message)):
        register_pass(*args)


def test_register_pass_refuses_bad_names_and_taken_ones():
    with pytest.raises(ValueError, match=r"already registered \(by xDSL\)"):
        register_pass(lambda: CountOps, name="cse")
    with pytest.raises(ValueError, match=r"already registered \(by ember\)"):
        register_pass(lambda: CountOps, name="loop-simplify")
    with pytest.raises(ValueError, match="invalid pass name 'My_Pass'"):
        register_pass(lambda: CountOps, name="My_Pass")
    with pytest.raises(ValueError, match="expected name 'test-count-ops'"):
        register_pass(CountOps, name="count")


def test_register_pass_refuses_a_class_without_dataclass_or_apply():
    class NoDataclass(ModulePass):
        name = "test-no-dataclass"
        depth: int = 3

        def apply(self, ctx: Context, op: ModuleOp) -> None:
            pass

    with pytest.raises(TypeError, match="option 'depth' .* @dataclass"):
        register_pass(NoDataclass)

    @dataclass(frozen=True)
    class NoApply(ModulePass):
        name = "test-no-apply"

    with pytest.raises(TypeError, match="does not define apply"):
        register_pass(NoApply)

    class NoName(ModulePass):
        def apply(self, ctx: Context, op: ModuleOp) -> None:
            pass

    with pytest.raises(TypeError, match="has no name"):
        register_pass(NoName)


def test_a_factory_returning_another_pass_fails_when_used():
    register_pass(lambda: CountOps, name="test-other")
    with pytest.raises(LookupError, match="returned pass 'test-count-ops'"):
        ember.passes.run(ModuleOp([]), "test-other")


# ---------------------------------------------------------------- pipeline errors


@pytest.mark.parametrize(
    "pipeline, message",
    [
        (
            "test-cuont-ops",
            "unknown pass 'test-cuont-ops'; did you mean 'test-count-ops'",
        ),
        (
            "zzzzzzzzzz",
            "unknown pass 'zzzzzzzzzz'; ember.passes.get_all_passes() lists",
        ),
        ("test-count-ops{scale=fast}", "option 'scale' expects float, got fast"),
        ("test-count-ops{verbose=3}", "option 'verbose' expects bool, got 3"),
        (
            "test-count-ops{sizes=a,b}",
            "option 'sizes' expects tuple[int, ...], got a,b",
        ),
        ("test-count-ops{depth=3}", "has no option 'depth'; its options: scale (float"),
        ("cse{x=1}", "pass 'cse' has no option 'x'; it takes no options"),
        ("test-count-ops{scale=", "Error parsing pass pipeline"),
    ],
)
def test_run_explains_bad_pipelines(pipeline, message):
    register_pass(CountOps)
    with pytest.raises(ValueError, match=re.escape(message)):
        ember.passes.run(ModuleOp([]), pipeline)


def test_an_int_is_a_float_option_and_a_required_option_is_named():
    register_pass(CountOps)
    module = ember.passes.run(ModuleOp([]), "test-count-ops{scale=3}")
    assert module.attributes["n"].data.startswith("3.0")  # pyright: ignore

    @register_pass
    @dataclass(frozen=True)
    class Needs(ModulePass):
        name = "test-needs"
        depth: int

        def apply(self, ctx: Context, op: ModuleOp) -> None:
            pass

    with pytest.raises(
        ValueError, match=r"pass 'test-needs' needs option 'depth' \(int\)"
    ):
        ember.passes.run(ModuleOp([]), "test-needs")


# ---------------------------------------------------------------- pattern passes


class EraseReshapes(RewritePattern):
    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> None:
        if op.name == "graph.reshape" and op.operands[0].type == op.results[0].type:
            rewriter.replace(op, [], [op.operands[0]])


def test_pattern_pass_builds_an_option_less_pass():
    cls = pattern_pass("test-erase-reshapes", EraseReshapes(), doc="Erases reshapes.")
    assert issubclass(cls, PatternPass) and cls.__doc__ == "Erases reshapes."
    register_pass(cls)
    text = (
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %y = graph.reshape %x : (tensor<2xf32>) -> tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n"
    )
    assert "graph.reshape" not in str(
        ember.passes.run(parse(text), "test-erase-reshapes")
    )


# ---------------------------------------------------------------- plugins


def test_load_pass_plugin_once_and_by_path(tmp_path):
    assert load_pass_plugin(PLUGIN) == (
        "graph-simplify-layout",
        "graph-simplify-layout-walk",
    )
    assert load_pass_plugin(str(PLUGIN)) == load_pass_plugin(PLUGIN)
    copy = tmp_path / "simplify_layout.py"
    copy.write_text(PLUGIN.read_text())
    with pytest.raises(
        PassPluginError, match="'graph-simplify-layout' is already registered"
    ):
        load_pass_plugin(copy)


PARTIAL = """from dataclasses import dataclass
from ember.passes import ModulePass, register_pass

@register_pass
@dataclass(frozen=True)
class Partial(ModulePass):
    name = "test-partial"
    def apply(self, ctx, op):
        pass

"""


@pytest.mark.parametrize(
    "source, message",
    [
        (None, "no such file"),
        ("def broken(:\n", r"plugin\.py:1:\d+: syntax error"),
        (
            PARTIAL + "raise RuntimeError('no GPU here')\n",
            r"plugin\.py:11: pass plugin failed while loading: RuntimeError: no GPU here",
        ),
        ("X = 1\n", "registered no passes"),
    ],
)
def test_a_broken_plugin_is_one_line_and_takes_its_passes_back(
    tmp_path, source, message
):
    path = tmp_path / "plugin.py"
    if source is not None:
        path.write_text(source)
    with pytest.raises(PassPluginError, match=message) as info:
        load_pass_plugin(path)
    assert "\n" not in str(info.value)
    assert "test-partial" not in get_all_passes()  # registered, then taken back
    assert not any(name.startswith("ember_pass_plugin_plugin") for name in sys.modules)


def test_load_plugins_from_argv_keeps_the_other_arguments():
    rest = api.load_plugins_from_argv(
        [
            "in.mlir",
            "--load-pass-plugin",
            str(PLUGIN),
            "-p",
            "cse",
            f"--load-pass-plugin={PLUGIN}",
        ]
    )
    assert rest == ["in.mlir", "-p", "cse"]
    assert "graph-simplify-layout" in get_all_passes()
    with pytest.raises(PassPluginError, match="expects a path"):
        api.load_plugins_from_argv(["--load-pass-plugin"])


def test_ember_opt_runs_a_plugin_pass_and_reports_a_missing_one():
    opt = [str(BIN / "ember-opt"), str(SAMPLE)]
    ok = subprocess.run(
        [
            *opt,
            "--load-pass-plugin",
            str(PLUGIN),
            "-p",
            "graph-simplify-layout-walk{transposes=false}",
        ],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("graph.transpose") == 3
    bad = subprocess.run(
        [*opt, "--load-pass-plugin", "nowhere.py", "-p", "cse"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert (
        bad.stderr.strip()
        == "ember-opt: error: cannot load pass plugin 'nowhere.py': no such file"
    )


# ---------------------------------------------------------------- entry points


def _fake_distribution(root: Path, entry_points: str, modules: dict[str, str]) -> None:
    dist = root / "fake_ember_passes-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-ember-passes\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(f"[ember.passes]\n{entry_points}")
    for name, text in modules.items():
        (root / f"{name}.py").write_text(text)


PASS_MODULE = """
from dataclasses import dataclass
from ember.passes import ModulePass, register_pass

@dataclass(frozen=True)
class FromPackage(ModulePass):
    name = "fake-from-package"
    def apply(self, ctx, op):
        op.attributes["seen"] = op.attributes.get("seen") or __import__("xdsl").dialects.builtin.UnitAttr()

@register_pass
@dataclass(frozen=True)
class ByImport(ModulePass):
    name = "fake-by-import"
    def apply(self, ctx, op):
        pass
"""


def test_entry_points_register_passes_and_a_broken_one_warns(tmp_path, monkeypatch):
    _fake_distribution(
        tmp_path,
        "fake-from-package = fake_passes_a:FromPackage\n"
        "fake_passes_b = fake_passes_b\n"
        "fake-broken = fake_passes_missing:Nothing\n"
        "fake-misnamed = fake_passes_a:ByImport\n",
        {
            "fake_passes_a": PASS_MODULE,
            "fake_passes_b": PASS_MODULE.replace("fake-", "fake-b-"),
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(api, "_entry_points_loaded", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        passes = get_all_passes()
    messages = [str(w.message) for w in caught]
    assert any(
        "'fake-broken = fake_passes_missing:Nothing' of fake-ember-passes" in m
        and "ModuleNotFoundError" in m
        for m in messages
    ), messages
    assert any(
        "'fake-misnamed" in m and "expected a pass class named 'fake-misnamed'" in m
        for m in messages
    ), messages
    assert "fake-from-package" in passes and "fake-b-by-import" in passes
    assert "fake-broken" not in passes and "fake-misnamed" not in passes
    module = ember.passes.run(ModuleOp([]), "fake-from-package")
    assert "seen" in module.attributes
    get_all_passes()  # loaded once: no second round of warnings
    for name in ("fake_passes_a", "fake_passes_b"):
        sys.modules.pop(name, None)

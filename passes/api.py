"""The public pass API of `ember.passes`: write a pass, register it, load plugins.

A pass is a frozen-dataclass `ModulePass` whose fields are its options (written
kebab-case in a pipeline: `my-pass{max-depth=3 verbose=true sizes=1,2}`), or a
`PatternPass` that applies rewrite patterns greedily. `register_pass` makes it
visible to `ember.passes.run`, `get_all_passes` and `ember-opt`:

    @register_pass
    @dataclass(frozen=True)
    class CountOps(ModulePass):
        name = "count-ops"
        verbose: bool = False

        def apply(self, ctx: Context, op: ModuleOp) -> None: ...

    ember.passes.run(module, "count-ops{verbose=true},cse")

Besides ember's and xDSL's own, passes come from `register_pass` calls in Python,
from plugin files (`load_pass_plugin(path)`, `ember-opt --load-pass-plugin path`:
the file calls `register_pass` when it is imported), and from the `ember.passes`
entry points of installed distributions, loaded the first time the registry is
listed. `docs/tutorial_custom_pass.md` walks through one.
"""

import argparse
import dataclasses
import difflib
import hashlib
import importlib.util
import inspect
import re
import sys
import traceback
import warnings
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType, NoneType, UnionType
from typing import (
    Any,
    ClassVar,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.arg_spec import ArgSpec, ParameterListType
from xdsl.utils.arg_spec import parse_pipeline as parse_arg_specs
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.hints import isa, type_repr

from ember.runtime.errors import EmberTypeError, EmberValueError

PassFactory = Callable[[], type[ModulePass]]
P = TypeVar("P")

ENTRY_POINT_GROUP = "ember.passes"
_PLUGIN_FLAG = "--load-pass-plugin"
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

# name -> (factory, where it came from); filled by register_pass
_registered: dict[str, tuple[PassFactory, str]] = {}
_entry_points_loaded = False
_plugins: dict[Path, tuple[str, ...]] = {}
_origin: str | None = None  # the plugin or entry point being loaded


class PassPluginError(EmberValueError):
    """A plugin file that cannot be loaded; the message is one line."""


# ---------------------------------------------------------------- writing passes


@dataclass(frozen=True)
class PatternPass(ModulePass):
    """A pass that applies `patterns()` greedily until none matches.

    Subclass it as a frozen dataclass; its fields are its options, which
    `patterns()` can read:

        @dataclass(frozen=True)
        class SimplifyLayout(PatternPass):
            name = "graph-simplify-layout"
            transposes: bool = True

            def patterns(self):
                return [FoldReshapes()] + ([FoldTransposes()] if self.transposes else [])
    """

    apply_recursively: ClassVar[bool] = True
    """Patterns also see the ops that other patterns create."""

    walk_reverse: ClassVar[bool] = False
    """Walk each block from its end: users before their operands."""

    @abstractmethod
    def patterns(self) -> Sequence[RewritePattern]:
        """The patterns this pass applies, built from its options."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(list(self.patterns())),
            apply_recursively=self.apply_recursively,
            walk_reverse=self.walk_reverse,
        ).rewrite_module(op)


def pattern_pass(
    name: str, *patterns: RewritePattern, doc: str | None = None
) -> type[PatternPass]:
    """A `PatternPass` without options that applies `patterns` (not registered).

    Example:
        register_pass(pattern_pass("fold-my-op", FoldMyOp(), doc="Folds my.op."))
    """
    class_name = "".join(w.capitalize() for w in name.split("-")) + "Pass"

    def own_patterns(self: PatternPass) -> Sequence[RewritePattern]:
        return patterns

    cls = type(
        class_name,
        (PatternPass,),
        {"name": name, "patterns": own_patterns, "__doc__": doc or f"Applies {name}."},
    )
    return dataclass(frozen=True)(cls)


# ---------------------------------------------------------------- registering


@overload
def register_pass(
    pass_: P, *, name: str | None = None, override: bool = False
) -> P: ...


@overload
def register_pass(
    pass_: None = None, *, name: str | None = None, override: bool = False
) -> Callable[[P], P]: ...


def register_pass(
    pass_: Any = None, *, name: str | None = None, override: bool = False
) -> Any:
    """Register a pass under its name, for `run`, `get_all_passes` and `ember-opt`.

    Works as a decorator (`@register_pass`, `@register_pass(override=True)`) or a
    call. Registering the same class again is a no-op.

    Args:
        pass_: a `ModulePass` subclass, or a function returning one (imported on
            first use; `name` is then required).
        name: the pass's name; for a class, its `name` attribute by default (and
            it must match).
        override: replace a pass of the same name (xDSL's, ember's or another).

    Returns:
        `pass_` itself, so the decorator leaves the class as it was.

    Raises:
        TypeError: `pass_` is not a pass class or a factory.
        ValueError: the name is invalid or already taken.
    """
    if pass_ is None:
        return lambda p: register_pass(p, name=name, override=override)
    if isinstance(pass_, type):
        cls = _checked_pass_class(pass_)
        if name is not None and name != cls.name:
            raise EmberValueError(
                f"expected name '{cls.name}' (the name of {cls.__qualname__}), "
                f"got '{name}'"
            )
        name, factory = cls.name, _constant(cls)
        origin = _origin or cls.__module__
    elif isinstance(pass_, ModulePass):
        raise EmberTypeError(
            f"expected a pass class, got an instance of {type(pass_).__qualname__}: "
            "register the class"
        )
    elif callable(pass_):
        if name is None:
            raise EmberTypeError(
                "a pass factory needs name=...: it is not called until used"
            )
        factory = _checked_factory(name, pass_)
        origin = _origin or getattr(pass_, "__module__", "?")
    else:
        raise EmberTypeError(
            "expected a ModulePass subclass or a function returning one, "
            f"got {type(pass_).__name__} {pass_!r}"
        )
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise EmberValueError(
            f"invalid pass name {name!r}: expected lowercase words joined by '-', "
            "like 'my-pass'"
        )
    if isinstance(pass_, type) and _same_class(name, pass_):
        return pass_
    if not override and (where := _where_registered(name)):
        raise EmberValueError(
            f"a pass named '{name}' is already registered ({where}); "
            "pass override=True to replace it"
        )
    _registered[name] = (factory, origin)
    return pass_


def unregister_pass(name: str) -> None:
    """Forget a pass registered with `register_pass` (ember's and xDSL's stay)."""
    if _registered.pop(name, None) is None:
        raise LookupError(f"no pass named '{name}' was registered with register_pass")


def registered_passes() -> dict[str, PassFactory]:
    """The passes registered with `register_pass`, plugins and entry points."""
    _load_entry_points()
    return {name: factory for name, (factory, _) in _registered.items()}


def _checked_pass_class(cls: type) -> type[ModulePass]:
    if not issubclass(cls, ModulePass):
        raise EmberTypeError(
            f"expected a ModulePass subclass, got class {cls.__qualname__}"
        )
    if not isinstance(getattr(cls, "name", None), str):
        raise EmberTypeError(
            f"pass class {cls.__qualname__} has no name: give it a class attribute "
            '`name = "my-pass"`'
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise EmberTypeError(f"pass class {cls.__qualname__} does not define {missing}")
    options = {f.name for f in dataclasses.fields(cls)}
    for field, hint in vars(cls).get("__annotations__", {}).items():
        if field not in options and "ClassVar" not in str(hint):
            raise EmberTypeError(
                f"option '{field}' of pass class {cls.__qualname__} is not a dataclass "
                "field: decorate the class with @dataclass(frozen=True)"
            )
    return cls


def _constant(cls: type[ModulePass]) -> PassFactory:
    return lambda: cls


def _checked_factory(name: str, factory: Callable[[], Any]) -> PassFactory:
    def load() -> type[ModulePass]:
        cls = _checked_pass_class(factory())
        if cls.name != name:
            raise LookupError(
                f"the factory registered as '{name}' returned pass '{cls.name}'"
            )
        return cls

    return load


def _same_class(name: str, cls: type) -> bool:
    entry = _registered.get(name)
    return entry is not None and entry[0]() is cls


def _where_registered(name: str) -> str | None:
    from ember.passes import builtin_passes

    if name in _registered:
        return f"from {_registered[name][1]}"
    if name in builtin_passes():
        return "by ember" if name in ember_pass_names() else "by xDSL"
    return None


def ember_pass_names() -> set[str]:
    from xdsl.transforms import get_all_passes as xdsl_passes

    from ember.passes import builtin_passes

    return set(builtin_passes()) - set(xdsl_passes())


@contextmanager
def _loading(origin: str):
    global _origin
    saved, _origin = _origin, origin
    try:
        yield
    finally:
        _origin = saved


# ---------------------------------------------------------------- plugins


def load_pass_plugin(path: str | Path) -> tuple[str, ...]:
    """Import a plugin file by path and return the names of the passes it registered.

    The file registers its passes by calling `register_pass` as it is imported
    (usually as a decorator). It is imported once, as a module of its own (a
    unique name, not on `sys.path`); loading it again returns the same names.

    Raises:
        PassPluginError: no such file, a syntax error, an exception while
            importing, or no pass registered; the message is one line, and the
            passes registered before the failure are taken back.
    """
    try:
        resolved = Path(path).resolve(strict=True)
    except OSError:
        raise PassPluginError(
            f"cannot load pass plugin '{path}': no such file"
        ) from None
    if resolved in _plugins:
        return _plugins[resolved]
    if not resolved.is_file():
        raise PassPluginError(f"cannot load pass plugin '{path}': not a file")
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", resolved.stem)
    module_name = f"ember_pass_plugin_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise PassPluginError(f"cannot load pass plugin '{path}': not a Python file")
    module = importlib.util.module_from_spec(spec)
    before = dict(_registered)

    def fail(message: str) -> PassPluginError:
        _registered.clear()
        _registered.update(before)
        sys.modules.pop(module_name, None)
        return PassPluginError(message)

    sys.modules[module_name] = module  # dataclasses look their module up here
    try:
        with _loading(str(path)):
            spec.loader.exec_module(module)
    except SyntaxError as e:
        raise fail(f"{path}:{e.lineno}:{e.offset}: syntax error: {e.msg}") from None
    except Exception as e:
        lines = [
            f.lineno
            for f in traceback.extract_tb(e.__traceback__)
            if f.filename == str(resolved)
        ]
        where = f"{path}:{lines[-1]}" if lines else str(path)
        raise fail(
            f"{where}: pass plugin failed while loading: {type(e).__name__}: {e}"
        ) from None
    new = tuple(n for n, entry in _registered.items() if before.get(n) is not entry)
    if not new:
        raise fail(
            f"pass plugin '{path}' registered no passes: "
            "call ember.passes.register_pass in it"
        )
    _plugins[resolved] = new
    return new


def add_plugin_argument(parser: argparse.ArgumentParser) -> None:
    """Add `--load-pass-plugin PATH` (repeatable) to a tool's parser, for `--help`;
    `load_plugins_from_argv` loads the files before the parser runs."""
    parser.add_argument(
        "--load-pass-plugin",
        action="append",
        default=[],
        metavar="PATH",
        help="import a Python file that registers passes "
        "(ember.passes.register_pass) before the pipeline is read; repeatable",
    )


def load_plugins_from_argv(argv: Sequence[str] | None) -> list[str]:
    """Load the `--load-pass-plugin PATH` files of a command line (`sys.argv` by
    default) before a tool lists its passes; returns the other arguments.

    The flag is matched as argparse matches it (`--load-pass-plugin=PATH` and
    unambiguous prefixes too), so the tool's own parser can accept it as well.
    """
    rest: list[str] = []
    args = iter(sys.argv[1:] if argv is None else argv)
    for arg in args:
        flag, eq, value = arg.partition("=")
        if len(flag) < 4 or not _PLUGIN_FLAG.startswith(flag):
            rest.append(arg)
            continue
        path = value if eq else next(args, None)
        if not path:
            raise PassPluginError(f"{_PLUGIN_FLAG} expects a path")
        load_pass_plugin(path)
    return rest


def _load_entry_points() -> None:
    """Register the `ember.passes` entry points of installed distributions, once.

    An entry point names a pass class (`my-pass = my_pkg.passes:MyPass`, the
    entry point's name being the pass's) or a module whose import registers
    passes (`my_pkg = my_pkg.passes`). One that fails gives a warning naming it.
    """
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = f" of {ep.dist.name}" if ep.dist is not None else ""
        label = f"entry point '{ep.name} = {ep.value}'{dist}"
        before = dict(_registered)
        try:
            with _loading(label):
                obj = ep.load()
                if isinstance(obj, ModuleType):
                    if _registered == before:
                        raise LookupError(f"module {obj.__name__} registered no passes")
                elif getattr(obj, "name", None) != ep.name:
                    raise LookupError(
                        f"expected a pass class named '{ep.name}', got {obj!r}"
                    )
                else:
                    register_pass(obj)
        except Exception as e:
            _registered.clear()
            _registered.update(before)
            warnings.warn(
                f"ember.passes: skipped the {label}: {type(e).__name__}: {e}",
                RuntimeWarning,
                stacklevel=3,
            )


# ---------------------------------------------------------------- pipelines


def parse_pipeline(
    spec: str,
    passes: Mapping[str, PassFactory] | None = None,
    callback: PassPipelineCallbackType | None = None,
) -> PassPipeline:
    """A textual pipeline (`"my-pass{opt=3},cse"`) as a `PassPipeline`.

    Raises:
        ValueError: a malformed pipeline, an unknown pass (the message names the
            closest ones), an unknown option or a value of the wrong type (the
            message names the option and the type it expects).
    """
    from ember.passes import get_all_passes

    available = get_all_passes() if passes is None else passes
    try:
        specs = list(parse_arg_specs(spec))
    except ArgSpecParseError as e:  # a BaseException in xDSL
        raise EmberValueError(str(e).rstrip()) from None
    built = []
    for arg in specs:
        if arg.name not in available:
            near = difflib.get_close_matches(arg.name, available, n=3)
            hint = (
                "did you mean " + ", ".join(f"'{n}'" for n in near) + "?"
                if near
                else "ember.passes.get_all_passes() lists them"
            )
            raise EmberValueError(f"unknown pass '{arg.name}'; {hint}")
        built.append(instantiate(available[arg.name](), arg))
    return PassPipeline(tuple(built), callback)


def instantiate(cls: type[ModulePass], arg: ArgSpec) -> ModulePass:
    """The pass `cls` with the options of `arg`, checked one by one.

    A bool option written without a value (`my-pass{verbose}`) is true, and an
    int is accepted where a float is expected.
    """
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "name"}
    hints = get_type_hints(cls)
    values: dict[str, ParameterListType] = {}
    for key, given in arg.parameters.items():
        field = key.replace("-", "_")
        if field not in fields:
            raise EmberValueError(
                f"pass '{cls.name}' has no option '{key}'; {_options(cls)}"
            )
        hint = hints[field]
        value = _coerce(given, hint)
        if value is None:
            shown = ",".join(str(v) for v in given) or "no value"
            raise EmberValueError(
                f"pass '{cls.name}': option '{key}' expects "
                f"{type_repr(hint)}, got {shown}"
            )
        values[field] = value
    for field in sorted(cls.required_fields() - set(values) - {"name"}):
        raise EmberValueError(
            f"pass '{cls.name}' needs option '{field.replace('_', '-')}' "
            f"({type_repr(hints[field])})"
        )
    return cls.from_spec(ArgSpec(cls.name, values))


def _coerce(given: ParameterListType, hint: Any) -> ParameterListType | None:
    """`given` as xDSL's option conversion accepts it for a field typed `hint`,
    or None when no reading fits."""
    members = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    if not given:
        if bool in members:
            return (True,)
        return given if NoneType in members else None
    if float in members or any(get_args(m) == (float, ...) for m in members):
        given = tuple(
            float(v) if isinstance(v, int) and not isinstance(v, bool) else v
            for v in given
        )
    if len(given) == 1 and isa(given[0], hint):
        return given
    return given if isa(given, hint) else None


def _options(cls: type[ModulePass]) -> str:
    hints = get_type_hints(cls)
    shown = [
        f"{f.name.replace('_', '-')} ({type_repr(hints[f.name])}"
        + (f", default {f.default}" if f.default is not dataclasses.MISSING else "")
        + ")"
        for f in dataclasses.fields(cls)
        if f.init and f.name != "name"
    ]
    return "its options: " + ", ".join(shown) if shown else "it takes no options"

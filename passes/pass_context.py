"""`ember.PassContext`: the optimization level and disabled passes of a compilation,
like TVM's `tvm.transform.PassContext`.

    with ember.PassContext(opt_level=3, disabled_pass=["graph-fuse-ops"]):
        lib = ember.compile_model(...)

The compile flow asks `passes.pipelines.graph_pipeline()` which graph passes the
current context runs.
"""

from collections.abc import Iterable
from types import TracebackType
from typing import Any, ClassVar

from ember.runtime.errors import EmberTypeError, EmberValueError

# TVM's names for the passes ember has under another name
PASS_ALIASES = {
    "FoldConstant": "graph-fold-constants",
    "SimplifyInference": "graph-fold-batch-norm",
    "FuseOps": "graph-fuse-ops",
    "EliminateCommonSubexpr": "cse",
    "DeadCodeElimination": "dce",
}


class PassContext:
    """The settings passes run under; a context manager (contexts nest).

    Args:
        opt_level: 0 runs no graph pass (every op its own kernel), 1 folds
            constants and fuses, 2 and above also fold batch norms and run cse
            and dce.
        disabled_pass: pass names (ember's or TVM's, e.g. "FuseOps") not to run.
        config: free-form options for the passes and strategies:
            "conv2d.algorithm" ("auto", "direct", "winograd-2", "winograd-4")
            is every convolution's (`topi.conv2d`'s `algorithm`): "direct"
            keeps the direct sum's rounding where Winograd would apply.

    Example:
        >>> with PassContext(opt_level=1):
        ...     PassContext.current().opt_level
        1
    """

    _stack: ClassVar[list["PassContext"]] = []

    def __init__(
        self,
        opt_level: int = 2,
        disabled_pass: Iterable[str] = (),
        config: dict[str, Any] | None = None,
    ):
        if not isinstance(opt_level, int) or not 0 <= opt_level <= 4:
            raise EmberValueError(f"expected opt_level in 0..4, got {opt_level!r}")
        if isinstance(disabled_pass, str):
            raise EmberTypeError(
                f"expected a list of pass names for disabled_pass, got the string "
                f"{disabled_pass!r}"
            )
        self.opt_level = opt_level
        self.disabled_pass = frozenset(PASS_ALIASES.get(p, p) for p in disabled_pass)
        self.config = dict(config or {})

    @classmethod
    def current(cls) -> "PassContext":
        """The innermost active context, or the default one."""
        return cls._stack[-1] if cls._stack else _DEFAULT

    def is_enabled(self, name: str, opt_level: int) -> bool:
        """Whether pass `name`, which needs `opt_level`, runs in this context."""
        return self.opt_level >= opt_level and name not in self.disabled_pass

    def __enter__(self) -> "PassContext":
        self._stack.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stack.remove(self)

    def __repr__(self) -> str:
        disabled = sorted(self.disabled_pass)
        return f"PassContext(opt_level={self.opt_level}, disabled_pass={disabled})"


_DEFAULT = PassContext()

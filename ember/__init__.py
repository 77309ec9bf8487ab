"""ember: a hackable deep-learning compiler.

The façade is lazy: `import ember.runtime` must not pull in the compiler (xDSL,
llvmlite), so the compiler's names are imported on first use.

    from ember import te
    mod = ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")
"""

from importlib import import_module
from pathlib import Path
from typing import Any

__version__ = "0.1.0"

# In a source checkout the subpackages are this folder's siblings (pyproject's
# package-dir maps ember.runtime to runtime/, ...). With the checkout's root on
# sys.path (`python -c` run there) this folder shadows the installed package, so
# its siblings must be importable from here too, or `import ember.runtime` fails.
_checkout = Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "runtime").is_dir():
    __path__.append(str(_checkout))

_LAZY = {
    "build": ("ember.compiler.build", "build"),
    "lower": ("ember.compiler.build", "lower"),
    "Target": ("ember.backends.llvm", "Target"),
    # TVM's top-level runtime names (`tvm.cpu(0)`, `tvm.get_global_func`); a
    # GPU's driver still loads only when its memory is asked for
    "cpu": ("ember.runtime", "cpu"),
    "cuda": ("ember.runtime", "cuda"),
    "opencl": ("ember.runtime", "opencl"),
    "device": ("ember.runtime", "device"),
    "register_func": ("ember.runtime", "register_func"),
    "get_global_func": ("ember.runtime", "get_global_func"),
    "PassContext": ("ember.passes.pass_context", "PassContext"),
    "compile_model": ("ember.compiler.model", "compile_model"),
    "auto_schedule": ("ember.tune.search", "auto_schedule"),
    "tune_model": ("ember.tune.model", "tune_model"),
}
_SUBMODULES = (
    "te",
    "nd",
    "debug",
    "runtime",
    "passes",
    "dialects",
    "backends",
    "tools",
    "tune",
)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(import_module(module), attr)
    if name in _SUBMODULES:
        return import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*_LAZY, *_SUBMODULES, "__version__"])

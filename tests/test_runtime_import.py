"""ember.runtime imports alone: nothing from the compiler, xdsl or llvmlite."""

import json
import subprocess
import sys

FORBIDDEN = ("xdsl", "llvmlite", "ember.dialects", "ember.passes", "ember.backends")

PROBE = """
import json, sys
import ember.runtime
import ember.rpc
import ember.rpc.server
print(json.dumps(sorted(sys.modules)))
"""


def test_runtime_imports_nothing_from_the_compiler():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    )
    modules = json.loads(out.stdout)
    assert "ember.runtime" in modules and "ember.runtime.rpc.session" in modules
    assert [m for m in modules if m.startswith(FORBIDDEN)] == []


def test_public_surface():
    import ember.runtime as rt

    for name in [
        "NDArray",
        "Device",
        "cpu",
        "device",
        "empty",
        "array",
        "from_dlpack",
        "PackedFunc",
        "Module",
        "load_module",
        "register_func",
        "get_global_func",
        "list_global_func_names",
        "EmberError",
    ]:
        assert name in rt.__all__
        assert getattr(rt, name).__doc__

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


GPU_PROBE = """
import json, sys
import numpy as np
import ember.runtime as rt
dev = rt.cuda(0), rt.opencl(0)  # naming a device is free
mod = rt.DeviceModule({"format": "ember.device/1", "kind": "cuda", "source": "",
    "binary": None, "functions": {"f": {"args": [], "buffers": [], "launches": []}}})
mod.get_source()
libraries = open("/proc/self/maps").read()
print(json.dumps({"modules": sorted(sys.modules), "libcuda": "libcuda" in libraries,
                  "libOpenCL": "libOpenCL" in libraries}))
"""


def test_runtime_loads_no_gpu_driver_until_a_device_is_used():
    out = subprocess.run(
        [sys.executable, "-c", GPU_PROBE], capture_output=True, text=True, check=True
    )
    loaded = json.loads(out.stdout)
    gpu_modules = ("ember.runtime.cuda_api", "ember.runtime.opencl_api")
    assert [m for m in loaded["modules"] if m in gpu_modules] == []
    assert not loaded["libcuda"] and not loaded["libOpenCL"]


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
        "cuda",
        "opencl",
        "DeviceModule",
        "check_plan",
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


ALIAS_PROBE = """
import json, sys
import ember
import numpy as np
devices = ember.cuda(0), ember.opencl(0), ember.device("cuda", 0), ember.cpu(0)
ember.nd.array(np.ones(2, "float32"), ember.cpu(0)).numpy()
ember.nd.empty((2,), "float32")
ember.get_global_func("no.such", allow_missing=True)
print(json.dumps(sorted(sys.modules)))
"""


def test_tvm_names_on_ember_import_neither_compiler_nor_gpu_driver():
    """`ember.cpu`, `ember.cuda(0)`, `ember.nd` ... stay runtime names: naming a
    GPU loads no GPU API, and none of them imports the compiler."""
    out = subprocess.run(
        [sys.executable, "-c", ALIAS_PROBE], capture_output=True, text=True, check=True
    )
    modules = json.loads(out.stdout)
    assert "ember.nd" in modules
    gpu_modules = ("ember.runtime.cuda_api", "ember.runtime.opencl_api")
    assert [m for m in modules if m.startswith(FORBIDDEN + gpu_modules)] == []

"""The `metal` kind: te schedules and ONNX models as Metal Shading Language.

No Metal compiler runs here: `xcrun metal` exists only on macOS with Xcode, and
ember has no Metal runtime. The tests check the MSL's structure, that g++
parses it as C++ under a stub of `metal_stdlib` (MSL is C++14 with address
spaces and attributes), that what Metal cannot express is refused naming it,
and that running a metal module fails saying a Metal runtime is needed.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import te
from ember.backends import backend, kinds
from ember.backends.source.printer import SourceError
from ember.backends.source.target import DeviceTarget
from ember.runtime.errors import EmberError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import onnx_models  # noqa: E402
from test_target_gpu import half_program, softmax, tiled_matmul, vecadd  # noqa: E402

GXX = shutil.which("g++")

# just enough of metal_stdlib for g++ to parse the MSL ember prints
METAL_STUB = """\
#include <cmath>
#include <cstring>
#define kernel
#define device
#define threadgroup
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef float half;
struct uint3 { uint x, y, z; };
enum class mem_flags { mem_threadgroup };
inline void threadgroup_barrier(mem_flags) {}
template <typename T, typename U> T as_type(U u) {
  T t; std::memcpy(&t, &u, sizeof t); return t;
}
using std::isinf; using std::isnan; using std::signbit;
namespace metal {
using namespace std;
namespace precise { using namespace std; }
}
"""


def parse_as_cpp(source: str, tmp_path: Path) -> None:
    """g++ accepts `source` (MSL) with `metal_stdlib` replaced by the stub."""
    if GXX is None:
        pytest.skip("no g++ to parse the MSL with")
    path = tmp_path / "kernels.cpp"
    path.write_text(source.replace("#include <metal_stdlib>", METAL_STUB))
    result = subprocess.run(
        [GXX, "-std=c++14", "-fsyntax-only", "-Wno-attributes", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_metal_is_a_gpu_kind_with_apple_defaults():
    target = DeviceTarget("metal")
    assert "metal" in kinds() and target.is_gpu
    assert backend("metal").device == "metal"
    assert (target.max_num_threads, target.thread_warp_size) == (1024, 32)
    assert target.max_shared_memory_per_block == 32768
    assert DeviceTarget("metal -max_num_threads=256").max_num_threads == 256
    assert backend("metal").binary("kernel void f() {}", target) is None


def test_vecadd_is_an_msl_kernel_with_bound_buffers_and_indices(tmp_path):
    mod = ember.build(*vecadd(), target="metal", name="vecadd")
    source = mod.get_source("metal")
    assert source == mod.get_source()
    assert source.startswith("#include <metal_stdlib>\nusing namespace metal;\n")
    assert (
        "kernel void\nvecadd_kernel0(device const float* A [[buffer(0)]], "
        "device const float* B [[buffer(1)]], device float* C [[buffer(2)]], "
        "uint3 blockIdx [[threadgroup_position_in_grid]], "
        "uint3 threadIdx [[thread_position_in_threadgroup]]) {"
    ) in source
    assert "int i_inner = (int)threadIdx.x;" in source
    launch = mod.plan["functions"]["vecadd"]["launches"][0]
    assert (launch["grid"], launch["block"]) == ([16, 1, 1], [64, 1, 1])
    parse_as_cpp(source, tmp_path)


def test_shared_tiles_are_threadgroup_arrays_between_barriers(tmp_path):
    source = ember.build(*tiled_matmul(), target="metal").get_source()
    assert "threadgroup float A_shared[256];" in source
    assert source.count("threadgroup_barrier(mem_flags::mem_threadgroup);") == 2
    assert "__syncthreads" not in source and "__local" not in source
    parse_as_cpp(source, tmp_path)


LACKING = """
func.func @lacking(%A: tensor<64xf32> {ember.name = "A"}) -> tensor<64xf32> {
  %E = te.compute "E" (%i) -> tensor<64xf32> {
    %0 = te.read %A[%i] : tensor<64xf32>
    %1 = math.erf %0 : f32
    %2 = math.log1p %0 : f32
    %3 = math.cbrt %0 : f32
    %4 = arith.addf %1, %2 : f32
    %5 = arith.addf %4, %3 : f32
    te.yield %5 : f32
  }
  te.schedule {
    te.bind "E" "i" "threadIdx.x"
  }
  func.return %E : tensor<64xf32>
}
"""


def test_math_is_metals_own_and_helpers_stand_in_for_what_it_lacks(tmp_path):
    s, args = softmax()
    source = ember.build(s, args, target="metal").get_source()
    assert "metal::precise::exp(" in source and "expf(" not in source
    source = ember.build(LACKING, target="metal").get_source()
    for helper in ("ember_erf", "ember_log1p", "ember_cbrt"):
        assert f"static inline float {helper}(float x) {{" in source
    parse_as_cpp(source, tmp_path)


def test_float16_is_native_half(tmp_path):
    s, args = half_program(256)
    source = ember.build(s, args, target="metal").get_source()
    assert "device const half*" in source and "ember_round_f16" not in source
    parse_as_cpp(source, tmp_path)


def test_float64_is_refused_naming_the_op():
    A = te.placeholder((64,), name="A", dtype="float64")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    with pytest.raises(
        SourceError, match=r"metal source: 'memref.load' in @\w+ uses f64"
    ):
        ember.build(s, [A, B], target="metal")
    assert "double" in ember.build(s, [A, B], target="opencl").get_source()


def test_a_block_over_max_num_threads_is_refused():
    with pytest.raises(SourceError, match="more than max_num_threads = 32"):
        ember.build(*vecadd(), target="metal -max_num_threads=32")


def test_running_needs_a_metal_runtime():
    mod = ember.build(*vecadd(), target="metal")
    a = np.ones(1024, np.float32)
    with pytest.raises(EmberError, match="no runtime for metal devices"):
        mod(a, a, np.empty_like(a))


def test_a_model_compiles_to_one_msl_unit(tmp_path):
    """compile_model gives a metal DeviceModule: every kernel in one MSL unit,
    its plan launching them all; running it asks for a Metal runtime."""
    model = onnx_models.mlp()
    mod = ember.compile_model(model, target="metal")
    assert mod.kind == "metal"
    plan = mod.plan
    launched = {
        launch["kernel"] for f in plan["functions"].values() for launch in f["launches"]
    }
    source = mod.get_source("metal")
    assert launched and all(f"\n{k}(device " in source for k in launched)
    assert source.count("kernel void\n") == len(launched)
    parse_as_cpp(source, tmp_path)
    x = onnx_models.random_input(model)["input"]
    with pytest.raises(EmberError, match="no runtime for metal devices"):
        mod["default_run"](x, np.zeros((8, 10), np.float32))

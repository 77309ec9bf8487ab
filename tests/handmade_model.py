"""A model library built by hand, the way the AOT compiler builds one: a
two-layer perceptron whose `default_run(x, y, workspace, params)` reads its
weights from the params blob and keeps its hidden layer in the workspace
(memref.view at byte offsets), with the `ember.model` module attribute that
func-packed-abi turns into metadata and the size globals.

    y = relu(x @ w1.T + b1) @ w2.T + b2        x (1, K), y (1, N), hidden (1, H)

The runtime tests (GraphModule, ember-run, the C runner) use it until they can
use models from the real compiler too.
"""

import json

import numpy as np

K, H, N = 8, 16, 4
PARAM_SHAPES = {"w1": (H, K), "b1": (H,), "w2": (N, H), "b2": (N,)}


def _layout() -> tuple[dict, int]:
    layout, offset = {}, 0
    for name, shape in PARAM_SHAPES.items():
        layout[name] = {"offset": offset, "shape": list(shape), "dtype": "float32"}
        offset += -(-int(np.prod(shape)) * 4 // 64) * 64
    return layout, offset


LAYOUT, PARAMS_BYTES = _layout()
WORKSPACE_BYTES = 64 * -(-H * 4 // 64)


def random_params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        name: rng.standard_normal(shape).astype("float32")
        for name, shape in PARAM_SHAPES.items()
    }


def reference(x: np.ndarray, params: dict[str, np.ndarray]) -> np.ndarray:
    h = np.maximum(x @ params["w1"].T + params["b1"], 0)
    return h @ params["w2"].T + params["b2"]


def model_json(embedded: bool, input_name: str = "x") -> str:
    return json.dumps(
        {
            "inputs": [{"name": input_name, "shape": [1, K], "dtype": "float32"}],
            "outputs": [{"name": "y", "shape": [1, N], "dtype": "float32"}],
            "workspace_bytes": WORKSPACE_BYTES,
            "params_bytes": PARAMS_BYTES,
            "params": LAYOUT,
            "params_embedded": embedded,
        }
    )


def _view(buffer: str, size: int, name: str, offset: int, shape) -> str:
    dims = "x".join(map(str, shape))
    return (
        f"    %{name}_at = arith.constant {offset} : index\n"
        f"    %{name} = memref.view %{buffer}[%{name}_at][] : "
        f"memref<{size}xi8> to memref<{dims}xf32>\n"
    )


def model_ir(embedded: bool = False, input_name: str = "x") -> str:
    """The loop-level IR of the model (scf loops over memrefs)."""
    attr = json.dumps(model_json(embedded, input_name))
    views = "".join(
        _view("params", PARAMS_BYTES, name, LAYOUT[name]["offset"], shape)
        for name, shape in PARAM_SHAPES.items()
    ) + _view("ws", WORKSPACE_BYTES, "h", 0, (H,))
    return f"""builtin.module attributes {{ember.model = {attr}}} {{
  func.func @default_run(%x: memref<1x{K}xf32> {{ember.name = "{input_name}"}},
      %y: memref<1x{N}xf32> {{ember.name = "y", ember.output}},
      %ws: memref<{WORKSPACE_BYTES}xi8> {{ember.name = "workspace", ember.output}},
      %params: memref<{PARAMS_BYTES}xi8> {{ember.name = "params"}}) {{
{views}    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %k = arith.constant {K} : index
    %hn = arith.constant {H} : index
    %n = arith.constant {N} : index
    %zero = arith.constant 0.0 : f32
    scf.for %j = %c0 to %hn step %c1 {{
      %bias = memref.load %b1[%j] : memref<{H}xf32>
      %acc = scf.for %r = %c0 to %k step %c1 iter_args(%s = %bias) -> (f32) {{
        %xv = memref.load %x[%c0, %r] : memref<1x{K}xf32>
        %wv = memref.load %w1[%j, %r] : memref<{H}x{K}xf32>
        %p = arith.mulf %xv, %wv : f32
        %t = arith.addf %s, %p : f32
        scf.yield %t : f32
      }}
      %relu = arith.maximumf %acc, %zero : f32
      memref.store %relu, %h[%j] : memref<{H}xf32>
    }}
    scf.for %j = %c0 to %n step %c1 {{
      %bias = memref.load %b2[%j] : memref<{N}xf32>
      %acc = scf.for %r = %c0 to %hn step %c1 iter_args(%s = %bias) -> (f32) {{
        %hv = memref.load %h[%r] : memref<{H}xf32>
        %wv = memref.load %w2[%j, %r] : memref<{N}x{H}xf32>
        %p = arith.mulf %hv, %wv : f32
        %t = arith.addf %s, %p : f32
        scf.yield %t : f32
      }}
      memref.store %acc, %y[%c0, %j] : memref<1x{N}xf32>
    }}
    func.return
  }}
}}
"""


def build(params: dict[str, np.ndarray] | None = None, input_name: str = "x"):
    """The compiled model (an LLVMModule): with `params` embedded (packed into
    its `__ember_params` blob), else expecting them from `load_params`."""
    import ember
    from ember.backends.llvm import LLVMModule
    from ember.runtime.params import pack_params

    mod = ember.build(model_ir(params is not None, input_name), name="default_run")
    if params is None:
        return mod
    blob = pack_params(params, LAYOUT, PARAMS_BYTES)
    assert isinstance(mod, LLVMModule)
    mod.add_data("__ember_params", blob)
    return mod

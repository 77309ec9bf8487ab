# RUN: python %s | filecheck %s
# A te.extern in text IR: compiled code calls a registered Python function
# between two computes, and a Python exception there comes back as itself.

import numpy as np

import ember
from ember import runtime

IR = """
func.func @sorted(%X: tensor<6xf32>) -> tensor<6xf32> {
  %N = te.compute "N" (%i) -> tensor<6xf32> {
    %x = te.read %X[%i] : tensor<6xf32>
    %c = arith.constant 0.0 : f32
    %n = arith.subf %c, %x : f32
    te.yield %n : f32
  }
  %S = te.extern "S" (%N) : (tensor<6xf32>) -> tensor<6xf32> {
  ^bb0(%in: memref<6xf32>, %out: memref<6xf32>):
    loop.call_packed "demo.sort"(%in, %out, "ascending") : memref<6xf32>, memref<6xf32>
  }
  %D = te.compute "D" (%i) -> tensor<6xf32> {
    %s = te.read %S[%i] : tensor<6xf32>
    %d = arith.addf %s, %s : f32
    te.yield %d : f32
  }
  func.return %D : tensor<6xf32>
}
"""


@runtime.register_func("demo.sort")
def sort(x, y, order):
    print("callback:", order, x.shape)
    if np.isnan(x.numpy()).any():
        raise ValueError("cannot sort NaN")
    y.copyfrom(np.sort(x.numpy()))


mod = ember.build(IR, name="sorted")
print(mod.get_source("loop").count("loop.call_packed"), "call in the loop IR")
# CHECK: 1 call in the loop IR
x = np.array([3, 1, 4, 1, 5, 9], "float32")
d = np.empty(6, "float32")
mod(x, d)
# CHECK: callback: ascending (6,)
print("sorted:", " ".join(f"{v:g}" for v in d))
# CHECK: sorted: -18 -10 -8 -6 -2 -2

x[2] = np.nan
try:
    mod(x, d)
except ValueError as e:
    print("error:", e, "|", e.__notes__[0])
# CHECK: callback: ascending (6,)
# CHECK: error: cannot sort NaN | raised in callback 'demo.sort', called by compiled function 'sorted'

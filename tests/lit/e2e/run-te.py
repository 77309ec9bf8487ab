# RUN: python %s | filecheck %s
# A te function in text IR, compiled with the default pipeline and run natively.

import numpy as np

import ember

IR = """
func.func @axpy(%X: tensor<6xf32>, %Y: tensor<6xf32>) -> tensor<6xf32> {
  %Z = te.compute "Z" (%i) -> tensor<6xf32> {
    %x = te.read %X[%i] : tensor<6xf32>
    %y = te.read %Y[%i] : tensor<6xf32>
    %a = arith.constant 3.0 : f32
    %ax = arith.mulf %a, %x : f32
    %z = arith.addf %ax, %y : f32
    te.yield %z : f32
  }
  func.return %Z : tensor<6xf32>
}
"""

mod = ember.build(IR, name="axpy")
x = np.arange(6, dtype="float32")
y = np.full(6, 0.5, dtype="float32")
z = np.empty(6, "float32")
mod(x, y, z)
print("axpy:", " ".join(f"{v:g}" for v in z))
# CHECK: axpy: 0.5 3.5 6.5 9.5 12.5 15.5
assert np.array_equal(z, 3 * x + y)

try:
    mod(x, y, np.empty(5, "float32"))
except ember.runtime.EmberError as e:
    print("error:", e)
# CHECK: error: axpy: argument 2 (Z): expected float32 tensor of shape (6,)

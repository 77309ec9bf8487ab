// RUN: not ember-opt %s -p loop-vectorize 2>&1 | filecheck %s

// The target a module names must be one LLVM knows.

// CHECK: ember.target = "llvm -mcpu=not-a-cpu"
// CHECK-SAME: -mcpu=not-a-cpu is not a CPU LLVM knows

builtin.module attributes {ember.target = "llvm -mcpu=not-a-cpu"} {
  func.func @f(%A: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c8 step %c1 vectorized {
      %a = memref.load %A[%i] : memref<8xf32>
      memref.store %a, %A[%i] : memref<8xf32>
    }
    func.return
  }
}

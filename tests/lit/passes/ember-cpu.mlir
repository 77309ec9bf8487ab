// RUN: ember-opt %s -p ember-cpu | filecheck %s
// RUN: ember-opt %s -p ember-cpu -t llvm | filecheck %s --check-prefix=LLVM

// The default CPU pipeline takes te IR all the way to the llvm dialect: nothing of
// te, loop, scf, cf, arith, math, memref or func is left.

func.func @scale(%A: tensor<16xf32>) -> tensor<16xf32> {
  %B = te.compute "B" (%i) -> tensor<16xf32> {
    %a = te.read %A[%i] : tensor<16xf32>
    %c = arith.constant 2.0 : f32
    %b = arith.mulf %a, %c : f32
    te.yield %b : f32
  }
  func.return %B : tensor<16xf32>
}

// CHECK:     llvm.func @scale(
// CHECK-NOT: te.
// CHECK-NOT: loop.
// CHECK-NOT: scf.
// CHECK-NOT: cf.
// CHECK-NOT: arith.
// CHECK-NOT: memref.
// CHECK-NOT: func.func
// CHECK-NOT: unrealized_conversion_cast

// LLVM-DAG: define i32 @scale(ptr
// LLVM-DAG: fmul

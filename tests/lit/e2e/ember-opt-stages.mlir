// RUN: ember-opt %s -p ember-cpu --print-between-passes | filecheck %s
// RUN: echo "// nothing but a comment" | ember-opt | filecheck %s --check-prefix=EMPTY

// `ember-cpu` expands into its passes, so every stage can be printed.

// CHECK: IR after convert-te-to-loop:
// CHECK: loop.for
// CHECK: IR after convert-loop-to-scf:
// CHECK: scf.for
// CHECK: IR after convert-scf-to-cf:
// CHECK: cf.cond_br
// CHECK: IR after func-packed-abi:
// CHECK: IR after convert-func-to-llvm:
// CHECK: llvm.func @neg

// An empty input is an empty module, as in mlir-opt.
// EMPTY: builtin.module {
// EMPTY-NEXT: }

func.func @neg(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    %b = arith.negf %a : f32
    te.yield %b : f32
  }
  func.return %B : tensor<4xf32>
}

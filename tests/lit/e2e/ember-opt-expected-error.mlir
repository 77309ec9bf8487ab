// RUN: not ember-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// MLIR's expected-error annotations, on ember ops: the error must come on the
// annotated line with the message, or ember-opt fails. The first two cases are
// met; the third is not, and only it is reported.
// CHECK-NOT: unexpected error
// CHECK: ember-opt-expected-error.mlir:[[# @LINE + 25]]: error: expected error "this error never comes" was not produced
// CHECK-NOT: was not produced

func.func @two_indices(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{expected 1 index block arguments, got 2}}
  %B = te.compute "B" (%i, %j) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  func.return %B : tensor<4xf32>
}

// -----

func.func @bad_param() {
  // expected-error@+1 {{expected a non-empty param name, got ''}}
  %w = graph.param "" : tensor<4xf32>
  func.return
}

// -----

// An annotation that no error meets fails the run.
func.func @fine(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{this error never comes}}
  %B = te.compute "B" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  func.return %B : tensor<4xf32>
}

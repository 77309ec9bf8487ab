// RUN: not ember-opt %s 2>&1 | filecheck %s --check-prefix=VERIFY

// A verifier error: file:line:col of the failing op, its source line, a caret.
// VERIFY: ember-opt-verify-error.mlir:[[# @LINE + 6]]:3: error: 'te.compute' op expected 1 index block arguments, got 2
// VERIFY-NEXT: {{^}}  %B = te.compute "B" (%i, %j) -> tensor<4xf32> {
// VERIFY-NEXT: {{^}}  ^{{$}}
// VERIFY-NOT: Traceback

func.func @g(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i, %j) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  func.return %B : tensor<4xf32>
}

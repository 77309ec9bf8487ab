// RUN: not ember-opt %s 2>&1 | filecheck %s

// A parse error: file:line:col, the offending line and a caret under the token.
// CHECK: ember-opt-parse-error.mlir:[[# @LINE + 6]]:24: error: type expected
// CHECK-NEXT: {{^}}  %b = arith.negf %a : f33{{$}}
// CHECK-NEXT: {{^}}                       ^{{$}}
// CHECK-NOT: Traceback

func.func @f(%a: f32) -> f32 {
  %b = arith.negf %a : f33
  func.return %b : f32
}

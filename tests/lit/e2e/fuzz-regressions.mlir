// RUN: not timeout 60 ember-opt %s --split-input-file 2>&1 | filecheck %s

// Inputs the ember-opt fuzzer (tests/test_fuzz_ember_opt.py) found, cut down: each
// gets one diagnostic, no traceback, and no hang.

// An unterminated string literal: xDSL's lexer backtracks exponentially on it
// (hours for this line); ember-opt checks literals in linear time first.
// CHECK: fuzz-regressions.mlir:[[# @LINE + 3]]:19
// CHECK: string literal not closed on its line
func.func @unterminated_string() -> tensor<4xf32> {
  %C = te.compute "C( (%-) -> tensor<9223372036854775807xf32> {
    %c = arith.constant 1 : i32
    te.yield %c : i32
  }
  func.return %C : tensor<4xf32>
}
// CHECK-NOT: Traceback

// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// A range of known length is a graph.constant.
func.func @known_limit() -> tensor<4xi64> {
  %0 = graph.range {start = 0, limit = 4, delta = 1} : () -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// CHECK: expected a symbolic limit (a range of known length is a graph.constant), got 4

// -----

func.func @zero_delta() -> tensor<?xi64, ["n"]> {
  %0 = graph.range {start = 0, limit = "n", delta = 0} : () -> tensor<?xi64, ["n"]>
  func.return %0 : tensor<?xi64, ["n"]>
}

// CHECK: expected a non-zero delta, got 0

// -----

func.func @no_limit() -> tensor<?xi64, ["n"]> {
  %0 = graph.range {start = 0} : () -> tensor<?xi64, ["n"]>
  func.return %0 : tensor<?xi64, ["n"]>
}

// CHECK: property 'limit' expected

// -----

// The count is the one the rule derives, the elements i64.
func.func @count() -> tensor<?xi64, ["n"]> {
  %0 = graph.range {start = 0, limit = "n", delta = 2} : () -> tensor<?xi64, ["n"]>
  func.return %0 : tensor<?xi64, ["n"]>
}

// CHECK: expected tensor<?xi64, ["(n + 1) // 2"]>, got tensor<?xi64, ["n"]>

// -----

func.func @element() -> tensor<?xi32, ["n"]> {
  %0 = graph.range {start = 0, limit = "n"} : () -> tensor<?xi32, ["n"]>
  func.return %0 : tensor<?xi32, ["n"]>
}

// CHECK: expected tensor<?xi64, ["n"]>, got tensor<?xi32, ["n"]>

// -----

func.func @operand(%x: tensor<4xi64>) -> tensor<?xi64, ["n"]> {
  %0 = graph.range %x {start = 0, limit = "n"} : (tensor<4xi64>) -> tensor<?xi64, ["n"]>
  func.return %0 : tensor<?xi64, ["n"]>
}

// CHECK: Expected 0 operands, but got 1

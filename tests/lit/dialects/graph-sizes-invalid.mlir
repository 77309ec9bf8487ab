// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Sizes all known are a graph.constant.
func.func @known() -> tensor<2xi64> {
  %0 = graph.sizes {values = [2, 3], shape = [2]} : () -> tensor<2xi64>
  func.return %0 : tensor<2xi64>
}

// CHECK: expected a symbolic value (sizes all known are a graph.constant), got [2, 3]

// -----

func.func @count() -> tensor<3xi64> {
  %0 = graph.sizes {values = ["n", 2], shape = [3]} : () -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}

// CHECK: expected one value per element of shape [3], got 2 values

// -----

func.func @no_values() -> tensor<i64> {
  %0 = graph.sizes {shape = []} : () -> tensor<i64>
  func.return %0 : tensor<i64>
}

// CHECK: property 'values' expected

// -----

// The elements are i64, the shape `shape`.
func.func @element() -> tensor<i32> {
  %0 = graph.sizes {values = ["n"]} : () -> tensor<i32>
  func.return %0 : tensor<i32>
}

// CHECK: expected tensor<i64>, got tensor<i32>

// -----

func.func @operand(%x: tensor<i64>) -> tensor<i64> {
  %0 = graph.sizes %x {values = ["n"]} : (tensor<i64>) -> tensor<i64>
  func.return %0 : tensor<i64>
}

// CHECK: Expected 0 operands, but got 1

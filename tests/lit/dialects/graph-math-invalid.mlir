// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @is_nan_of_integers(%x: tensor<4xi64>) {
  %y = graph.is_nan %x : (tensor<4xi64>) -> tensor<4xi1>
  func.return
}

// CHECK: expected a float operand, got i64

// -----

func.func @is_inf_not_bool(%x: tensor<4xf32>) {
  %y = graph.is_inf %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: expected tensor<4xi1>, got tensor<4xf32>

// -----

func.func @celu_zero_alpha(%x: tensor<4xf32>) {
  %y = graph.celu %x {alpha = 0.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: expected a non-zero alpha, got 0.0

// -----

func.func @sin_wrong_shape(%x: tensor<4xf32>) {
  %y = graph.sin %x : (tensor<4xf32>) -> tensor<2xf32>
  func.return
}

// CHECK: expected tensor<4xf32>, got tensor<2xf32>

// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @float_indices(%x: tensor<4x2xf32>, %i: tensor<3xf32>) {
  %y = graph.gather %x, %i : (tensor<4x2xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  func.return
}

// CHECK: expected i32 or i64 indices, got f32

// -----

func.func @axis_out_of_range(%x: tensor<4x2xf32>, %i: tensor<3xi64>) {
  %y = graph.gather %x, %i {axis = 2} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  func.return
}

// CHECK: expected an axis in [-2, 2), got 2

// -----

func.func @wrong_result(%x: tensor<4x2xf32>, %i: tensor<3xi64>) {
  %y = graph.gather %x, %i : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
  func.return
}

// CHECK: expected tensor<3x2xf32>, got tensor<4x2xf32>

// -----

func.func @scalar_data(%x: tensor<f32>, %i: tensor<i64>) {
  %y = graph.gather %x, %i : (tensor<f32>, tensor<i64>) -> tensor<f32>
  func.return
}

// CHECK: expected data of rank 1 or more, got a scalar

// -----

func.func @argmax_axis_out_of_range(%x: tensor<4x2xf32>) {
  %y = graph.argmax %x {axis = -3} : (tensor<4x2xf32>) -> tensor<1x2xi64>
  func.return
}

// CHECK: expected an axis in [-2, 2), got -3

// -----

func.func @argmin_float_result(%x: tensor<4x2xf32>) {
  %y = graph.argmin %x : (tensor<4x2xf32>) -> tensor<1x2xf32>
  func.return
}

// CHECK: expected tensor<1x2xi64>, got tensor<1x2xf32>

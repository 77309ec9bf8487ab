// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @cumprod_axis(%x: tensor<3xf32>) {
  %y = graph.cumprod %x {axis = 1} : (tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected axis in [-1, 1), got 1

// -----

func.func @reduce_prod_result(%x: tensor<2x3xf32>) {
  %y = graph.reduce_prod %x {axes = [1]} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// CHECK: expected tensor<2xf32>, got tensor<3xf32>

// -----

func.func @scatter_float_indices(%x: tensor<4x3xf32>, %i: tensor<2x1xf32>, %u: tensor<2x3xf32>) {
  %y = graph.scatter_nd %x, %i, %u : (tensor<4x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// CHECK: expected i32 or i64 indices, got f32

// -----

func.func @scatter_long_rows(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) {
  %y = graph.scatter_nd %x, %i, %u : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x3xf32>
  func.return
}

// CHECK: expected indices (M, q) with 1 <= q <= 2, got (2, 3)

// -----

func.func @scatter_updates(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) {
  %y = graph.scatter_nd %x, %i, %u : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return
}

// CHECK: expected updates of shape (2, 3), got (2, 4)

// -----

func.func @scatter_reduction(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) {
  %y = graph.scatter_nd %x, %i, %u {reduction = 5} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// CHECK: expected a reduction in [0, 5), got 5

// -----

func.func @scatter_update_type(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf64>) {
  %y = graph.scatter_nd %x, %i, %u : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf64>) -> tensor<4x3xf32>
  func.return
}

// CHECK: expected updates of f32, got f64

// -----

func.func @dilated_mean_result(%x: tensor<1x2x5x5xf32>) {
  %y = graph.avg_pool2d %x {kernel = [2, 2], dilation = [2, 2]} : (tensor<1x2x5x5xf32>) -> tensor<1x2x4x4xf32>
  func.return
}

// CHECK: expected tensor<1x2x3x3xf32>, got tensor<1x2x4x4xf32>

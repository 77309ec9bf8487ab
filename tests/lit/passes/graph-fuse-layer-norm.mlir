// RUN: ember-opt %s --split-input-file -p graph-fuse-layer-norm | filecheck %s

// The written-out layer norm (Pow for the square) becomes one layer_norm with a
// unit scale; the Mul and Add after it stay (graph-fuse-ops makes them its
// epilogue).

// CHECK-LABEL: func.func @pow_form(
// CHECK-SAME:      %[[X:.*]]: tensor<2x8x16xf32>, %[[G:.*]]: tensor<16xf32>)
// CHECK:         %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<1xf32>
// CHECK-NEXT:    %[[N:.*]] = graph.layer_norm %[[X]], %[[ONE]] {axis = 2, epsilon = 1.000000e-05 : f32} : (tensor<2x8x16xf32>, tensor<1xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    graph.mul %[[N]], %[[G]]
// CHECK-NOT:     graph.reduce_mean
// CHECK-NOT:     graph.sqrt
func.func @pow_form(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %m = graph.reduce_mean %x {axes = [-1], keepdims = true} : (tensor<2x8x16xf32>) -> tensor<2x8x1xf32>
  %d = graph.sub %x, %m : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %s = graph.pow %d, %two : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %v = graph.reduce_mean %s {axes = [-1], keepdims = true} : (tensor<2x8x16xf32>) -> tensor<2x8x1xf32>
  %e = graph.add %v, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %r = graph.sqrt %e : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = graph.div %d, %r : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %y = graph.mul %n, %g : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  func.return %y : tensor<2x8x16xf32>
}

// -----

// Two trailing axes, the square as a product, epsilon on the left.

// CHECK-LABEL: func.func @mul_form(
// CHECK:         graph.layer_norm %{{.*}}, %{{.*}} {axis = 1, epsilon = 1.000000e-03 : f32} : (tensor<2x4x6xf32>, tensor<1xf32>) -> tensor<2x4x6xf32>
// CHECK-NOT:     graph.div
func.func @mul_form(%x: tensor<2x4x6xf32>) -> tensor<2x4x6xf32> {
  %eps = graph.constant dense<1.0e-03> : tensor<f32>
  %m = graph.reduce_mean %x {axes = [1, 2], keepdims = true} : (tensor<2x4x6xf32>) -> tensor<2x1x1xf32>
  %d = graph.sub %x, %m : (tensor<2x4x6xf32>, tensor<2x1x1xf32>) -> tensor<2x4x6xf32>
  %s = graph.mul %d, %d : (tensor<2x4x6xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %v = graph.reduce_mean %s {axes = [-2, -1], keepdims = true} : (tensor<2x4x6xf32>) -> tensor<2x1x1xf32>
  %e = graph.add %eps, %v : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %r = graph.sqrt %e : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %n = graph.div %d, %r : (tensor<2x4x6xf32>, tensor<2x1x1xf32>) -> tensor<2x4x6xf32>
  func.return %n : tensor<2x4x6xf32>
}

// -----

// Not a layer norm: the variance is also an output, or the mean runs over a
// leading axis; nothing changes.

// CHECK-LABEL: func.func @variance_read_elsewhere(
// CHECK-NOT:     graph.layer_norm
// CHECK:         graph.div
func.func @variance_read_elsewhere(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %m = graph.reduce_mean %x {axes = [1], keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %s = graph.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %s {axes = [1], keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %e = graph.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = graph.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div %d, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %n, %v : tensor<4x8xf32>, tensor<4x1xf32>
}

// CHECK-LABEL: func.func @leading_axis(
// CHECK-NOT:     graph.layer_norm
func.func @leading_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %m = graph.reduce_mean %x {axes = [0], keepdims = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %s = graph.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean %s {axes = [0], keepdims = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %e = graph.add %v, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %r = graph.sqrt %e : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n = graph.div %d, %r : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return %n : tensor<4x8xf32>
}

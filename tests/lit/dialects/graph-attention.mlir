// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// graph.attention with and without a mask, a float one (added) and a boolean
// one (the scores where true, the fill elsewhere).

// CHECK-LABEL: func.func @masked(
// CHECK-SAME:      %[[Q:.*]]: tensor<1x2x8x64xf32>, %[[K:.*]]: tensor<1x2x64x10xf32>, %[[V:.*]]: tensor<1x2x10x32xf32>, %[[M:.*]]: tensor<1x1x1x10xf32>)
// CHECK:         graph.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 1.250000e-01 : f32} : (tensor<1x2x8x64xf32>, tensor<1x2x64x10xf32>, tensor<1x2x10x32xf32>, tensor<1x1x1x10xf32>) -> tensor<1x2x8x32xf32>
func.func @masked(%q: tensor<1x2x8x64xf32>, %kt: tensor<1x2x64x10xf32>, %v: tensor<1x2x10x32xf32>, %m: tensor<1x1x1x10xf32>) -> tensor<1x2x8x32xf32> {
  %o = graph.attention %q, %kt, %v, %m {scale = 1.250000e-01 : f32} : (tensor<1x2x8x64xf32>, tensor<1x2x64x10xf32>, tensor<1x2x10x32xf32>, tensor<1x1x1x10xf32>) -> tensor<1x2x8x32xf32>
  func.return %o : tensor<1x2x8x32xf32>
}

// CHECK-LABEL: func.func @unmasked(
// CHECK:         graph.attention %{{.*}}, %{{.*}}, %{{.*}} : (tensor<5x3xf32>, tensor<3x7xf32>, tensor<7x2xf32>) -> tensor<5x2xf32>
func.func @unmasked(%q: tensor<5x3xf32>, %kt: tensor<3x7xf32>, %v: tensor<7x2xf32>) -> tensor<5x2xf32> {
  %o = graph.attention %q, %kt, %v : (tensor<5x3xf32>, tensor<3x7xf32>, tensor<7x2xf32>) -> tensor<5x2xf32>
  func.return %o : tensor<5x2xf32>
}

// CHECK-LABEL: func.func @boolean(
// CHECK:         graph.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f32, fill = -1.000000e+09 : f32} : (tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<4x6x8xf32>, tensor<6x6xi1>) -> tensor<4x6x8xf32>
func.func @boolean(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>, %c: tensor<6x6xi1>) -> tensor<4x6x8xf32> {
  %o = graph.attention %q, %kt, %v, %c {scale = 5.000000e-01 : f32, fill = -1.000000e+09 : f32} : (tensor<4x6x8xf32>, tensor<4x8x6xf32>, tensor<4x6x8xf32>, tensor<6x6xi1>) -> tensor<4x6x8xf32>
  func.return %o : tensor<4x6x8xf32>
}

// CHECK-LABEL: func.func @nan_to_zero(
// CHECK:         graph.attention %{{.*}}, %{{.*}}, %{{.*}} {nan_to_zero = true} : (tensor<5x3xf32>, tensor<3x7xf32>, tensor<7x2xf32>) -> tensor<5x2xf32>
func.func @nan_to_zero(%q: tensor<5x3xf32>, %kt: tensor<3x7xf32>, %v: tensor<7x2xf32>) -> tensor<5x2xf32> {
  %o = graph.attention %q, %kt, %v {nan_to_zero = true} : (tensor<5x3xf32>, tensor<3x7xf32>, tensor<7x2xf32>) -> tensor<5x2xf32>
  func.return %o : tensor<5x2xf32>
}

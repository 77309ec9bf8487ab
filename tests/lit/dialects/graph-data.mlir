// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Normalizations (graph_norm.py) and data movement (graph_data.py).

// CHECK-LABEL: func.func @norms(
// CHECK-SAME:      %[[X:.*]]: tensor<2x8x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[C:.*]]: tensor<8x1xf32>)
// CHECK-NEXT:    %[[L:.*]] = graph.layer_norm %[[X]], %[[G]], %[[B]] {axis = -1, epsilon = 1.000000e-05 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
// CHECK-NEXT:    graph.layer_norm %[[L]], %[[C]] {axis = 1, epsilon = 1.000000e-03 : f32} : (tensor<2x8x64xf32>, tensor<8x1xf32>) -> tensor<2x8x64xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "norms"
// GENERIC:         "graph.layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = -1 : i64, epsilon = 1.000000e-05 : f32}> : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
func.func @norms(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %c: tensor<8x1xf32>) -> tensor<2x8x64xf32> {
  %0 = graph.layer_norm %x, %g, %b {axis = -1, epsilon = 1.0e-05} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %1 = graph.layer_norm %0, %c {axis = 1, epsilon = 1.0e-03} : (tensor<2x8x64xf32>, tensor<8x1xf32>) -> tensor<2x8x64xf32>
  func.return %1 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @data(
// CHECK:         %[[S:.*]] = graph.slice %{{.*}} {starts = [0, 7], ends = [2, -1], steps = [1, -2]} : (tensor<2x8xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[E:.*]] = graph.broadcast_to %[[S]] {shape = [3, 1, 1]} : (tensor<2x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.tile %[[E]] {repeats = [1, 2, 1]} : (tensor<3x2x4xf32>) -> tensor<3x4x4xf32>
// CHECK-NEXT:    %[[U:.*]] = graph.trilu %[[T]] {upper = false, k = 1} : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.cumsum %[[U]] {axis = 2, exclusive = true, reverse = true} : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[C]] : (tensor<3x4x4xf32>) -> tensor<1x12x2x2xf32>
// CHECK-NEXT:    %[[D:.*]] = graph.depth_to_space %[[R]] {blocksize = 2, crd = true} : (tensor<1x12x2x2xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    graph.space_to_depth %[[D]] {blocksize = 2} : (tensor<1x3x4x4xf32>) -> tensor<1x12x2x2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "data"
// GENERIC:         "graph.slice"(%{{.*}}) <{starts = [0 : i64, 7 : i64], ends = [2 : i64, -1 : i64], steps = [1 : i64, -2 : i64]}> : (tensor<2x8xf32>) -> tensor<2x4xf32>
func.func @data(%x: tensor<2x8xf32>) -> tensor<1x12x2x2xf32> {
  %0 = graph.slice %x {starts = [0, 7], ends = [2, -1], steps = [1, -2]} : (tensor<2x8xf32>) -> tensor<2x4xf32>
  %1 = graph.broadcast_to %0 {shape = [3, 1, 1]} : (tensor<2x4xf32>) -> tensor<3x2x4xf32>
  %2 = graph.tile %1 {repeats = [1, 2, 1]} : (tensor<3x2x4xf32>) -> tensor<3x4x4xf32>
  %3 = graph.trilu %2 {upper = false, k = 1} : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %4 = graph.cumsum %3 {axis = 2, exclusive = true, reverse = true} : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %5 = graph.reshape %4 : (tensor<3x4x4xf32>) -> tensor<1x12x2x2xf32>
  %6 = graph.depth_to_space %5 {blocksize = 2, crd = true} : (tensor<1x12x2x2xf32>) -> tensor<1x3x4x4xf32>
  %7 = graph.space_to_depth %6 {blocksize = 2} : (tensor<1x3x4x4xf32>) -> tensor<1x12x2x2xf32>
  func.return %7 : tensor<1x12x2x2xf32>
}

// CHECK-LABEL: func.func @images(
// CHECK:         %[[D:.*]] = graph.conv2d_transpose %{{.*}}, %{{.*}}, %{{.*}} {strides = [2, 2], padding = [1, 1, 1, 1], output_padding = [1, 1], groups = 2} : (tensor<1x8x4x4xf32>, tensor<8x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    graph.resize %[[D]] {shape = [1, 4, 16, 12], scale_num = [1, 1, 2, 3], scale_den = [1, 1, 1, 2], coord = 2, linear = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x16x12xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "images"
// GENERIC:         "graph.conv2d_transpose"(%{{.*}}, %{{.*}}, %{{.*}}) <{strides = [2 : i64, 2 : i64], padding = [1 : i64, 1 : i64, 1 : i64, 1 : i64], output_padding = [1 : i64, 1 : i64], groups = 2 : i64}>
func.func @images(%x: tensor<1x8x4x4xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x16x12xf32> {
  %0 = graph.conv2d_transpose %x, %w, %b {strides = [2, 2], padding = [1, 1, 1, 1], output_padding = [1, 1], groups = 2} : (tensor<1x8x4x4xf32>, tensor<8x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %1 = graph.resize %0 {shape = [1, 4, 16, 12], scale_num = [1, 1, 2, 3], scale_den = [1, 1, 1, 2], coord = 2, linear = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x16x12xf32>
  func.return %1 : tensor<1x4x16x12xf32>
}

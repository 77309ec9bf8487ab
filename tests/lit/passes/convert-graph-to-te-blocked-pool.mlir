// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// Poolings read and write the channel blocks of the convolutions around them
// (each channel is pooled alone): the stem-like convolution writes blocks,
// the max pooling reads a vector of channels a tap and writes blocks, which
// the next convolution reads as they are; the global average pooling sums
// the blocks and writes NCHW, the layout of the function's result.

// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(%data0: tensor<1x3x16x16xf32>
// CHECK-SAME:      -> tensor<1x1x8x8x16xf32>
// CHECK-LABEL: func.func private @ember_max_pool2d_{{[0-9a-f]+}}(%data0: tensor<1x1x8x8x16xf32>
// CHECK-SAME:      -> tensor<1x1x4x4x16xf32>
// CHECK:         te.compute "max_pool2d.windows" {{.*}} reduce nanmax (%rh : 3, %rw : 3) -> tensor<1x1x4x4x16xf32>
// CHECK:         te.vectorize "max_pool2d.windows"
// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(%data0: tensor<1x1x4x4x16xf32>
// CHECK-SAME:      -> tensor<1x2x4x4x16xf32>
// CHECK-NOT:     te.compute "conv2d.data_pack"
// CHECK-LABEL: func.func private @ember_global_avg_pool2d_{{[0-9a-f]+}}(%data0: tensor<1x2x4x4x16xf32>
// CHECK-SAME:      -> tensor<1x32x1x1xf32>
// CHECK:         te.compute "global_avg_pool2d.sum" {{.*}} reduce sum (%rh : 4, %rw : 4) -> tensor<1x2x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:         graph.call_kernel @ember_conv2d_relu_{{.*}} {ember.layout = "NCHW16c"}
// CHECK:         graph.call_kernel @ember_max_pool2d_{{.*}} {ember.layout = "NCHW16c"}
// CHECK:         graph.call_kernel @ember_conv2d_relu_{{.*}} {ember.layout = "NCHW16c"}
// CHECK:         %[[P:.*]] = graph.call_kernel @ember_global_avg_pool2d_{{.*}} -> tensor<1x32x1x1xf32>
// CHECK:         func.return %[[P]] : tensor<1x32x1x1xf32>
func.func @main(%x: tensor<1x3x16x16xf32> {ember.name = "data"}) -> tensor<1x32x1x1xf32> {
  %w1 = graph.param "w1" : tensor<16x3x3x3xf32>
  %w2 = graph.param "w2" : tensor<32x16x1x1xf32>
  %c1 = graph.conv2d %x, %w1 {padding = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x3x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %r1 = graph.relu %c1 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %p = graph.max_pool2d %r1 {kernel = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %c2 = graph.conv2d %p, %w2 {padding = [0, 0, 0, 0]} : (tensor<1x16x4x4xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32>
  %r2 = graph.relu %c2 : (tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  %g = graph.global_avg_pool2d %r2 : (tensor<1x32x4x4xf32>) -> tensor<1x32x1x1xf32>
  func.return %g : tensor<1x32x1x1xf32>
}

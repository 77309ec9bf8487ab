// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// A grouped convolution whose vectors of output channels cover whole groups
// (RegNetY's groups of 8 channels) reads and writes channel blocks: its pack
// only adds the border to the blocked data (a copy of whole vectors), and it
// writes blocks for the next convolution. Groups of one output channel (the
// direct kernel) keep NCHW.

// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(%data0: tensor<1x2x8x8x16xf32>
// CHECK-SAME:      -> tensor<1x2x8x8x16xf32>
// CHECK:         te.compute "conv2d.data_pack" {{.*}} -> tensor<1x2x10x10x16xf32>
// CHECK:         te.read %data0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<1x2x8x8x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:         %[[A:.*]] = graph.call_kernel @ember_conv2d_{{.*}} -> tensor<1x2x8x8x16xf32>
// CHECK:         %[[G:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}}(%[[A]], {{.*}} {ember.layout = "NCHW16c"} {{.*}} -> tensor<1x2x8x8x16xf32>
// CHECK:         %[[B:.*]] = graph.call_kernel @ember_conv2d_{{.*}}(%[[G]], {{.*}} -> tensor<1x32x8x8xf32>
// CHECK:         %[[D:.*]] = graph.call_kernel @ember_conv2d_{{.*}}(%[[B]], {{.*}} -> tensor<1x16x8x8xf32>
// CHECK:         func.return %[[D]]
func.func @main(%x: tensor<1x16x8x8xf32> {ember.name = "data"}) -> tensor<1x16x8x8xf32> {
  %w1 = graph.param "w1" : tensor<32x16x1x1xf32>
  %wg = graph.param "wg" : tensor<32x8x3x3xf32>
  %w2 = graph.param "w2" : tensor<32x32x1x1xf32>
  %wd = graph.param "wd" : tensor<16x2x3x3xf32>
  %a = graph.conv2d %x, %w1 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %g = graph.conv2d %a, %wg {padding = [1, 1, 1, 1], groups = 4} : (tensor<1x32x8x8xf32>, tensor<32x8x3x3xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %g : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %b = graph.conv2d %r, %w2 {padding = [0, 0, 0, 0]} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %d = graph.conv2d %b, %wd {padding = [1, 1, 1, 1], groups = 16} : (tensor<1x32x8x8xf32>, tensor<16x2x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %d : tensor<1x16x8x8xf32>
}

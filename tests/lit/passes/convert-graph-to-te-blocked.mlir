// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// A convolution's result that only convolutions read (as their data or in
// their epilogue, a residual) stays a blocked activation (N, C/b, H, W, b):
// its producer writes it blocked, the 1x1 convolution reads it as it is and
// the dilated 3x3 one only pads it. A result the function returns keeps its
// layout. A blocked call says so (`ember.layout`, read by the call plan).

// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(%data0: tensor<1x16x8x8xf32>
// CHECK-SAME:      -> tensor<1x1x8x8x16xf32>
// CHECK:         te.compute "conv2d.data_pack"
// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(%data0: tensor<1x1x8x8x16xf32>
// CHECK-SAME:      -> tensor<1x1x8x8x16xf32>
// CHECK-NOT:     te.compute "conv2d.data_pack"
// CHECK:         te.compute "conv2d.conv"
// CHECK-NOT:     te.compute "conv2d.data_pack"
// CHECK-LABEL: func.func private @ember_conv2d_add_{{[0-9a-f]+}}(%data0: tensor<1x1x8x8x16xf32>
// CHECK-SAME:      %data1: tensor<1x1x8x8x16xf32>
// CHECK-SAME:      -> tensor<1x16x8x8xf32>
// CHECK:         te.compute "conv2d.data_pack" {{.*}} -> tensor<1x1x12x12x16xf32>
// CHECK:         te.compute "data1.nchw" {{.*}} -> tensor<1x16x8x8xf32>
// CHECK:         te.compute_inline "data1.nchw"
// CHECK-LABEL: func.func @main(
// CHECK:         %[[A:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}}(%x, {{.*}} {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK:         %[[B:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}}(%[[A]], {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK:         %[[C:.*]] = graph.call_kernel @ember_conv2d_add_{{.*}}(%[[B]], %{{.*}}, %[[A]]) {{.*}} -> tensor<1x16x8x8xf32>
// CHECK:         func.return %[[C]] : tensor<1x16x8x8xf32>
func.func @main(%x: tensor<1x16x8x8xf32> {ember.name = "data"}) -> tensor<1x16x8x8xf32> {
  %w1 = graph.param "w1" : tensor<16x16x1x1xf32>
  %w2 = graph.param "w2" : tensor<16x16x1x1xf32>
  %w3 = graph.param "w3" : tensor<16x16x3x3xf32>
  %c1 = graph.conv2d %x, %w1 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %r1 = graph.relu %c1 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c2 = graph.conv2d %r1, %w2 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %r2 = graph.relu %c2 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c3 = graph.conv2d %r2, %w3 {padding = [2, 2, 2, 2], dilation = [2, 2]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %s = graph.add %c3, %r1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %s : tensor<1x16x8x8xf32>
}

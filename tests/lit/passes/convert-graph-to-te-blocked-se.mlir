// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// A squeeze-and-excitation block between convolutions stays blocked: the
// global pooling sums the blocks, the gate's two 1x1 convolutions read and
// write blocks of one pixel, and the multiply by the gate, (N, C, 1, 1), is
// a layout-free group: (N, C/b, 1, 1, b) broadcasts over the blocked
// activation as (N, C, 1, 1) over NCHW.

// CHECK-LABEL: func.func private @ember_global_avg_pool2d_{{[0-9a-f]+}}(%data0: tensor<1x2x8x8x16xf32>
// CHECK-SAME:      -> tensor<1x2x1x1x16xf32>
// CHECK-LABEL: func.func private @ember_mul_{{[0-9a-f]+}}(%data0: tensor<1x2x8x8x16xf32> {{.*}}, %data1: tensor<1x2x1x1x16xf32>
// CHECK-SAME:      -> tensor<1x2x8x8x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:         %[[X:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}} -> tensor<1x2x8x8x16xf32>
// CHECK:         %[[P:.*]] = graph.call_kernel @ember_global_avg_pool2d_{{.*}}(%[[X]]) {{.*}} -> tensor<1x2x1x1x16xf32>
// CHECK:         %[[R:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}}(%[[P]], {{.*}} -> tensor<1x1x1x1x8xf32>
// CHECK:         %[[G:.*]] = graph.call_kernel @ember_conv2d_sigmoid_{{.*}}(%[[R]], {{.*}} -> tensor<1x2x1x1x16xf32>
// CHECK:         %[[M:.*]] = graph.call_kernel @ember_mul_{{.*}}(%[[X]], %[[G]]) {ember.layout = "NCHW16c"} {{.*}} -> tensor<1x2x8x8x16xf32>
// CHECK:         graph.call_kernel @ember_conv2d_{{.*}}(%[[M]], {{.*}} -> tensor<1x32x8x8xf32>
// CHECK-NOT:     graph.call_kernel
func.func @main(%x: tensor<1x16x8x8xf32> {ember.name = "data"}) -> tensor<1x32x8x8xf32> {
  %w1 = graph.param "w1" : tensor<32x16x1x1xf32>
  %ws = graph.param "ws" : tensor<8x32x1x1xf32>
  %we = graph.param "we" : tensor<32x8x1x1xf32>
  %w2 = graph.param "w2" : tensor<32x32x1x1xf32>
  %c1 = graph.conv2d %x, %w1 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %a = graph.relu %c1 : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %p = graph.global_avg_pool2d %a : (tensor<1x32x8x8xf32>) -> tensor<1x32x1x1xf32>
  %s = graph.conv2d %p, %ws {padding = [0, 0, 0, 0]} : (tensor<1x32x1x1xf32>, tensor<8x32x1x1xf32>) -> tensor<1x8x1x1xf32>
  %sr = graph.relu %s : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %e = graph.conv2d %sr, %we {padding = [0, 0, 0, 0]} : (tensor<1x8x1x1xf32>, tensor<32x8x1x1xf32>) -> tensor<1x32x1x1xf32>
  %g = graph.sigmoid %e : (tensor<1x32x1x1xf32>) -> tensor<1x32x1x1xf32>
  %m = graph.mul %a, %g : (tensor<1x32x8x8xf32>, tensor<1x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %c2 = graph.conv2d %m, %w2 {padding = [0, 0, 0, 0]} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  func.return %c2 : tensor<1x32x8x8xf32>
}

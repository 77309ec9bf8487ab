// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// A blocked activation (N, C/b, H, W, b) over a symbolic batch keeps the
// encoding that names its batch: the call between two convolutions has the
// blocked type with `n` in it.

// CHECK-LABEL: func.func @main(
// CHECK:         %[[A:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}}(%x, {{.*}} {ember.layout = "NCHW16c"} : {{.*}} -> tensor<?x1x8x8x16xf32, ["n"]>
// CHECK:         graph.call_kernel @ember_conv2d_relu_{{.*}}(%[[A]], {{.*}} -> tensor<?x16x8x8xf32, ["n"]>
func.func @main(%x: tensor<?x16x8x8xf32, ["n"]> {ember.name = "data"}) -> tensor<?x16x8x8xf32, ["n"]> {
  %w1 = graph.param "w1" : tensor<16x16x1x1xf32>
  %w2 = graph.param "w2" : tensor<16x16x3x3xf32>
  %c1 = graph.conv2d %x, %w1 {padding = [0, 0, 0, 0]} : (tensor<?x16x8x8xf32, ["n"]>, tensor<16x16x1x1xf32>) -> tensor<?x16x8x8xf32, ["n"]>
  %r1 = graph.relu %c1 : (tensor<?x16x8x8xf32, ["n"]>) -> tensor<?x16x8x8xf32, ["n"]>
  %c2 = graph.conv2d %r1, %w2 {padding = [1, 1, 1, 1]} : (tensor<?x16x8x8xf32, ["n"]>, tensor<16x16x3x3xf32>) -> tensor<?x16x8x8xf32, ["n"]>
  %r2 = graph.relu %c2 : (tensor<?x16x8x8xf32, ["n"]>) -> tensor<?x16x8x8xf32, ["n"]>
  func.return %r2 : tensor<?x16x8x8xf32, ["n"]>
}

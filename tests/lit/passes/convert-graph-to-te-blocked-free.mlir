// RUN: ember-opt %s -p convert-graph-to-te | filecheck %s

// A group of elementwise ops over tensors of one shape (and one-element
// ones) computes the same in any layout: between blocked convolutions it
// reads and writes blocked activations as they lie (a quantized model's
// residual add, which no convolution's epilogue takes), so neither
// convolution scatters its result to NCHW nor packs its data back. A
// per-channel operand (1, C, 1, 1) that is a literal copied into the group is
// blocked by no plan: that group (and the convolution before it) keeps NCHW.

// CHECK-LABEL: func.func private @ember_mul_add_relu_{{[0-9a-f]+}}(%data0: tensor<1x1x8x8x16xf32> {{.*}}, %data1: tensor<1x1x8x8x16xf32>
// CHECK-SAME:      -> tensor<1x1x8x8x16xf32>
// CHECK-NOT:     .nchw
// CHECK:         te.compute "add" {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:         %[[A:.*]] = graph.call_kernel @ember_conv2d_{{.*}}(%x, {{.*}} {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK:         %[[B:.*]] = graph.call_kernel @ember_conv2d_{{.*}}(%[[A]], {{.*}} {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK:         %[[S:.*]] = graph.call_kernel @ember_mul_add_relu_{{.*}}(%[[B]], %[[A]]) {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK:         %[[Y:.*]] = graph.call_kernel @ember_conv2d_{{.*}}(%[[S]], {{.*}} -> tensor<1x16x8x8xf32>
// CHECK:         %[[Z:.*]] = graph.call_kernel @ember_mul_{{.*}}(%[[Y]], %{{.*}}) : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
// CHECK:         graph.call_kernel @ember_conv2d_{{.*}}(%[[Z]], {{.*}} -> tensor<1x16x8x8xf32>
func.func @main(%x: tensor<1x16x8x8xf32> {ember.name = "data"}) -> tensor<1x16x8x8xf32> {
  %w = graph.param "w" : tensor<16x16x1x1xf32>
  %a = graph.fused "conv_a" (%x, %w) ({
  ^bb0(%x0: tensor<1x16x8x8xf32>, %w0: tensor<16x16x1x1xf32>):
    %c = graph.conv2d %x0, %w0 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    graph.yield %c : tensor<1x16x8x8xf32>
  }) : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %b = graph.fused "conv_b" (%a, %w) ({
  ^bb0(%x0: tensor<1x16x8x8xf32>, %w0: tensor<16x16x1x1xf32>):
    %c = graph.conv2d %x0, %w0 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    graph.yield %c : tensor<1x16x8x8xf32>
  }) : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %s = graph.fused "add_relu" (%a, %b) ({
  ^bb0(%p: tensor<1x16x8x8xf32>, %q: tensor<1x16x8x8xf32>):
    %h = graph.constant dense<0.5> : tensor<1x1x1x1xf32>
    %m = graph.mul %q, %h : (tensor<1x16x8x8xf32>, tensor<1x1x1x1xf32>) -> tensor<1x16x8x8xf32>
    %t = graph.add %p, %m : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    %r = graph.relu %t : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    graph.yield %r : tensor<1x16x8x8xf32>
  }) : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %y = graph.fused "conv_c" (%s, %w) ({
  ^bb0(%x0: tensor<1x16x8x8xf32>, %w0: tensor<16x16x1x1xf32>):
    %c = graph.conv2d %x0, %w0 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    graph.yield %c : tensor<1x16x8x8xf32>
  }) : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %z = graph.fused "scale" (%y) ({
  ^bb0(%p: tensor<1x16x8x8xf32>):
    %k = graph.constant dense<2.0> : tensor<1x16x1x1xf32>
    %m = graph.mul %p, %k : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    graph.yield %m : tensor<1x16x8x8xf32>
  }) : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %v = graph.fused "conv_d" (%z, %w) ({
  ^bb0(%x0: tensor<1x16x8x8xf32>, %w0: tensor<16x16x1x1xf32>):
    %c = graph.conv2d %x0, %w0 {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    graph.yield %c : tensor<1x16x8x8xf32>
  }) : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %v : tensor<1x16x8x8xf32>
}

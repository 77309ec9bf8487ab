// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te{precision=bf16}' --split-input-file | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' --split-input-file | filecheck %s --check-prefix=F32
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te{precision=bf16}' --split-input-file | filecheck %s --check-prefix=MARK

// In a bfloat16 compilation a blocked activation that only convolutions read
// as their data is stored as bfloat16 bits (ui16, half the bytes): the
// expansion's result the depthwise convolution reads, the depthwise result
// the projection reads. The projection's result is also read by the residual
// add of a later kernel's epilogue, so it stays float32, blocked.

// CHECK:       func.func private @[[E:ember_conv2d_relu_[0-9a-f]+]](%data0: tensor<1x16x8x8xf32> {{.*}}) -> (tensor<1x2x8x8x16xi16> {ember.dtype = "uint16"})
// CHECK:       func.func private @[[D:ember_conv2d_relu_[0-9a-f]+]](%data0: tensor<1x2x8x8x16xi16> {ember.name = "data0", ember.dtype = "uint16"}, {{.*}}) -> (tensor<1x2x8x8x16xi16> {ember.dtype = "uint16"})
// CHECK-LABEL: func.func @main(
// CHECK:         %[[A:.*]] = graph.call_kernel @[[E]](%x, {{.*}}) {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x2x8x8x16xui16>
// CHECK:         %[[DW:.*]] = graph.call_kernel @[[D]](%[[A]], {{.*}}) {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x2x8x8x16xui16>
// CHECK:         %[[P:.*]] = graph.call_kernel @{{.*}}(%[[DW]], {{.*}}) {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK:         %[[Q:.*]] = graph.call_kernel @{{.*}}(%[[P]], {{.*}}) {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x2x8x8x16xui16>
// CHECK:         graph.call_kernel @{{.*}}(%[[Q]], {{.*}}, %[[P]]) : {{.*}} -> tensor<1x16x8x8xf32>

// Float32 compilations keep float32 activations.
// F32-NOT:     ui16
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w1 = graph.param "w1" : tensor<32x16x1x1xf32>
  %wd = graph.param "wd" : tensor<32x1x3x3xf32>
  %w2 = graph.param "w2" : tensor<16x32x1x1xf32>
  %w3 = graph.param "w3" : tensor<32x16x1x1xf32>
  %w4 = graph.param "w4" : tensor<16x32x1x1xf32>
  %c1 = graph.conv2d %x, %w1 : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %a = graph.relu %c1 : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %c2 = graph.conv2d %a, %wd {padding = [1, 1, 1, 1], groups = 32} : (tensor<1x32x8x8xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x8x8xf32>
  %d = graph.relu %c2 : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %p = graph.conv2d %d, %w2 : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  %c3 = graph.conv2d %p, %w3 : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %q = graph.relu %c3 : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %c4 = graph.conv2d %q, %w4 : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  %y = graph.add %c4, %p : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}
}

// -----

// A convolution marked float32 by hand (`ember.precision`) reads float32: the
// activation it reads is not rounded for it.

// MARK-LABEL: func.func @main(
// MARK:         %[[A:.*]] = graph.call_kernel @{{.*}}(%x, {{.*}}) {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x2x8x8x16xf32>
// MARK:         graph.call_kernel @{{.*}}(%[[A]], {{.*}}) : {{.*}} -> tensor<1x16x8x8xf32>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w1 = graph.param "w1" : tensor<32x16x1x1xf32>
  %w2 = graph.param "w2" : tensor<16x32x1x1xf32>
  %c1 = graph.conv2d %x, %w1 : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %a = graph.relu %c1 : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %y = graph.conv2d %a, %w2 {ember.precision = "float32"} : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}
}

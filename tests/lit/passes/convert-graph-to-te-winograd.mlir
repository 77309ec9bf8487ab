// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// A 3x3 stride-1 convolution over channels that fill vectors becomes a
// Winograd F(4x4, 3x3) kernel on an AVX-512 target: input tiles padded and
// transformed (6 x 6 per tile and channel), 36 GEMMs over the weight
// transformed at compile time (6x6x64x64 from 64x64x3x3), then the inverse
// transform with the bias and the epilogue, written blocked for the next
// convolution. A stride-2 one stays direct.

// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(%data0: tensor<1x64x16x16xf32>
// CHECK-SAME:      %conv2d.weight: tensor<6x6x2x64x32xf32>
// CHECK:         te.compute "conv2d.data_pad" {{.*}} -> tensor<1x4x18x18x16xf32>
// CHECK:         te.compute "conv2d.data_rows" {{.*}} -> tensor<16x4x6x6x16xf32>
// CHECK:         te.compute "conv2d.data_transform" {{.*}} -> tensor<6x6x16x64xf32>
// CHECK:         te.compute "conv2d.gemm"
// CHECK:         te.compute "conv2d.out_cols" {{.*}} -> tensor<6x4x16x64xf32>
// CHECK:         te.compute "conv2d" {{.*}} -> tensor<1x4x16x16x16xf32>
// CHECK-LABEL: func.func private @ember_conv2d_{{[0-9a-f]+}}(%data0: tensor<1x4x16x16x16xf32>
// CHECK-NOT:     te.compute "conv2d.gemm"
// CHECK:         te.compute "conv2d.conv"
// CHECK-LABEL: func.func @main(
// CHECK:         graph.call_kernel @ember_conv2d_relu_
// CHECK:         graph.call_kernel @ember_conv2d_
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -l3-bytes=8388608"} {
  func.func @main(%x: tensor<1x64x16x16xf32> {ember.name = "data"}) -> tensor<1x64x8x8xf32> {
    %w1 = graph.param "w1" : tensor<64x64x3x3xf32>
    %b1 = graph.param "b1" : tensor<64xf32>
    %w2 = graph.param "w2" : tensor<64x64x3x3xf32>
    %c1 = graph.conv2d %x, %w1, %b1 {padding = [1, 1, 1, 1]} : (tensor<1x64x16x16xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x16x16xf32>
    %r1 = graph.relu %c1 : (tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
    %c2 = graph.conv2d %r1, %w2 {padding = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x64x16x16xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32>
    func.return %c2 : tensor<1x64x8x8xf32>
  }
}

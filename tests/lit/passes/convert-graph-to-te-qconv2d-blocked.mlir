// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s

// Between two quantized convolutions the activation stays channel-blocked
// bytes, (N, C/16, H, W, 16): the first writes its vectors of channels whole,
// the second packs its words from the blocks (AVX-512 target).

// CHECK:       func.func private @[[A:ember_qconv2d_[0-9a-f]+]](%data0: tensor<1x8x6x6xi8> {{.*}}) -> (tensor<1x1x6x6x16xi8> {ember.dtype = "uint8"})
// CHECK:       func.func private @[[B:ember_qconv2d_[0-9a-f]+]](%data0: tensor<1x1x6x6x16xi8> {{.*}}) -> (tensor<1x32x6x6xi8> {ember.dtype = "uint8"})
// CHECK-LABEL: func.func @main(
// CHECK:         %[[Y:.*]] = graph.call_kernel @[[A]](%x, {{.*}}) {ember.layout = "NCHW16c"} : {{.*}} -> tensor<1x1x6x6x16xui8>
// CHECK:         graph.call_kernel @[[B]](%[[Y]], {{.*}}) -> tensor<1x32x6x6xui8>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server"} {
func.func @main(%x: tensor<1x8x6x6xui8>) -> tensor<1x32x6x6xui8> {
  %w = graph.param "w" : tensor<16x8x3x3xi8>
  %b = graph.param "b" : tensor<16xi32>
  %s = graph.param "s" : tensor<16xf32>
  %w2 = graph.param "w2" : tensor<32x16x1x1xi8>
  %b2 = graph.param "b2" : tensor<32xi32>
  %s2 = graph.param "s2" : tensor<32xf32>
  %y = graph.qconv2d %x, %w, %b, %s {padding = [1, 1, 1, 1], x_zero = 128, y_zero = 3, clip = [3, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x6x6xui8>
  %z = graph.qconv2d %y, %w2, %b2, %s2 {x_zero = 3, y_zero = 0, clip = [0, 255]} : (tensor<1x16x6x6xui8>, tensor<32x16x1x1xi8>, tensor<32xi32>, tensor<32xf32>) -> tensor<1x32x6x6xui8>
  func.return %z : tensor<1x32x6x6xui8>
}
}

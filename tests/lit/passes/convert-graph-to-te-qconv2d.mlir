// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s

// A quantized convolution becomes the int8 NCHWc kernel: the data packed to
// words of four channels' bytes, the weight to (O/16, C/cb, KH, KW, cb/4, 16)
// words at compile time, the sum of byte
// dot products, and the requantization (float32 scale, round half to even,
// zero point, clip) in the final stage, which writes ui8 (te's i8 with
// ember.dtype "uint8"). The target is AVX-512's: 16 int32 lanes.

// CHECK:       func.func private @[[K:ember_qconv2d_[0-9a-f]+]](%data0: tensor<1x8x6x6xi8> {ember.name = "data0", ember.dtype = "uint8"}, %conv2d.weight: tensor<1x1x3x3x2x16xi32> {ember.name = "conv2d.weight"}, %conv2d.bias: tensor<16xi32> {{.*}}, %conv2d.scale: tensor<16xf32> {{.*}}) -> (tensor<1x16x6x6xi8> {ember.dtype = "uint8"})
// CHECK:         te.compute "conv2d.data_pack"
// CHECK:           arith.shli
// CHECK:           arith.ori
// CHECK:         te.compute "conv2d.conv"
// CHECK:           dot.u8i8
// CHECK:         te.compute "conv2d.weight_sum"
// CHECK:         te.compute "conv2d"
// CHECK:           math.roundeven
// CHECK:           arith.fptoui
// CHECK-LABEL: func.func @main(
// CHECK:         graph.call_kernel @[[K]](%x, {{.*}}) : (tensor<1x8x6x6xui8>, tensor<1x1x3x3x2x16xi32>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x6x6xui8>
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server"} {
func.func @main(%x: tensor<1x8x6x6xui8>) -> tensor<1x16x6x6xui8> {
  %w = graph.param "w" : tensor<16x8x3x3xi8>
  %b = graph.param "b" : tensor<16xi32>
  %s = graph.param "s" : tensor<16xf32>
  %y = graph.qconv2d %x, %w, %b, %s {padding = [1, 1, 1, 1], x_zero = 128, y_zero = 3, clip = [3, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x6x6xui8>
  func.return %y : tensor<1x16x6x6xui8>
}
}

// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s

// A quantized dense layer is dense's GEMM template on words: the rows' bytes
// read four at a time (int8 data flipped by the word), the weight packed at
// compile time to (N'/32, K/4, 32) words, byte dot products, the weight sums
// for the zero point, and the requantization; a GEMV variant where the rows
// are one (AVX-512 target: 16 int32 lanes).

// CHECK:       func.func private @[[K:ember_qdense_[0-9a-f]+]](%data0: tensor<?x64xi8, ["m"]> {ember.name = "data0"}, %dense.weight: tensor<1x16x32xi32> {ember.name = "dense.weight"}
// CHECK:         te.compute "dense.words"
// CHECK:           arith.xori
// CHECK:         te.compute "dense.gemm"
// CHECK:           dot.u8i8
// CHECK:         te.compute "dense.weight_sum"
// CHECK:         te.compute "dense"
// CHECK:           math.roundeven
// CHECK:       func.func private @[[K]]_v0(
// CHECK-LABEL: func.func @main(
// CHECK:         graph.call_kernel @[[K]](%x, {{.*}}) {ember.variants = [{callee = @[[K]]_v0, size = "m", equals = 1 : i64}]}
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=icelake-server"} {
func.func @main(%x: tensor<?x64xi8, ["m"]>) -> tensor<?x20xui8, ["m"]> {
  %w = graph.param "w" : tensor<20x64xi8>
  %b = graph.param "b" : tensor<20xi32>
  %s = graph.param "s" : tensor<20xf32>
  %y = graph.qdense %x, %w, %b, %s {x_zero = -3, y_zero = 0, clip = [0, 255]} : (tensor<?x64xi8, ["m"]>, tensor<20x64xi8>, tensor<20xi32>, tensor<20xf32>) -> tensor<?x20xui8, ["m"]>
  func.return %y : tensor<?x20xui8, ["m"]>
}
}

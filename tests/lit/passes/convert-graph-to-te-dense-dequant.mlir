// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s

// A 4-bit weight (two a byte) and its scales are packed into the panels of
// `dense` at compile time, bytes staying bytes: (N'/32, K/2, 32) ui8 and
// (N'/32, K/group, 32) f32. The product widens each nibble, takes 8 off and
// scales it inside the sum; the relu after it is the epilogue, and a GEMV
// variant runs where the rows are one.

// CHECK:       func.func private @[[K:ember_dense_dequant_relu_[0-9a-f]+]](%data0: tensor<?x64xf32, ["n"]> {ember.name = "data0"}, %dense.weight: tensor<2x32x32xi8> {ember.name = "dense.weight", ember.dtype = "uint8"}, %dense.scale: tensor<2x2x32xf32>
// CHECK:         te.compute "dense.gemm"
// CHECK:           arith.shrui
// CHECK:           arith.andi
// CHECK:           arith.uitofp
// CHECK:       func.func private @[[K]]_v0(
// CHECK-LABEL: func.func @main(
// CHECK:         graph.call_kernel @[[K]](%x, {{.*}}) {ember.variants = [{callee = @[[K]]_v0, size = "n", equals = 1 : i64}]} : (tensor<?x64xf32, ["n"]>, tensor<2x32x32xi8>, tensor<2x2x32xf32>, tensor<40xf32>)
func.func @main(%x: tensor<?x64xf32, ["n"]>) -> tensor<?x40xf32, ["n"]> {
  %w = graph.param "w" : tensor<40x32xui8>
  %s = graph.param "s" : tensor<40x2xf32>
  %b = graph.param "b" : tensor<40xf32>
  %y = graph.dense_dequant %x, %w, %s, %b {bits = 4, group = 32} : (tensor<?x64xf32, ["n"]>, tensor<40x32xui8>, tensor<40x2xf32>, tensor<40xf32>) -> tensor<?x40xf32, ["n"]>
  %z = graph.relu %y : (tensor<?x40xf32, ["n"]>) -> tensor<?x40xf32, ["n"]>
  func.return %z : tensor<?x40xf32, ["n"]>
}

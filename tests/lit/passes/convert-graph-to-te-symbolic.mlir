// RUN: ember-opt %s -p convert-graph-to-te | filecheck %s

// A graph over symbolic sizes lowers to kernels over them: the kernel's
// tensor types keep the encoding that names each dynamic dim, its size
// symbols are `index` arguments after its tensors, and the call passes the
// graph's own symbolic types. Schedules plan for representative sizes
// (the symbol's bound, else PLANNING_SIZE) and stay exact at every size.

// CHECK:       func.func private @ember_dense_{{[0-9a-f]+}}(%data0: tensor<?x16xf32, ["n"]> {ember.name = "data0"}
// CHECK-SAME:      %n: index {ember.symbol = "n"}) -> tensor<?x8xf32, ["n"]>
// The GEMM's rows padded to whole register tiles (of the host's size), as an
// expression:
// CHECK:         te.compute "dense.gemm" {{.*}} -> tensor<?x16xf32, ["[[T:[0-9]+]] * ((n + {{[0-9]+}}) // [[T]])"]>
// CHECK:       func.func private @ember_add_{{[0-9a-f]+}}(%data0: tensor<?x8xf32, ["n"]> {ember.name = "data0"}, %data1: tensor<8xf32> {ember.name = "data1"}, %n: index {ember.symbol = "n"})
// CHECK-LABEL: func.func @main(
// CHECK:         graph.call_kernel @ember_dense_{{[0-9a-f]+}}(%x, %{{.*}}) {ember.variants = {{.*}}} : (tensor<?x16xf32, ["n"]>, tensor<1x16x16xf32>) -> tensor<?x8xf32, ["n"]>
func.func @main(%x: tensor<?x16xf32, ["n"]>) -> tensor<?x8xf32, ["n"]> {
  %w = graph.param "w" : tensor<8x16xf32>
  %b = graph.param "b" : tensor<8xf32>
  %y = graph.dense %x, %w : (tensor<?x16xf32, ["n"]>, tensor<8x16xf32>) -> tensor<?x8xf32, ["n"]>
  %z = graph.add %y, %b : (tensor<?x8xf32, ["n"]>, tensor<8xf32>) -> tensor<?x8xf32, ["n"]>
  func.return %z : tensor<?x8xf32, ["n"]>
}

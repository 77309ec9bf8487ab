// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// A dense layer over a symbolic row count pads its rows to whole register
// tiles; where the rows are one at run time (a decode step) it runs as a
// matrix-vector product instead: the same computation scheduled apart, a
// variant function (`ember.variant_of`) the call names in `ember.variants`.

// CHECK:       func.func private @[[K:ember_dense_relu_[0-9a-f]+]](%data0: tensor<?x16xf32, ["n"]>
// CHECK:         te.split "dense" "j" {{.*}}factor 32
// CHECK:       func.func private @[[K]]_v0(%data0: tensor<?x16xf32, ["n"]>
// CHECK-SAME:      ember.variant_of = "[[K]]"
// CHECK:         te.compute_at "dense.gemm"
// CHECK-LABEL: func.func @main(
// CHECK:         graph.call_kernel @[[K]](%x, {{.*}}) {ember.variants = [{callee = @[[K]]_v0, size = "n", equals = 1 : i64}]}
func.func @main(%x: tensor<?x16xf32, ["n"]>) -> tensor<?x40xf32, ["n"]> {
  %w = graph.param "w" : tensor<40x16xf32>
  %b = graph.param "b" : tensor<40xf32>
  %y = graph.dense %x, %w, %b : (tensor<?x16xf32, ["n"]>, tensor<40x16xf32>, tensor<40xf32>) -> tensor<?x40xf32, ["n"]>
  %z = graph.relu %y : (tensor<?x40xf32, ["n"]>) -> tensor<?x40xf32, ["n"]>
  func.return %z : tensor<?x40xf32, ["n"]>
}

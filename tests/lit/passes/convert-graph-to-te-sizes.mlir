// RUN: ember-opt %s -p convert-graph-to-te | filecheck %s

// graph.sizes lowers to a kernel of no tensor inputs that computes its
// values from the size symbols it takes as `index` arguments; the graph
// reads the result as any other tensor.

// CHECK:       func.func private @ember_sizes_{{[0-9a-f]+}}(%n: index {ember.symbol = "n"}) -> tensor<i64>
// CHECK-NEXT:    %sizes = te.compute "sizes" () -> tensor<i64> {
// CHECK-NEXT:      %0 = arith.constant 4 : index
// CHECK-NEXT:      %1 = arith.muli %0, %n : index
// CHECK-NEXT:      %2 = arith.index_cast %1 : index to i64
// CHECK-NEXT:      te.yield %2 : i64
// CHECK:       func.func private @ember_sizes_{{[0-9a-f]+}}(%n: index {ember.symbol = "n"}) -> tensor<2xi64>
// CHECK:         arith.select
// CHECK-LABEL: func.func @main(
// CHECK:         %s = graph.call_kernel @ember_sizes_{{[0-9a-f]+}}() : () -> tensor<i64>
// CHECK:         graph.call_kernel @ember_mul_{{[0-9a-f]+}}(%x, %s)
func.func @main(%x: tensor<?x4xi64, ["n"]>) -> (tensor<?x4xi64, ["n"]>, tensor<2xi64>) {
  %s = graph.sizes {values = ["n * 4"]} : () -> tensor<i64>
  %y = graph.mul %x, %s : (tensor<?x4xi64, ["n"]>, tensor<i64>) -> tensor<?x4xi64, ["n"]>
  %t = graph.sizes {values = ["n", 4], shape = [2]} : () -> tensor<2xi64>
  func.return %y, %t : tensor<?x4xi64, ["n"]>, tensor<2xi64>
}

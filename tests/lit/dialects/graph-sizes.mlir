// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// graph.sizes (graph_data.py): sizes computed from symbolic dims used as
// data, an i64 tensor of `shape` filled row-major (HF's
// `batch_idx * seq + kv_idx`); `shape` left out is a scalar.

// CHECK-LABEL: func.func @sizes(
// CHECK-NEXT:    %{{.*}} = graph.sizes {values = ["seq"], shape = []} : () -> tensor<i64>
// CHECK-NEXT:    %{{.*}} = graph.sizes {values = ["batch * seq"]} : () -> tensor<i64>
// CHECK-NEXT:    %{{.*}} = graph.sizes {values = [2, "seq + 1", 4], shape = [3]} : () -> tensor<3xi64>
// CHECK-NEXT:    %{{.*}} = graph.sizes {values = ["batch", 1, 1, "seq"], shape = [2, 2]} : () -> tensor<2x2xi64>
// GENERIC-LABEL: "func.func"() <{sym_name = "sizes"
// GENERIC:         "graph.sizes"() <{values = ["seq"], shape = []}> : () -> tensor<i64>
func.func @sizes() -> tensor<3xi64> {
  %0 = graph.sizes {values = ["seq"], shape = []} : () -> tensor<i64>
  %1 = graph.sizes {values = ["batch * seq"]} : () -> tensor<i64>
  %2 = graph.sizes {values = [2, "seq + 1", 4], shape = [3]} : () -> tensor<3xi64>
  %3 = graph.sizes {values = ["batch", 1, 1, "seq"], shape = [2, 2]} : () -> tensor<2x2xi64>
  func.return %2 : tensor<3xi64>
}

// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// graph.range (graph_data.py): ONNX Range to a symbolic limit (`torch.arange(t)`),
// max(0, ceil((limit - start) / delta)) i64 elements; the count simplifies
// where the expression decides it; an attribute left out takes its default
// (start 0, delta 1).

// CHECK-LABEL: func.func @positions(
// CHECK-NEXT:    %{{.*}} = graph.range {start = 0, limit = "seq", delta = 1} : () -> tensor<?xi64, ["seq"]>
// CHECK-NEXT:    %{{.*}} = graph.range {start = 1, limit = "seq + 1"} : () -> tensor<?xi64, ["seq"]>
// CHECK-NEXT:    %{{.*}} = graph.range {start = 0, limit = "seq", delta = 2} : () -> tensor<?xi64, ["(seq + 1) // 2"]>
// CHECK-NEXT:    %{{.*}} = graph.range {start = 2, limit = "seq", delta = 1} : () -> tensor<?xi64, ["max(0, seq - 2)"]>
// CHECK-NEXT:    %{{.*}} = graph.range {start = 7, limit = "7 - seq", delta = -1} : () -> tensor<?xi64, ["seq"]>
// GENERIC-LABEL: "func.func"() <{sym_name = "positions"
// GENERIC:         "graph.range"() <{start = 0 : i64, limit = "seq", delta = 1 : i64}> : () -> tensor<?xi64, ["seq"]>
func.func @positions() -> tensor<?xi64, ["seq"]> {
  %0 = graph.range {start = 0, limit = "seq", delta = 1} : () -> tensor<?xi64, ["seq"]>
  %1 = graph.range {start = 1, limit = "seq + 1"} : () -> tensor<?xi64, ["seq"]>
  %2 = graph.range {start = 0, limit = "seq", delta = 2} : () -> tensor<?xi64, ["(seq + 1) // 2"]>
  %3 = graph.range {start = 2, limit = "seq", delta = 1} : () -> tensor<?xi64, ["max(0, seq - 2)"]>
  %4 = graph.range {start = 7, limit = "7 - seq", delta = -1} : () -> tensor<?xi64, ["seq"]>
  func.return %0 : tensor<?xi64, ["seq"]>
}

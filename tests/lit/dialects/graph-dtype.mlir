// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @masked(
// CHECK-SAME:      %[[IDS:.*]]: tensor<2x4xi64>, %[[M:.*]]: tensor<2x4xi1>, %[[X:.*]]: tensor<2x4xf32>)
// CHECK:         %[[C:.*]] = graph.constant dense<3> : tensor<i64>
// CHECK-NEXT:    %[[R:.*]] = graph.mod %[[IDS]], %[[C]] : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
// CHECK-NEXT:    %[[F:.*]] = graph.mod %[[IDS]], %[[C]] {fmod = true} : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
// CHECK-NEXT:    %[[E:.*]] = graph.equal %[[R]], %[[F]] : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi1>
// CHECK-NEXT:    %{{.*}} = graph.less %[[R]], %[[C]] : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
// CHECK-NEXT:    %{{.*}} = graph.less_equal %[[R]], %[[C]] : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
// CHECK-NEXT:    %{{.*}} = graph.greater %[[R]], %[[C]] : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[G:.*]] = graph.greater_equal %[[X]], %[[X]] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[A:.*]] = graph.logical_and %[[E]], %[[M]] : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[O:.*]] = graph.logical_or %[[A]], %[[G]] : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[XO:.*]] = graph.logical_xor %[[O]], %[[M]] : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[N:.*]] = graph.logical_not %[[XO]] : (tensor<2x4xi1>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[CF:.*]] = graph.cast %[[IDS]] : (tensor<2x4xi64>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.sign %[[CF]] : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.where %[[N]], %[[S]], %[[X]] : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[H:.*]] = graph.cast %[[W]] : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK-NEXT:    func.return %[[H]] : tensor<2x4xf16>

// GENERIC-LABEL: "func.func"() <{sym_name = "masked"
// GENERIC:         "graph.mod"(%{{.*}}, %{{.*}}) <{fmod = true}> : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
// GENERIC:         "graph.where"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:         "graph.cast"(%{{.*}}) : (tensor<2x4xf32>) -> tensor<2x4xf16>
func.func @masked(%ids: tensor<2x4xi64>, %m: tensor<2x4xi1>, %x: tensor<2x4xf32>) -> tensor<2x4xf16> {
  %c = graph.constant dense<3> : tensor<i64>
  %r = graph.mod %ids, %c : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  %f = graph.mod %ids, %c {fmod = true} : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  %e = graph.equal %r, %f : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi1>
  %l = graph.less %r, %c : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %le = graph.less_equal %r, %c : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %gt = graph.greater %r, %c : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %g = graph.greater_equal %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
  %a = graph.logical_and %e, %m : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %o = graph.logical_or %a, %g : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %xo = graph.logical_xor %o, %m : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %n = graph.logical_not %xo : (tensor<2x4xi1>) -> tensor<2x4xi1>
  %cf = graph.cast %ids : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %s = graph.sign %cf : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %w = graph.where %n, %s, %x : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %h = graph.cast %w : (tensor<2x4xf32>) -> tensor<2x4xf16>
  func.return %h : tensor<2x4xf16>
}

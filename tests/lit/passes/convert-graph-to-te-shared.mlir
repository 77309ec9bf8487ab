// RUN: ember-opt %s -p convert-graph-to-te | filecheck %s

// Two identical layers share one kernel function; a literal a kernel reads as
// a tensor becomes a param.
// CHECK-LABEL: func.func private @ember_add_{{[0-9a-f]+}}(
// CHECK-NOT:   func.func private @ember_add_
// CHECK-LABEL: func.func @twice(
// CHECK:         %[[K:.*]] = graph.param "constant0" : tensor<8xf32>
// CHECK:         %[[A:.*]] = graph.call_kernel @[[ADD:ember_add_[0-9a-f]+]](%{{.*}}, %[[K]])
// CHECK-NEXT:    %{{.*}} = graph.call_kernel @[[ADD]](%[[A]], %[[K]])
func.func @twice(%x: tensor<8xf32>) -> tensor<8xf32> {
  %k = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %a = graph.add %x, %k : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %b = graph.add %a, %k : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %b : tensor<8xf32>
}

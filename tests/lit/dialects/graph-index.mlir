// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// CHECK-LABEL: func.func @embed(
// CHECK-SAME:      %[[T:.*]]: tensor<100x8xf32>, %[[IDS:.*]]: tensor<2x5xi64>, %[[X:.*]]: tensor<2x3x8xf32>)
// CHECK:         %{{.*}} = graph.gather %[[T]], %[[IDS]] : (tensor<100x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
// CHECK:         %[[I:.*]] = graph.constant dense<0> : tensor<i32>
// CHECK-NEXT:    %{{.*}} = graph.gather %[[X]], %[[I]] {axis = 1} : (tensor<2x3x8xf32>, tensor<i32>) -> tensor<2x8xf32>
func.func @embed(%t: tensor<100x8xf32>, %ids: tensor<2x5xi64>, %x: tensor<2x3x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x8xf32>) {
  %e = graph.gather %t, %ids : (tensor<100x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
  %i = graph.constant dense<0> : tensor<i32>
  %c = graph.gather %x, %i {axis = 1} : (tensor<2x3x8xf32>, tensor<i32>) -> tensor<2x8xf32>
  func.return %e, %c : tensor<2x5x8xf32>, tensor<2x8xf32>
}

// CHECK-LABEL: func.func @arg(
// CHECK-SAME:      %[[X:.*]]: tensor<2x5xf32>)
// CHECK:         %{{.*}} = graph.argmax %[[X]] {axis = 1, keepdims = false} : (tensor<2x5xf32>) -> tensor<2xi64>
// CHECK-NEXT:    %{{.*}} = graph.argmin %[[X]] {select_last_index = true} : (tensor<2x5xf32>) -> tensor<1x5xi64>
func.func @arg(%x: tensor<2x5xf32>) -> (tensor<2xi64>, tensor<1x5xi64>) {
  %a = graph.argmax %x {axis = 1, keepdims = false} : (tensor<2x5xf32>) -> tensor<2xi64>
  %b = graph.argmin %x {select_last_index = true} : (tensor<2x5xf32>) -> tensor<1x5xi64>
  func.return %a, %b : tensor<2xi64>, tensor<1x5xi64>
}

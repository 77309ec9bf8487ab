// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Products (graph_tensor.py, graph_data.py) and scatters (graph_index.py).

// CHECK-LABEL: func.func @products(
// CHECK-SAME:      %[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[C:.*]] = graph.cumprod %[[X]] {axis = 1, exclusive = true} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    graph.reduce_prod %[[C]] {axes = [1]} : (tensor<2x8xf32>) -> tensor<2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "products"
// GENERIC:         "graph.cumprod"(%{{.*}}) <{axis = 1 : i64, exclusive = true}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC:         "graph.reduce_prod"(%{{.*}}) <{axes = [1 : i64]}> : (tensor<2x8xf32>) -> tensor<2xf32>
func.func @products(%x: tensor<2x8xf32>) -> tensor<2xf32> {
  %0 = graph.cumprod %x {axis = 1, exclusive = true} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = graph.reduce_prod %0 {axes = [1]} : (tensor<2x8xf32>) -> tensor<2xf32>
  func.return %1 : tensor<2xf32>
}

// CHECK-LABEL: func.func @scatter(
// CHECK-SAME:      %[[X:.*]]: tensor<4x3xf32>, %[[I:.*]]: tensor<2x1xi64>, %[[U:.*]]: tensor<2x3xf32>, %[[J:.*]]: tensor<5x2xi32>, %[[V:.*]]: tensor<5xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.scatter_nd %[[X]], %[[I]], %[[U]] {reduction = 1} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    graph.scatter_nd %[[S]], %[[J]], %[[V]] : (tensor<4x3xf32>, tensor<5x2xi32>, tensor<5xf32>) -> tensor<4x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "scatter"
// GENERIC:         "graph.scatter_nd"(%{{.*}}, %{{.*}}, %{{.*}}) <{reduction = 1 : i64}> : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
func.func @scatter(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>, %j: tensor<5x2xi32>, %v: tensor<5xf32>) -> tensor<4x3xf32> {
  %0 = graph.scatter_nd %x, %i, %u {reduction = 1} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = graph.scatter_nd %0, %j, %v : (tensor<4x3xf32>, tensor<5x2xi32>, tensor<5xf32>) -> tensor<4x3xf32>
  func.return %1 : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @dilated_mean(
// CHECK-NEXT:    graph.avg_pool2d %{{.*}} {kernel = [2, 2], dilation = [2, 2]} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
// GENERIC:         "graph.avg_pool2d"(%{{.*}}) <{kernel = [2 : i64, 2 : i64], dilation = [2 : i64, 2 : i64]}> : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
func.func @dilated_mean(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = graph.avg_pool2d %x {kernel = [2, 2], dilation = [2, 2]} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  func.return %0 : tensor<1x2x3x3xf32>
}

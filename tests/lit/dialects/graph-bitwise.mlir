// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @bits(
// CHECK-SAME:      %[[X:.*]]: tensor<2x4xui8>, %[[Y:.*]]: tensor<4xui8>, %[[S:.*]]: tensor<2x4xi16>)
// CHECK:         %[[A:.*]] = graph.bitwise_and %[[X]], %[[Y]] : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
// CHECK-NEXT:    %[[O:.*]] = graph.bitwise_or %[[A]], %[[Y]] : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
// CHECK-NEXT:    %[[XO:.*]] = graph.bitwise_xor %[[O]], %[[X]] : (tensor<2x4xui8>, tensor<2x4xui8>) -> tensor<2x4xui8>
// CHECK-NEXT:    %[[N:.*]] = graph.bitwise_not %[[XO]] : (tensor<2x4xui8>) -> tensor<2x4xui8>
// CHECK-NEXT:    %[[L:.*]] = graph.left_shift %[[N]], %[[Y]] : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<3> : tensor<i16>
// CHECK-NEXT:    %[[R:.*]] = graph.right_shift %[[S]], %[[C]] : (tensor<2x4xi16>, tensor<i16>) -> tensor<2x4xi16>
// CHECK-NEXT:    func.return %[[L]], %[[R]] : tensor<2x4xui8>, tensor<2x4xi16>

// GENERIC-LABEL: "func.func"() <{sym_name = "bits"
// GENERIC:         "graph.bitwise_and"(%{{.*}}, %{{.*}}) : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
// GENERIC:         "graph.bitwise_not"(%{{.*}}) : (tensor<2x4xui8>) -> tensor<2x4xui8>
// GENERIC:         "graph.right_shift"(%{{.*}}, %{{.*}}) : (tensor<2x4xi16>, tensor<i16>) -> tensor<2x4xi16>
func.func @bits(%x: tensor<2x4xui8>, %y: tensor<4xui8>, %s: tensor<2x4xi16>) -> (tensor<2x4xui8>, tensor<2x4xi16>) {
  %a = graph.bitwise_and %x, %y : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  %o = graph.bitwise_or %a, %y : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  %xo = graph.bitwise_xor %o, %x : (tensor<2x4xui8>, tensor<2x4xui8>) -> tensor<2x4xui8>
  %n = graph.bitwise_not %xo : (tensor<2x4xui8>) -> tensor<2x4xui8>
  %l = graph.left_shift %n, %y : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  %c = graph.constant dense<3> : tensor<i16>
  %r = graph.right_shift %s, %c : (tensor<2x4xi16>, tensor<i16>) -> tensor<2x4xi16>
  func.return %l, %r : tensor<2x4xui8>, tensor<2x4xi16>
}

// -----

// Unsigned and 16-bit integers flow through the other ops as their own types.
// CHECK-LABEL: func.func @unsigned(
// CHECK:         graph.div %{{.*}}, %{{.*}} : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
// CHECK:         graph.greater %{{.*}}, %{{.*}} : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
// CHECK:         graph.cast %{{.*}} : (tensor<4xui32>) -> tensor<4xui64>
func.func @unsigned(%x: tensor<4xui32>, %y: tensor<4xui32>) -> (tensor<4xi1>, tensor<4xui64>) {
  %d = graph.div %x, %y : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  %g = graph.greater %d, %y : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  %w = graph.cast %d : (tensor<4xui32>) -> tensor<4xui64>
  func.return %g, %w : tensor<4xi1>, tensor<4xui64>
}

// -----

// CHECK-LABEL: func.func @bitcast(
// CHECK:         %[[I:.*]] = graph.bitcast %{{.*}} : (tensor<4xf32>) -> tensor<4xui32>
// CHECK-NEXT:    %{{.*}} = graph.bitcast %[[I]] : (tensor<4xui32>) -> tensor<4xi32>
// GENERIC-LABEL: "func.func"() <{sym_name = "bitcast"
// GENERIC:         "graph.bitcast"(%{{.*}}) : (tensor<4xf32>) -> tensor<4xui32>
func.func @bitcast(%x: tensor<4xf32>) -> tensor<4xi32> {
  %i = graph.bitcast %x : (tensor<4xf32>) -> tensor<4xui32>
  %s = graph.bitcast %i : (tensor<4xui32>) -> tensor<4xi32>
  func.return %s : tensor<4xi32>
}

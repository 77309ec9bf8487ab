// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | ember-opt | filecheck %s

// Each fusion group becomes a private te function (compute + schedule) and a
// graph.call_kernel; the packed weight is a new param; the flatten stays a
// view; a returned input gets a copy kernel.

// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(
// CHECK-SAME:      %{{.*}}: tensor<1x4x6x6xf32> {ember.name = "data0"}, %{{.*}}: tensor<{{.*}}> {ember.name = "conv2d.weight"}, %{{.*}}: tensor<4xf32>
// CHECK-SAME:      attributes {ember.kernel = "conv2d_relu"}
// CHECK:         te.compute "conv2d.conv"
// CHECK:         te.schedule {
// CHECK-LABEL: func.func private @ember_softmax_{{[0-9a-f]+}}(
// CHECK:         te.compute "softmax"
// CHECK-LABEL: func.func private @ember_copy_{{[0-9a-f]+}}(
// CHECK:         te.compute "copy"
// CHECK-LABEL: func.func @main(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<1x4x6x6xf32> {ember.name = "data"})
// CHECK-DAG:     %[[W:.*]] = graph.param "conv.weight.packed.{{[0-9a-f]+}}"
// CHECK-DAG:     %[[B:.*]] = graph.param "conv.bias" : tensor<4xf32>
// CHECK:         %[[R:.*]] = graph.call_kernel @ember_conv2d_relu_{{[0-9a-f]+}}(%[[X]], %[[W]], %[[B]])
// CHECK-NEXT:    %[[F:.*]] = graph.flatten %[[R]] {axis = 1}
// CHECK-NEXT:    %[[S:.*]] = graph.call_kernel @ember_softmax_{{[0-9a-f]+}}(%[[F]])
// CHECK-NEXT:    %[[C:.*]] = graph.call_kernel @ember_copy_{{[0-9a-f]+}}(%[[X]])
// CHECK-NEXT:    func.return %[[S]], %[[C]]
// CHECK-NOT:     graph.fused
func.func @main(%x: tensor<1x4x6x6xf32> {ember.name = "data"}) -> (tensor<1x64xf32> {ember.name = "prob"}, tensor<1x4x6x6xf32>) {
  %w = graph.param "conv.weight" : tensor<4x4x3x3xf32>
  %b = graph.param "conv.bias" : tensor<4xf32>
  %c = graph.conv2d %x, %w, %b {padding = [0, 0, 0, 0]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %r = graph.relu %c : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %f = graph.flatten %r {axis = 1} : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %s = graph.softmax %f {axis = 1} : (tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %s, %x : tensor<1x64xf32>, tensor<1x4x6x6xf32>
}

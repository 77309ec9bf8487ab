// RUN: ember-opt %s --emit=graph -t dot | filecheck %s --check-prefix=DOT
// RUN: ember-opt %s --emit=graph --opt-level=1 | filecheck %s --check-prefix=GRAPH
// RUN: ember-opt %s --emit=loop | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s --emit=obj -o %t.o && od -c -N 4 %t.o | filecheck %s --check-prefix=OBJ

// A residual block: fused groups are DOT clusters; past the graph stage the
// segments of ember-model give one module: `default_run` calling the kernels,
// which te-compile-kernels compiled apart (the module names their objects).
// DOT: digraph ember {
// DOT: subgraph "cluster_fused_conv2d_relu_0" {
// DOT: label="fused_conv2d_relu_0"
// DOT: [label="conv2d\npadding=[1,1,1,1]\n1x8x8x8xf32"
// DOT: shape=house
// DOT: -> n{{[0-9]+}} [label="1x8x8x8xf32"];
// GRAPH: graph.fused "fused_conv2d_add_relu_2"
// LOOP: builtin.module attributes {ember.objects = {ember_conv2d_relu_{{[0-9a-f]+}} = "{{[0-9a-f]+}}"{{.*}}ember.model = "{{.*}}workspace_bytes
// LOOP: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(memref<1x8x8x8xf32>
// LOOP: func.func @default_run(
// LOOP: func.call @ember_conv2d_relu_
// LOOP: func.call @ember_conv2d_add_relu_
// OBJ: 177   E   L   F

// CHECK-LABEL: func.func @residual(
// CHECK-SAME:      %[[X:.*]]: tensor<1x8x8x8xf32>)
// CHECK:         %[[G0:.*]] = graph.fused "fused_conv2d_relu_0" (%[[X]], %{{.*}}, %{{.*}}) ({
// CHECK:         %[[G1:.*]] = graph.fused "fused_conv2d_relu_1" (%[[G0]], %{{.*}}, %{{.*}}) ({
// CHECK:         %[[G2:.*]] = graph.fused "fused_conv2d_add_relu_2" (%[[G1]], %{{.*}}, %{{.*}}, %[[G0]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<1x8x8x8xf32>, %{{.*}}: tensor<8x8x3x3xf32>, %{{.*}}: tensor<8xf32>, %[[RES:.*]]: tensor<1x8x8x8xf32>):
// CHECK-NEXT:      %[[C:.*]] = graph.conv2d %[[A]]
// CHECK-NEXT:      %[[S:.*]] = graph.add %[[C]], %[[RES]]
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[S]]
// CHECK-NEXT:      graph.yield %[[R]]
// CHECK:         func.return %[[G2]]
// CHECK-NOT:     graph.fused
func.func @residual(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w0 = graph.param "w0" : tensor<8x8x3x3xf32>
  %b0 = graph.param "b0" : tensor<8xf32>
  %w1 = graph.param "w1" : tensor<8x8x3x3xf32>
  %b1 = graph.param "b1" : tensor<8xf32>
  %w2 = graph.param "w2" : tensor<8x8x3x3xf32>
  %b2 = graph.param "b2" : tensor<8xf32>
  %c0 = graph.conv2d %x, %w0, %b0 {padding = [1, 1, 1, 1]} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %r0 = graph.relu %c0 : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %c1 = graph.conv2d %r0, %w1, %b1 {padding = [1, 1, 1, 1]} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %r1 = graph.relu %c1 : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %c2 = graph.conv2d %r1, %w2, %b2 {padding = [1, 1, 1, 1]} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %s = graph.add %c2, %r0 : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r2 = graph.relu %s : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  func.return %r2 : tensor<1x8x8x8xf32>
}


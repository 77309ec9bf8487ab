// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s

// On a GPU the generic schedule inlines every stage without a reduction, so
// Winograd's transforms would be recomputed for every product: a device
// model's 3x3 stride-1 convolution takes the direct sum (the host CPU would
// take Winograd, convert-graph-to-te-winograd.mlir).

// CHECK-LABEL: func.func private @ember_conv2d_relu_{{[0-9a-f]+}}(%data0: tensor<1x64x16x16xf32>
// CHECK-SAME:      %conv2d.weight: tensor<4x4x3x3x16x16xf32>
// CHECK-NOT:     te.compute "conv2d.data_transform"
// CHECK:         te.compute "conv2d.conv"
// CHECK-NOT:     te.compute "conv2d.data_transform"
// CHECK-LABEL: func.func @main(
builtin.module attributes {ember.target = "opencl"} {
  func.func @main(%x: tensor<1x64x16x16xf32> {ember.name = "data"}) -> tensor<1x64x16x16xf32> {
    %w1 = graph.param "w1" : tensor<64x64x3x3xf32>
    %c1 = graph.conv2d %x, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x64x16x16xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x16x16xf32>
    %r1 = graph.relu %c1 : (tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
    func.return %r1 : tensor<1x64x16x16xf32>
  }
}

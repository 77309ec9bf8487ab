// RUN: ember-opt %s -p 'ember-graph{opt-level=0}' | filecheck %s --check-prefix=O0
// RUN: ember-opt %s -p 'ember-graph{opt-level=1}' | filecheck %s --check-prefix=O1
// RUN: ember-opt %s -p ember-graph | filecheck %s --check-prefix=O2

// The graph pipeline by opt level: 0 leaves the graph alone, 1 fuses (the batch
// norm runs in its own group after the conv's), 2 folds the batch norm into the
// conv first, so one group remains for the model.

// O0-LABEL: func.func @conv_bn_relu(
// O0:         graph.conv2d
// O0-NEXT:    graph.batch_norm
// O0-NEXT:    graph.relu
// O0-NOT:     graph.fused

// O1-LABEL: func.func @conv_bn_relu(
// O1:         graph.fused "fused_conv2d_batch_norm_relu_0"
// O1-NOT:     graph.fused

// O2-LABEL: func.func @conv_bn_relu(
// O2:         graph.fused "fused_add_sqrt_div_0"
// O2:         graph.fused "fused_mul_sub_1"
// O2:         graph.fused "fused_reshape_mul_2"
// O2:         %[[R:.*]] = graph.fused "fused_conv2d_relu_3"
// O2:         func.return %[[R]]
func.func @conv_bn_relu(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.param "conv.weight" : tensor<4x3x3x3xf32>
  %g = graph.param "bn.gamma" : tensor<4xf32>
  %b = graph.param "bn.beta" : tensor<4xf32>
  %m = graph.param "bn.mean" : tensor<4xf32>
  %v = graph.param "bn.var" : tensor<4xf32>
  %y = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %z = graph.batch_norm %y, %g, %b, %m, %v : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu %z : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}

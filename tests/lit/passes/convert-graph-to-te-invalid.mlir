// RUN: not ember-opt %s -p convert-graph-to-te --split-input-file 2>&1 | filecheck %s

// A group no strategy covers is refused, naming the group and the op.
// CHECK: convert-graph-to-te: @bad_group: graph.fused "g": expected elementwise ops after 'graph.softmax', got 'graph.transpose'
func.func @bad_group(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %r = graph.fused "g" (%x) ({
  ^bb0(%a: tensor<2x4xf32>):
    %s = graph.softmax %a {axis = 1} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %t = graph.transpose %s {perm = [1, 0]} : (tensor<2x4xf32>) -> tensor<4x2xf32>
    graph.yield %t : tensor<4x2xf32>
  }) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  func.return %r : tensor<4x2xf32>
}

// -----

// A weight packed at compile time must be known then.
// CHECK: convert-graph-to-te: @computed_weight: 'graph.conv2d': the kernel's weight 'conv2d.weight' must be a param or constant
func.func @computed_weight(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %c = graph.conv2d %x, %w {padding = [0, 0, 0, 0]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %c : tensor<1x4x4x4xf32>
}

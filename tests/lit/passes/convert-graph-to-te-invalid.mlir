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

// -----

// A layer's precision mark is "float32" or "bf16" (graph-mixed-precision).
// CHECK: convert-graph-to-te: graph.dense: expected ember.precision 'float32' or 'bf16', got 'fp8'
func.func @unknown_mark(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.param "w" : tensor<3x4xf32>
  %y = graph.dense %x, %w {ember.precision = "fp8"} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A depthwise convolution has no bfloat16 kernel.
// CHECK: convert-graph-to-te: graph.conv2d has no bfloat16 kernel (ember.precision = 'bf16')
func.func @depthwise_bf16(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x4x4xf32> {
  %k = graph.param "k" : tensor<4x1x3x3xf32>
  %d = graph.conv2d %x, %k {groups = 4, ember.precision = "bf16"} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %d : tensor<1x4x4x4xf32>
}

// -----

// A bfloat16 mark needs a CPU with a bfloat16 dot product.
// CHECK: convert-graph-to-te: precision 'bf16' needs a CPU with a bfloat16 dot product (x86 avx512bf16, aarch64 bf16); target 'llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell' has none
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell"} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.param "w" : tensor<3x4xf32>
  %y = graph.dense %x, %w {ember.precision = "bf16"} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
}

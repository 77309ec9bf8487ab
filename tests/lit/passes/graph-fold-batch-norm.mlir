// RUN: ember-opt %s --split-input-file -p graph-fold-batch-norm | filecheck %s
// RUN: ember-opt %s --split-input-file -p graph-fold-batch-norm,cse,graph-fold-constants,dce | filecheck %s --check-prefix=FOLD

// After a conv2d read by nothing else: scale and shift from the statistics, the
// weight scaled per output channel, the shift as the new bias.

// CHECK-LABEL: func.func @conv_bn(
// CHECK-SAME:      %[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK:         %[[W:.*]] = graph.param "conv.weight"
// CHECK:         %[[G:.*]] = graph.param "bn.gamma"
// CHECK-NEXT:    %[[B:.*]] = graph.param "bn.beta"
// CHECK-NEXT:    %[[M:.*]] = graph.param "bn.mean"
// CHECK-NEXT:    %[[V:.*]] = graph.param "bn.var"
// CHECK-NEXT:    %[[E:.*]] = graph.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT:    %[[VE:.*]] = graph.add %[[V]], %[[E]]
// CHECK-NEXT:    %[[SD:.*]] = graph.sqrt %[[VE]]
// CHECK-NEXT:    %[[SC:.*]] = graph.div %[[G]], %[[SD]]
// CHECK-NEXT:    %[[MS:.*]] = graph.mul %[[M]], %[[SC]]
// CHECK-NEXT:    %[[SH:.*]] = graph.sub %[[B]], %[[MS]]
// CHECK-NEXT:    %[[SW:.*]] = graph.reshape %[[SC]] : (tensor<4xf32>) -> tensor<4x1x1x1xf32>
// CHECK-NEXT:    %[[W2:.*]] = graph.mul %[[W]], %[[SW]]
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %[[X]], %[[W2]], %[[SH]] {strides = [2, 2], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1}
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[Y]]
// CHECK-NOT:     graph.batch_norm

// With the statistics literal, folding leaves a conv on literal weights.
// FOLD-LABEL: func.func @conv_bn(
// FOLD-NOT:      graph.batch_norm
// FOLD:          graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} {strides = [2, 2]
func.func @conv_bn(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.param "conv.weight" : tensor<4x3x3x3xf32>
  %g = graph.param "bn.gamma" : tensor<4xf32>
  %b = graph.param "bn.beta" : tensor<4xf32>
  %m = graph.param "bn.mean" : tensor<4xf32>
  %v = graph.param "bn.var" : tensor<4xf32>
  %y = graph.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %z = graph.batch_norm %y, %g, %b, %m, %v {epsilon = 1.0e-03} : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %r = graph.relu %z : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %r : tensor<1x4x4x4xf32>
}

// -----

// A dense with a bias: the bias is scaled and shifted; literal statistics fold
// away completely.

// CHECK-LABEL: func.func @dense_bn(
// CHECK:         %[[SW:.*]] = graph.reshape %{{.*}} : (tensor<2xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %[[W2:.*]] = graph.mul %{{.*}}, %[[SW]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[BS:.*]] = graph.mul %{{.*}}, %{{.*}} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[B2:.*]] = graph.add %[[BS]], %{{.*}}
// CHECK-NEXT:    graph.dense %{{.*}}, %[[W2]], %[[B2]]

// FOLD-LABEL: func.func @dense_bn(
// FOLD-SAME:       %[[X:.*]]: tensor<1x3xf32>)
// FOLD-NEXT:     %[[W:.*]] = graph.constant dense<{{\[}}[2.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 5.000000e-01, 0.000000e+00]]> : tensor<2x3xf32>
// FOLD-NEXT:     %[[B:.*]] = graph.constant dense<[3.000000e+00, 1.000000e+00]> : tensor<2xf32>
// FOLD-NEXT:     %[[Y:.*]] = graph.dense %[[X]], %[[W]], %[[B]]
// FOLD-NEXT:     func.return %[[Y]]
func.func @dense_bn(%x: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %w = graph.constant dense<[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]> : tensor<2x3xf32>
  %bias = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %g = graph.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %m = graph.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %v = graph.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %y = graph.dense %x, %w, %bias : (tensor<1x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  %z = graph.batch_norm %y, %g, %b, %m, %v {epsilon = 0.0} : (tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %z : tensor<1x2xf32>
}

// -----

// A batch norm that cannot fold (its input has another reader, or is no anchor)
// becomes a per-channel mul and add that fusion can put in an epilogue.

// CHECK-LABEL: func.func @unfoldable(
// CHECK-SAME:      %[[X:.*]]: tensor<1x4x2x2xf32>)
// CHECK:         %[[SC:.*]] = graph.div
// CHECK:         %[[SH:.*]] = graph.sub
// CHECK-NEXT:    %[[S3:.*]] = graph.reshape %[[SC]] : (tensor<4xf32>) -> tensor<4x1x1xf32>
// CHECK-NEXT:    %[[H3:.*]] = graph.reshape %[[SH]] : (tensor<4xf32>) -> tensor<4x1x1xf32>
// CHECK-NEXT:    %[[MUL:.*]] = graph.mul %[[X]], %[[S3]] : (tensor<1x4x2x2xf32>, tensor<4x1x1xf32>) -> tensor<1x4x2x2xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.add %[[MUL]], %[[H3]]
// CHECK:         graph.conv2d
// CHECK:         graph.mul
// CHECK:         graph.add
// CHECK-NOT:     graph.batch_norm
func.func @unfoldable(%x: tensor<1x4x2x2xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) {
  %g = graph.param "bn.gamma" : tensor<4xf32>
  %b = graph.param "bn.beta" : tensor<4xf32>
  %m = graph.param "bn.mean" : tensor<4xf32>
  %v = graph.param "bn.var" : tensor<4xf32>
  %w = graph.param "conv.weight" : tensor<4x4x1x1xf32>
  %z = graph.batch_norm %x, %g, %b, %m, %v : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  %y = graph.conv2d %x, %w : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x2x2xf32>
  %z2 = graph.batch_norm %y, %g, %b, %m, %v : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  func.return %z, %y, %z2 : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>
}

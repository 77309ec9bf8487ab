// RUN: ember-opt %s --split-input-file -p graph-fuse-ops | filecheck %s

// conv + bias + relu: one group with the anchor first; params are its operands.

// CHECK-LABEL: func.func @conv_bias_relu(
// CHECK-SAME:      %[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK:         %[[W:.*]] = graph.param "conv.weight"
// CHECK-NEXT:    %[[B:.*]] = graph.param "conv.bias"
// CHECK-NEXT:    %[[R:.*]] = graph.fused "fused_conv2d_add_relu_0" (%[[X]], %[[W]], %[[B]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[X1:.*]]: tensor<1x3x8x8xf32>, %[[W1:.*]]: tensor<16x3x3x3xf32>, %[[B1:.*]]: tensor<16x1x1xf32>):
// CHECK-NEXT:      %[[Y:.*]] = graph.conv2d %[[X1]], %[[W1]] {{.*}} -> tensor<1x16x8x8xf32>
// CHECK-NEXT:      %[[S:.*]] = graph.add %[[Y]], %[[B1]]
// CHECK-NEXT:      %[[A:.*]] = graph.relu %[[S]]
// CHECK-NEXT:      graph.yield %[[A]] : tensor<1x16x8x8xf32>
// CHECK-NEXT:    }) : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @conv_bias_relu(%x: tensor<1x3x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = graph.param "conv.weight" : tensor<16x3x3x3xf32>
  %b = graph.param "conv.bias" : tensor<16x1x1xf32>
  %y = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %s = graph.add %y, %b : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %r = graph.relu %s : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %r : tensor<1x16x8x8xf32>
}

// -----

// A residual block: the first conv's relu has two readers, so its group ends
// there; the second conv takes the residual add (its other operand an extra
// input) and the final relu.

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

// -----

// MobileNetV2's depthwise-pointwise chain: each conv is an anchor with its own
// relu6 (clip); the linear 1x1 projection has no epilogue.

// CHECK-LABEL: func.func @depthwise_pointwise(
// CHECK:         %[[E:.*]] = graph.fused "fused_conv2d_clip_0"
// CHECK:           graph.conv2d {{.*}}(tensor<1x8x16x16xf32>, tensor<32x8x1x1xf32>)
// CHECK-NEXT:      graph.clip
// CHECK:         %[[D:.*]] = graph.fused "fused_conv2d_clip_1" (%[[E]],
// CHECK:           graph.conv2d {{.*}} groups = 32}
// CHECK-NEXT:      graph.clip
// CHECK:         %[[P:.*]] = graph.fused "fused_conv2d_2" (%[[D]],
// CHECK-NEXT:    ^
// CHECK-NEXT:      graph.conv2d
// CHECK-NEXT:      graph.yield
// CHECK:         func.return %[[P]]
func.func @depthwise_pointwise(%x: tensor<1x8x16x16xf32>) -> tensor<1x16x8x8xf32> {
  %we = graph.param "expand.weight" : tensor<32x8x1x1xf32>
  %wd = graph.param "dw.weight" : tensor<32x1x3x3xf32>
  %wp = graph.param "project.weight" : tensor<16x32x1x1xf32>
  %e = graph.conv2d %x, %we : (tensor<1x8x16x16xf32>, tensor<32x8x1x1xf32>) -> tensor<1x32x16x16xf32>
  %e6 = graph.clip %e {min = 0.0, max = 6.0} : (tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  %d = graph.conv2d %e6, %wd {strides = [2, 2], padding = [1, 1, 1, 1], groups = 32} : (tensor<1x32x16x16xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x8x8xf32>
  %d6 = graph.clip %d {min = 0.0, max = 6.0} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %p = graph.conv2d %d6, %wp : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %p : tensor<1x16x8x8xf32>
}

// -----

// An MLP: dense + bias-add + gelu, dense + bias, then softmax alone; a literal
// constant is copied into the group that reads it.

// CHECK-LABEL: func.func @mlp(
// CHECK:         %[[H:.*]] = graph.fused "fused_dense_gelu_mul_0" (%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<4x32xf32>, %{{.*}}: tensor<64x32xf32>, %{{.*}}: tensor<64xf32>):
// CHECK-NEXT:      %[[C:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:      %[[D:.*]] = graph.dense
// CHECK-NEXT:      %[[G:.*]] = graph.gelu %[[D]]
// CHECK-NEXT:      graph.mul %[[G]], %[[C]]
// CHECK:         %[[O:.*]] = graph.fused "fused_dense_1" (%[[H]], %{{.*}}, %{{.*}})
// CHECK:         %[[S:.*]] = graph.fused "fused_softmax_2" (%[[O]]) ({
// CHECK-NEXT:    ^
// CHECK-NEXT:      graph.softmax
// CHECK-NEXT:      graph.yield
// CHECK:         func.return %[[S]]
// CHECK-NOT:     graph.constant
func.func @mlp(%x: tensor<4x32xf32>) -> tensor<4x10xf32> {
  %w1 = graph.param "fc1.weight" : tensor<64x32xf32>
  %b1 = graph.param "fc1.bias" : tensor<64xf32>
  %w2 = graph.param "fc2.weight" : tensor<10x64xf32>
  %b2 = graph.param "fc2.bias" : tensor<10xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %h = graph.dense %x, %w1, %b1 : (tensor<4x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  %g = graph.gelu %h : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %g2 = graph.mul %g, %two : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32>
  %o = graph.dense %g2, %w2, %b2 : (tensor<4x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %s = graph.softmax %o {axis = 1} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  func.return %s : tensor<4x10xf32>
}

// -----

// Injective chains without an anchor fuse; a broadcast that grows the tensor may
// not join an anchor's epilogue; reductions and pooling stand alone.

// CHECK-LABEL: func.func @chains(
// CHECK:         %[[M:.*]] = graph.fused "fused_matmul_0"
// CHECK:         %[[B:.*]] = graph.fused "fused_add_transpose_reshape_1" (%[[M]], %{{.*}})
// CHECK:         %[[P:.*]] = graph.fused "fused_max_pool2d_2" (%{{.*}})
// CHECK:         %[[F:.*]] = graph.fused "fused_flatten_3" (%[[P]])
// CHECK:         %[[R:.*]] = graph.fused "fused_reduce_mean_4" (%[[B]])
// CHECK:         %[[N:.*]] = graph.fused "fused_sub_mul_5" (%[[B]], %[[R]])
func.func @chains(%a: tensor<4x8xf32>, %b: tensor<8x1xf32>, %c: tensor<2x4x3xf32>, %img: tensor<1x2x4x4xf32>) -> (tensor<3x8xf32>, tensor<1x8xf32>, tensor<3x8xf32>) {
  %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x1xf32>) -> tensor<4x1xf32>
  %s = graph.add %m, %c : (tensor<4x1xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %t = graph.transpose %s {perm = [2, 0, 1]} : (tensor<2x4x3xf32>) -> tensor<3x2x4xf32>
  %r = graph.reshape %t : (tensor<3x2x4xf32>) -> tensor<3x8xf32>
  %p = graph.max_pool2d %img {kernel = [2, 2], strides = [2, 2]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %f = graph.flatten %p : (tensor<1x2x2x2xf32>) -> tensor<1x8xf32>
  %mean = graph.reduce_mean %r {axes = [1], keepdims = true} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %d = graph.sub %r, %mean : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %sq = graph.mul %d, %d : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  func.return %r, %f, %sq : tensor<3x8xf32>, tensor<1x8xf32>, tensor<3x8xf32>
}

// -----

// max-group-size caps a group; running the pass again changes nothing.

// RUN: ember-opt %s --split-input-file -p 'graph-fuse-ops{max-group-size=2},graph-fuse-ops' | filecheck %s --check-prefix=CAP
// CAP-LABEL: func.func @long_chain(
// CAP:         %[[A:.*]] = graph.fused "fused_relu_neg_0"
// CAP:         %[[B:.*]] = graph.fused "fused_abs_exp_1" (%[[A]])
// CAP:         func.return %[[B]]
// CAP-NOT:     graph.fused
func.func @long_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.abs %1 : (tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.exp %2 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// An injective op takes in the chains of its other operands that it alone
// reads: two dequantizations and their sum are one kernel. A chain whose
// result another op reads too stays a group of its own.

// CHECK-LABEL: func.func @two_chains(
// CAP-LABEL: func.func @two_chains(
// CHECK:         %[[S:.*]] = graph.fused "fused_cast_mul_cast_mul_add_0" (%{{.*}}, %{{.*}}) ({
// CHECK:           graph.cast
// CHECK:           graph.cast
// CHECK:           graph.add
// CHECK:         %[[E:.*]] = graph.fused "fused_exp_1"
// CHECK:         %[[T:.*]] = graph.fused "fused_neg_add_2" (%{{.*}}, %[[E]])
// CHECK:         func.return %[[S]], %[[T]], %[[E]]
func.func @two_chains(%a: tensor<8xi32>, %b: tensor<8xi32>, %x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %s = graph.constant dense<0.5> : tensor<1xf32>
  %ca = graph.cast %a : (tensor<8xi32>) -> tensor<8xf32>
  %da = graph.mul %ca, %s : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %cb = graph.cast %b : (tensor<8xi32>) -> tensor<8xf32>
  %db = graph.mul %cb, %s : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %sum = graph.add %da, %db : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %e = graph.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %n = graph.neg %x : (tensor<8xf32>) -> tensor<8xf32>
  %t = graph.add %n, %e : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %sum, %t, %e : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Elementwise ops that read an anchor's output more than once and close on
// one value join its group whole, a DAG: GELU after a dense layer, SiLU
// after a convolution.

// CHECK-LABEL: func.func @gelu_and_silu(
// CHECK:         %[[D:.*]] = graph.fused "fused_dense_div_erf_add_mul_mul_0" (%{{.*}}, %{{.*}}) ({
// CHECK:           graph.dense
// CHECK-NEXT:      graph.div
// CHECK-NEXT:      graph.erf
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.yield
// CHECK:         %[[C:.*]] = graph.fused "fused_conv2d_sigmoid_mul_1" (%{{.*}}, %{{.*}}) ({
// CHECK:           graph.conv2d
// CHECK-NEXT:      graph.sigmoid
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.yield
// CHECK:         func.return %[[D]], %[[C]]
// CHECK-NOT:     graph.fused
func.func @gelu_and_silu(%x: tensor<2x64xf32>, %i: tensor<1x4x8x8xf32>) -> (tensor<2x10xf32>, tensor<1x8x8x8xf32>) {
  %w = graph.param "w" : tensor<10x64xf32>
  %c = graph.constant dense<1.41421354> : tensor<1xf32>
  %one = graph.constant dense<1.0> : tensor<1xf32>
  %half = graph.constant dense<0.5> : tensor<1xf32>
  %y = graph.dense %x, %w : (tensor<2x64xf32>, tensor<10x64xf32>) -> tensor<2x10xf32>
  %q = graph.div %y, %c : (tensor<2x10xf32>, tensor<1xf32>) -> tensor<2x10xf32>
  %e = graph.erf %q : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %p = graph.add %e, %one : (tensor<2x10xf32>, tensor<1xf32>) -> tensor<2x10xf32>
  %m = graph.mul %y, %p : (tensor<2x10xf32>, tensor<2x10xf32>) -> tensor<2x10xf32>
  %g = graph.mul %m, %half : (tensor<2x10xf32>, tensor<1xf32>) -> tensor<2x10xf32>
  %k = graph.param "k" : tensor<8x4x3x3xf32>
  %v = graph.conv2d %i, %k {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %s = graph.sigmoid %v : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %t = graph.mul %v, %s : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  func.return %g, %t : tensor<2x10xf32>, tensor<1x8x8x8xf32>
}

// -----

// Where a value among them has a reader outside (here the sigmoid, returned
// too), the ops do not close: the anchor's group ends at its output.

// CHECK-LABEL: func.func @open_dag(
// CHECK:         %[[V:.*]] = graph.fused "fused_conv2d_0"
// CHECK:         %[[S:.*]] = graph.fused "fused_sigmoid_1" (%[[V]])
// CHECK:         %[[T:.*]] = graph.fused "fused_mul_2" (%[[V]], %[[S]])
// CHECK:         func.return %[[T]], %[[S]]
func.func @open_dag(%i: tensor<1x4x8x8xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) {
  %k = graph.param "k" : tensor<8x4x3x3xf32>
  %v = graph.conv2d %i, %k {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %s = graph.sigmoid %v : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %t = graph.mul %v, %s : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  func.return %t, %s : tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>
}

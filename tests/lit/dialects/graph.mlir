// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @conv_block(
// CHECK-SAME:      %[[X:.*]]: tensor<1x3x8x8xf32> {ember.name = "input"}) -> tensor<1x16x8x8xf32>
// CHECK:         %[[W:.*]] = graph.param "conv1.weight" : tensor<16x3x3x3xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.param "conv1.bias" : tensor<16xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %[[X]], %[[W]], %[[B]] {strides = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.param "bn.gamma" : tensor<16xf32>
// CHECK:         %[[N:.*]] = graph.batch_norm %[[Y]], %[[G]], %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f32} : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.clip %[[N]] {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %[[DW:.*]] = graph.param "dw.weight" : tensor<16x1x3x3xf32>
// CHECK-NEXT:    %[[D:.*]] = graph.conv2d %[[R]], %[[DW]] {strides = [2, 2], padding = [0, 0, 1, 1], dilation = [1, 1], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %[[DL:.*]] = graph.conv2d %[[R]], %[[DW]] {dilation = [2, 2], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<1x16x8x8xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "conv_block"
// GENERIC:         "graph.param"() <{name = "conv1.weight"}> : () -> tensor<16x3x3x3xf32>
// GENERIC:         "graph.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}) <{strides = [1 : i64, 1 : i64], padding = [1 : i64, 1 : i64, 1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], groups = 1 : i64}> : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
// GENERIC:         "graph.clip"(%{{.*}}) <{min = 0.000000e+00 : f32, max = 6.000000e+00 : f32}>
func.func @conv_block(%x: tensor<1x3x8x8xf32> {ember.name = "input"}) -> tensor<1x16x8x8xf32> {
  %w = graph.param "conv1.weight" : tensor<16x3x3x3xf32>
  %b = graph.param "conv1.bias" : tensor<16xf32>
  %y = graph.conv2d %x, %w, %b {strides = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %g = graph.param "bn.gamma" : tensor<16xf32>
  %be = graph.param "bn.beta" : tensor<16xf32>
  %m = graph.param "bn.mean" : tensor<16xf32>
  %v = graph.param "bn.var" : tensor<16xf32>
  %n = graph.batch_norm %y, %g, %be, %m, %v {epsilon = 1.0e-05} : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r = graph.clip %n {min = 0.0, max = 6.0} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %dw = graph.param "dw.weight" : tensor<16x1x3x3xf32>
  %d = graph.conv2d %r, %dw {strides = [2, 2], padding = [0, 0, 1, 1], dilation = [1, 1], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x4x4xf32>
  %dl = graph.conv2d %r, %dw {dilation = [2, 2], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x4x4xf32>
  func.return %r : tensor<1x16x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @linear(
// CHECK:         %[[D:.*]] = graph.dense %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    graph.dense %{{.*}}, %{{.*}} : (tensor<2x64xf32>, tensor<10x64xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    graph.matmul %{{.*}}, %{{.*}} : (tensor<2x64xf32>, tensor<64x10xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    graph.matmul %{{.*}}, %{{.*}} : (tensor<3x1x4x8xf32>, tensor<5x8x2xf32>) -> tensor<3x5x4x2xf32>
// CHECK-NEXT:    graph.matmul %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<5x8x2xf32>) -> tensor<5x2xf32>
// CHECK-NEXT:    graph.batch_matmul %{{.*}}, %{{.*}} : (tensor<5x4x8xf32>, tensor<1x8x2xf32>) -> tensor<5x4x2xf32>
// CHECK-NEXT:    graph.softmax %[[D]] {axis = -1} : (tensor<2x10xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    graph.log_softmax %[[D]] {axis = 0} : (tensor<2x10xf32>) -> tensor<2x10xf32>
func.func @linear(%x: tensor<2x64xf32>, %a: tensor<3x1x4x8xf32>, %b: tensor<5x8x2xf32>, %v: tensor<8xf32>, %c: tensor<5x4x8xf32>, %e: tensor<1x8x2xf32>) -> tensor<2x10xf32> {
  %w = graph.param "fc.weight" : tensor<10x64xf32>
  %bias = graph.param "fc.bias" : tensor<10xf32>
  %wt = graph.param "fc.weight_t" : tensor<64x10xf32>
  %d = graph.dense %x, %w, %bias : (tensor<2x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  %d2 = graph.dense %x, %w : (tensor<2x64xf32>, tensor<10x64xf32>) -> tensor<2x10xf32>
  %mm = graph.matmul %x, %wt : (tensor<2x64xf32>, tensor<64x10xf32>) -> tensor<2x10xf32>
  %bmm = graph.matmul %a, %b : (tensor<3x1x4x8xf32>, tensor<5x8x2xf32>) -> tensor<3x5x4x2xf32>
  %vm = graph.matmul %v, %b : (tensor<8xf32>, tensor<5x8x2xf32>) -> tensor<5x2xf32>
  %bm = graph.batch_matmul %c, %e : (tensor<5x4x8xf32>, tensor<1x8x2xf32>) -> tensor<5x4x2xf32>
  %s = graph.softmax %d {axis = -1} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %ls = graph.log_softmax %d {axis = 0} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  func.return %s : tensor<2x10xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise(
// CHECK:         graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    graph.add %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    graph.sub %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    graph.mul %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    graph.div %{{.*}}, %{{.*}} : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    graph.maximum
// CHECK-NEXT:    graph.minimum
// CHECK-NEXT:    graph.pow
// CHECK-NEXT:    graph.relu %{{.*}} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    graph.sigmoid
// CHECK-NEXT:    graph.tanh
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    graph.sqrt
// CHECK-NEXT:    graph.erf
// CHECK-NEXT:    graph.gelu
// CHECK-NEXT:    graph.neg
// CHECK-NEXT:    graph.abs
// CHECK-NEXT:    graph.log
// CHECK-NEXT:    graph.clip %{{.*}} {min = 0.000000e+00 : f32} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
func.func @elementwise(%x: tensor<2x3x4xf32>, %y: tensor<3x1xf32>, %s: tensor<f32>) -> tensor<2x3x4xf32> {
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = graph.add %x, %c : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %1 = graph.sub %0, %y : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %2 = graph.mul %1, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %3 = graph.div %y, %c : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %4 = graph.maximum %2, %3 : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %5 = graph.minimum %4, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %6 = graph.pow %5, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %7 = graph.relu %6 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %8 = graph.sigmoid %7 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %9 = graph.tanh %8 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %10 = graph.exp %9 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %11 = graph.sqrt %10 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %12 = graph.erf %11 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %13 = graph.gelu %12 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %14 = graph.neg %13 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %15 = graph.abs %14 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %16 = graph.log %15 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %17 = graph.clip %16 {min = 0.0} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %17 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @activations(
// CHECK-SAME:      %[[X:.*]]: tensor<1x16x8x8xf32>, %[[S:.*]]: tensor<16x1x1xf32>)
// CHECK:         %[[L:.*]] = graph.leaky_relu %[[X]] {alpha = 1.000000e-01 : f32} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.prelu %[[L]], %[[S]] : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    graph.elu %[[P]] {alpha = 5.000000e-01 : f32} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    graph.selu %{{.*}} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    graph.selu %{{.*}} {alpha = 1.500000e+00 : f32, gamma = 2.000000e+00 : f32}
// CHECK-NEXT:    graph.hard_sigmoid %{{.*}} {alpha = 2.500000e-01 : f32, beta = 4.000000e-01 : f32}
// CHECK-NEXT:    graph.hard_swish
// CHECK-NEXT:    graph.mish
// CHECK-NEXT:    graph.softplus
// CHECK-NEXT:    graph.gelu_tanh %{{.*}} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "activations"
// GENERIC:         "graph.leaky_relu"(%{{.*}}) <{alpha = 1.000000e-01 : f32}> : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
// GENERIC:         "graph.prelu"(%{{.*}}, %{{.*}}) : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
// GENERIC:         "graph.hard_sigmoid"(%{{.*}}) <{alpha = 2.500000e-01 : f32, beta = 4.000000e-01 : f32}>
func.func @activations(%x: tensor<1x16x8x8xf32>, %s: tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32> {
  %0 = graph.leaky_relu %x {alpha = 0.1} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %1 = graph.prelu %0, %s : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %2 = graph.elu %1 {alpha = 0.5} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %3 = graph.selu %2 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %4 = graph.selu %3 {alpha = 1.5, gamma = 2.0} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %5 = graph.hard_sigmoid %4 {alpha = 0.25, beta = 0.4} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %6 = graph.hard_swish %5 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %7 = graph.mish %6 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %8 = graph.softplus %7 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %9 = graph.gelu_tanh %8 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %9 : tensor<1x16x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @pooling(
// CHECK:         graph.max_pool2d %{{.*}} {kernel = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1], dilation = [1, 1], ceil_mode = false} : (tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32>
// CHECK-NEXT:    graph.max_pool2d %{{.*}} {kernel = [3, 3], strides = [2, 2], ceil_mode = true} : (tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32>
// CHECK-NEXT:    graph.avg_pool2d %{{.*}} {kernel = [2, 2], strides = [2, 2], padding = [0, 0, 0, 0], ceil_mode = false, count_include_pad = true} : (tensor<1x8x56x56xf32>) -> tensor<1x8x28x28xf32>
// CHECK-NEXT:    graph.global_avg_pool2d %{{.*}} : (tensor<1x8x28x28xf32>) -> tensor<1x8x1x1xf32>
func.func @pooling(%x: tensor<1x8x112x112xf32>) -> tensor<1x8x1x1xf32> {
  %0 = graph.max_pool2d %x {kernel = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1], dilation = [1, 1], ceil_mode = false} : (tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32>
  %1 = graph.max_pool2d %x {kernel = [3, 3], strides = [2, 2], ceil_mode = true} : (tensor<1x8x112x112xf32>) -> tensor<1x8x56x56xf32>
  %2 = graph.avg_pool2d %0 {kernel = [2, 2], strides = [2, 2], padding = [0, 0, 0, 0], ceil_mode = false, count_include_pad = true} : (tensor<1x8x56x56xf32>) -> tensor<1x8x28x28xf32>
  %3 = graph.global_avg_pool2d %2 : (tensor<1x8x28x28xf32>) -> tensor<1x8x1x1xf32>
  func.return %3 : tensor<1x8x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @layout(
// CHECK:         graph.reshape %{{.*}} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
// CHECK-NEXT:    graph.flatten %{{.*}} {axis = 1} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
// CHECK-NEXT:    graph.transpose %{{.*}} {perm = [0, 2, 3, 1]} : (tensor<1x64x1x1xf32>) -> tensor<1x1x1x64xf32>
// CHECK-NEXT:    graph.transpose %{{.*}} : (tensor<1x64x1x1xf32>) -> tensor<1x1x64x1xf32>
// CHECK-NEXT:    graph.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1} : (tensor<1x64xf32>, tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x192xf32>
// CHECK-NEXT:    graph.pad %{{.*}} {pads = [0, 1, 0, 2], value = -1.000000e+00 : f32} : (tensor<1x192xf32>) -> tensor<1x195xf32>
// CHECK-NEXT:    graph.reduce_sum %{{.*}} {axes = [1], keepdims = true} : (tensor<1x195xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    graph.reduce_mean %{{.*}} {axes = [-1], keepdims = false} : (tensor<1x195xf32>) -> tensor<1xf32>
// CHECK-NEXT:    graph.reduce_max %{{.*}} : (tensor<1x195xf32>) -> tensor<f32>
func.func @layout(%x: tensor<1x64x1x1xf32>) -> tensor<1x1xf32> {
  %0 = graph.reshape %x : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
  %1 = graph.flatten %x {axis = 1} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
  %2 = graph.transpose %x {perm = [0, 2, 3, 1]} : (tensor<1x64x1x1xf32>) -> tensor<1x1x1x64xf32>
  %3 = graph.transpose %x : (tensor<1x64x1x1xf32>) -> tensor<1x1x64x1xf32>
  %4 = graph.concat %0, %1, %0 {axis = 1} : (tensor<1x64xf32>, tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x192xf32>
  %5 = graph.pad %4 {pads = [0, 1, 0, 2], value = -1.0} : (tensor<1x192xf32>) -> tensor<1x195xf32>
  %6 = graph.reduce_sum %5 {axes = [1], keepdims = true} : (tensor<1x195xf32>) -> tensor<1x1xf32>
  %7 = graph.reduce_mean %5 {axes = [-1], keepdims = false} : (tensor<1x195xf32>) -> tensor<1xf32>
  %8 = graph.reduce_max %5 : (tensor<1x195xf32>) -> tensor<f32>
  func.return %6 : tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @fused(
// CHECK:         %[[F:.*]] = graph.fused "fused_dense_add_relu_0" (%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<2x8xf32>, %[[W:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[D:.*]] = graph.dense %[[A]], %[[W]] : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:      %[[S:.*]] = graph.add %[[D]], %[[B]] : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[S]] : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:      graph.yield %[[R]], %[[S]] : tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NEXT:    }) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)

// GENERIC-LABEL: "func.func"() <{sym_name = "fused"
// GENERIC:         "graph.fused"(%{{.*}}, %{{.*}}, %{{.*}}) <{name = "fused_dense_add_relu_0"}> ({
// GENERIC:           "graph.yield"(%{{.*}}, %{{.*}}) : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
func.func @fused(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = graph.param "w" : tensor<4x8xf32>
  %b = graph.param "b" : tensor<4xf32>
  %r:2 = graph.fused "fused_dense_add_relu_0" (%x, %w, %b) ({
  ^bb0(%a: tensor<2x8xf32>, %ww: tensor<4x8xf32>, %bb: tensor<4xf32>):
    %d = graph.dense %a, %ww : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %s = graph.add %d, %bb : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %y = graph.relu %s : (tensor<2x4xf32>) -> tensor<2x4xf32>
    graph.yield %y, %s : tensor<2x4xf32>, tensor<2x4xf32>
  }) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  func.return %r#0 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func private @ember_relu_0f3a(
// CHECK-LABEL: func.func @call_kernel(
// CHECK:         %{{.*}} = graph.call_kernel @ember_relu_0f3a(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC:       "graph.call_kernel"(%{{.*}}) <{callee = @ember_relu_0f3a}> : (tensor<4xf32>) -> tensor<4xf32>
func.func private @ember_relu_0f3a(%a: tensor<4xf32>) -> tensor<4xf32>
func.func @call_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.call_kernel @ember_relu_0f3a(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// A call with a size-class variant: @ember_relu_0f3b runs where n is 1.
// CHECK-LABEL: func.func @call_kernel_variants(
// CHECK:         graph.call_kernel @ember_relu_0f3b(%{{.*}}) {ember.variants = [{callee = @ember_relu_0f3b_v0, size = "n", equals = 1 : i64}]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
func.func private @ember_relu_0f3b(%a: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
func.func private @ember_relu_0f3b_v0(%a: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
func.func @call_kernel_variants(%x: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %y = graph.call_kernel @ember_relu_0f3b(%x) {ember.variants = [{callee = @ember_relu_0f3b_v0, size = "n", equals = 1 : i64}]} : (tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]>
  func.return %y : tensor<?xf32, ["n"]>
}

// -----

// A weight stored as integers with a scale per group of K: 4 bits (two a
// byte, ui8) and 8 bits (i8), with and without a bias.
// CHECK-LABEL: func.func @dense_dequant(
// CHECK:         graph.dense_dequant %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {bits = 4, group = 32} : (tensor<?x64xf32, ["n"]>, tensor<10x32xui8>, tensor<10x2xf32>, tensor<10xf32>) -> tensor<?x10xf32, ["n"]>
// CHECK-NEXT:    graph.dense_dequant %{{.*}}, %{{.*}}, %{{.*}} {bits = 8, group = 64} : (tensor<?x64xf32, ["n"]>, tensor<10x64xi8>, tensor<10x1xf32>) -> tensor<?x10xf32, ["n"]>
func.func @dense_dequant(%x: tensor<?x64xf32, ["n"]>) -> tensor<?x10xf32, ["n"]> {
  %w4 = graph.param "w4" : tensor<10x32xui8>
  %s4 = graph.param "s4" : tensor<10x2xf32>
  %b = graph.param "b" : tensor<10xf32>
  %w8 = graph.param "w8" : tensor<10x64xi8>
  %s8 = graph.param "s8" : tensor<10x1xf32>
  %y = graph.dense_dequant %x, %w4, %s4, %b {bits = 4, group = 32} : (tensor<?x64xf32, ["n"]>, tensor<10x32xui8>, tensor<10x2xf32>, tensor<10xf32>) -> tensor<?x10xf32, ["n"]>
  %z = graph.dense_dequant %x, %w8, %s8 {bits = 8, group = 64} : (tensor<?x64xf32, ["n"]>, tensor<10x64xi8>, tensor<10x1xf32>) -> tensor<?x10xf32, ["n"]>
  func.return %z : tensor<?x10xf32, ["n"]>
}

// -----

// A quantized convolution: ui8 data in and out, and i8 data to i8 with a
// fused ReLU (clip from the zero point).
// CHECK-LABEL: func.func @qconv2d(
// CHECK:         graph.qconv2d %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {padding = [1, 1, 1, 1], x_zero = 128, y_zero = 3, clip = [0, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x6x6xui8>
// CHECK-NEXT:    graph.qconv2d %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {strides = [2, 2], x_zero = -4, y_zero = -2, clip = [-2, 127], signed = true} : (tensor<1x8x6x6xi8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x2x2xi8>
func.func @qconv2d(%x: tensor<1x8x6x6xui8>, %xs: tensor<1x8x6x6xi8>) -> tensor<1x16x2x2xi8> {
  %w = graph.param "w" : tensor<16x8x3x3xi8>
  %b = graph.param "b" : tensor<16xi32>
  %s = graph.param "s" : tensor<16xf32>
  %y = graph.qconv2d %x, %w, %b, %s {padding = [1, 1, 1, 1], x_zero = 128, y_zero = 3, clip = [0, 255]} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x6x6xui8>
  %z = graph.qconv2d %xs, %w, %b, %s {strides = [2, 2], x_zero = -4, y_zero = -2, clip = [-2, 127], signed = true} : (tensor<1x8x6x6xi8>, tensor<16x8x3x3xi8>, tensor<16xi32>, tensor<16xf32>) -> tensor<1x16x2x2xi8>
  func.return %z : tensor<1x16x2x2xi8>
}

// -----

// A quantized dense layer over symbolic rows.
// CHECK-LABEL: func.func @qdense(
// CHECK:         graph.qdense %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {x_zero = 128, y_zero = -3, clip = [-128, 127], signed = true} : (tensor<?x64xui8, ["m"]>, tensor<10x64xi8>, tensor<10xi32>, tensor<10xf32>) -> tensor<?x10xi8, ["m"]>
func.func @qdense(%x: tensor<?x64xui8, ["m"]>) -> tensor<?x10xi8, ["m"]> {
  %w = graph.param "w" : tensor<10x64xi8>
  %b = graph.param "b" : tensor<10xi32>
  %s = graph.param "s" : tensor<10xf32>
  %y = graph.qdense %x, %w, %b, %s {x_zero = 128, y_zero = -3, clip = [-128, 127], signed = true} : (tensor<?x64xui8, ["m"]>, tensor<10x64xi8>, tensor<10xi32>, tensor<10xf32>) -> tensor<?x10xi8, ["m"]>
  func.return %y : tensor<?x10xi8, ["m"]>
}

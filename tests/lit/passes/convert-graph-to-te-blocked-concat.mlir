// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te' | filecheck %s
// RUN: ember-opt %s -p ember-model --print-ir-after=graph-plan-memory -o /dev/null 2>&1 | filecheck %s --check-prefix=PLAN

// A fire module: two convolutions joined along channels, read by a
// convolution. Blocked alike, (1, C_i/16, H, W, 16), their concatenation
// along the blocks of channels is the blocked result, so the concat group is
// layout-free: every kernel reads and writes blocks, and graph-plan-memory
// then drops the concatenation (each part a contiguous slab of the result,
// written in place by its convolution).

// CHECK-LABEL: func.func private @ember_concat_{{[0-9a-f]+}}(%data0: tensor<1x1x8x8x16xf32> {{.*}}, %data1: tensor<1x2x8x8x16xf32>
// CHECK-SAME:      -> tensor<1x3x8x8x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK:         %[[A:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK:         %[[B:.*]] = graph.call_kernel @ember_conv2d_relu_{{.*}} -> tensor<1x2x8x8x16xf32>
// CHECK:         %[[C:.*]] = graph.call_kernel @ember_concat_{{.*}}(%[[A]], %[[B]]) {ember.layout = "NCHW16c"} {{.*}} -> tensor<1x3x8x8x16xf32>
// CHECK:         graph.call_kernel @ember_conv2d_{{.*}}(%[[C]], {{.*}} -> tensor<1x16x8x8xf32>

// PLAN:        func.func @default_run(
// PLAN:          func.call @ember_conv2d_relu_
// PLAN:          func.call @ember_conv2d_relu_
// PLAN-NOT:      func.call @ember_concat_
// PLAN:          func.call @ember_conv2d_
func.func @main(%x: tensor<1x16x8x8xf32> {ember.name = "data"}) -> tensor<1x16x8x8xf32> {
  %wa = graph.param "wa" : tensor<16x16x1x1xf32>
  %wb = graph.param "wb" : tensor<32x16x3x3xf32>
  %wy = graph.param "wy" : tensor<16x48x1x1xf32>
  %a = graph.conv2d %x, %wa {padding = [0, 0, 0, 0]} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %ar = graph.relu %a : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %b = graph.conv2d %x, %wb {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  %br = graph.relu %b : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %c = graph.concat %ar, %br {axis = 1} : (tensor<1x16x8x8xf32>, tensor<1x32x8x8xf32>) -> tensor<1x48x8x8xf32>
  %y = graph.conv2d %c, %wy {padding = [0, 0, 0, 0]} : (tensor<1x48x8x8xf32>, tensor<16x48x1x1xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}

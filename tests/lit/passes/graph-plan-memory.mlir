// RUN: ember-opt %s -p 'convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory' | filecheck %s

// The model function becomes default_run(inputs, outputs, workspace, params):
// params are views of the blob, intermediates and scratch buffers views of the
// workspace, the flatten a view of its operand's bytes, model outputs written
// in place; kernels' arguments are noalias; ember.model describes it all.

// CHECK:       builtin.module attributes {ember.model = "{\22inputs\22: [{\22name\22: \22data\22, \22shape\22: [1, 4, 6, 6], {{.*}}\22workspace_bytes\22: [[WS:[0-9]+]], \22params_bytes\22: [[PB:[0-9]+]], \22params\22: {\22w.packed.{{[0-9a-f]+}}\22: {\22offset\22: 0,
// CHECK:       func.func private @[[CONV:ember_conv2d_[0-9a-f]+]](%{{[^:]*}}: memref<1x4x6x6xf32> {ember.name = "data0", llvm.noalias}
// CHECK-SAME:      {ember.name = "conv2d", ember.output, llvm.noalias}
// CHECK-SAME:      {ember.name = "conv2d.data_pack", ember.output, ember.scratch, llvm.noalias}
// CHECK:       func.func private @[[RELU:ember_relu_[0-9a-f]+]](
// CHECK-LABEL: func.func @default_run(
// CHECK-SAME:      %[[X:[^:]*]]: memref<1x4x6x6xf32> {ember.name = "data"},
// CHECK-SAME:      %[[Y:[^:]*]]: memref<1x64xf32> {ember.name = "prob", ember.output},
// CHECK-SAME:      %[[WSA:[^:]*]]: memref<[[WS]]xi8> {ember.name = "workspace", ember.output},
// CHECK-SAME:      %[[P:[^:]*]]: memref<[[PB]]xi8> {ember.name = "params"})
// CHECK:         %[[W:.*]] = memref.view %[[P]][%{{.*}}][] : memref<[[PB]]xi8> to memref<1x1x3x3x4x{{[0-9]+}}xf32>
// CHECK:         %[[C:.*]] = memref.view %[[WSA]][%{{.*}}][] : memref<[[WS]]xi8> to memref<1x4x4x4xf32>
// CHECK:         %[[S:.*]] = memref.view %[[WSA]][%{{.*}}][] : memref<[[WS]]xi8> to memref<1x1x6x6x4xf32>
// CHECK:         func.call @[[CONV]](%[[X]], %[[W]], %[[C]], %[[S]])
// CHECK:         %[[OUT:.*]] = builtin.unrealized_conversion_cast %[[Y]] : memref<1x64xf32> to memref<1x4x4x4xf32>
// CHECK:         func.call @[[RELU]](%{{.*}}, %[[OUT]])
// CHECK:         func.return
// CHECK:       llvm.mlir.global external @__ember_num_threads(0 : i32)
// CHECK-NOT:   graph.
func.func @main(%x: tensor<1x4x6x6xf32> {ember.name = "data"}) -> (tensor<1x64xf32> {ember.name = "prob"}) {
  %w = graph.param "w" : tensor<4x4x3x3xf32>
  %c = graph.conv2d %x, %w {padding = [0, 0, 0, 0]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32>
  %r = graph.relu %c : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %f = graph.flatten %r {axis = 1} : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  func.return %f : tensor<1x64xf32>
}

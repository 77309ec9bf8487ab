// RUN: ember-opt %s -p 'graph-fuse-ops,convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory{debug=true}' | filecheck %s
// RUN: ember-opt %s -p 'graph-fuse-ops,convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory' | filecheck %s --check-prefix=PLAIN

// ember.model ends with the call plan: each kernel call in order, its
// arguments (an input or output by index, or an offset into the workspace or
// params, with shape and dtype), which argument is its result, and the graph
// ops it computes, read from the call's location: with `debug`, each op's
// ONNX node and the tensor its result is (the frontend's loc("node"("tensor"))).

// CHECK:      \22calls\22: [{\22kernel\22: \22ember_conv2d_relu_{{[0-9a-f]+}}\22, \22args\22: [{\22buffer\22: \22input\22, \22index\22: 0, \22offset\22: 0, \22shape\22: [1, 4, 6, 6], \22dtype\22: \22float32\22}, {\22buffer\22: \22params\22, \22offset\22: 0,
// CHECK-SAME: \22result\22: 2, \22ops\22: [{\22op\22: \22graph.conv2d\22, \22nodes\22: [\22conv\22], \22tensor\22: \22c\22}, {\22op\22: \22graph.relu\22, \22nodes\22: [\22relu\22], \22tensor\22: \22r\22}]}
// CHECK-SAME: {\22kernel\22: \22ember_softmax_{{[0-9a-f]+}}\22, \22args\22: [{\22buffer\22: \22workspace\22, \22offset\22: {{[0-9]+}}, \22shape\22: [1, 64], \22dtype\22: \22float32\22}, {\22buffer\22: \22output\22, \22index\22: 0, \22offset\22: 0, \22shape\22: [1, 64], \22dtype\22: \22float32\22}], \22result\22: 1, \22ops\22: [{\22op\22: \22graph.softmax\22, \22nodes\22: [\22prob\22], \22tensor\22: \22y\22}]}]}"

// PLAIN:      \22ops\22: [{\22op\22: \22graph.conv2d\22}, {\22op\22: \22graph.relu\22}]
// PLAIN-SAME: \22ops\22: [{\22op\22: \22graph.softmax\22}]}]}"
func.func @main(%x: tensor<1x4x6x6xf32> {ember.name = "data"}) -> (tensor<1x64xf32> {ember.name = "y"}) {
  %w = graph.param "w" : tensor<4x4x3x3xf32> loc("conv")
  %c = graph.conv2d %x, %w {padding = [0, 0, 0, 0]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32> loc("conv"("c"))
  %r = graph.relu %c : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("relu"("r"))
  %f = graph.flatten %r {axis = 1} : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32> loc("flat"("f"))
  %s = graph.softmax %f {axis = 1} : (tensor<1x64xf32>) -> tensor<1x64xf32> loc("prob"("y"))
  func.return %s : tensor<1x64xf32>
}

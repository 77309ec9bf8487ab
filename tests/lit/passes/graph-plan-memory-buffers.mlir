// RUN: ember-opt %s -p 'convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory{memory=buffers}' | filecheck %s
// RUN: not ember-opt %s -p 'convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory{memory=arena}' 2>&1 | filecheck %s --check-prefix=RULE

// The GPU backends' rule: a kernel argument is a whole buffer, so each
// intermediate lives in a slot of its own (a device buffer), and a slot is
// reused once every value in it is dead: relu -> slot0, sigmoid -> slot1, tanh
// -> slot0 again, exp into the output. The entry takes the slots where a CPU's
// takes the workspace; the plan places values as {"buffer": "slot", "index": i}.
// No thread-count global: that is for a CPU's kernels compiled apart.

// A rule no backend has is refused, naming those there are.
// RULE: graph-plan-memory: memory='arena': expected one of workspace, buffers

// CHECK:       builtin.module attributes {ember.model = "{{.*}}\22args\22: [{\22buffer\22: \22input\22, \22index\22: 0, {{.*}}{\22buffer\22: \22slot\22, \22index\22: 0, \22offset\22: 0,{{.*}}\22slots\22: [256, 256]}"}
// CHECK-LABEL: func.func @default_run(
// CHECK-SAME:      %[[X:[^:]*]]: memref<1x64xf32> {ember.name = "data"},
// CHECK-SAME:      %[[Y:[^:]*]]: memref<1x64xf32> {ember.name = "prob", ember.output},
// CHECK-SAME:      %[[S0:[^:]*]]: memref<256xi8> {ember.name = "slot0", ember.output},
// CHECK-SAME:      %[[S1:[^:]*]]: memref<256xi8> {ember.name = "slot1", ember.output},
// CHECK-SAME:      %{{[^:]*}}: memref<64xi8> {ember.name = "params"})
// CHECK:         %[[A:.*]] = memref.view %[[S0]]
// CHECK:         func.call @ember_relu_{{[0-9a-f]+}}(%[[X]], %[[A]])
// CHECK:         %[[B:.*]] = memref.view %[[S1]]
// CHECK:         func.call @ember_sigmoid_{{[0-9a-f]+}}(%{{.*}}, %[[B]])
// CHECK:         %[[C:.*]] = memref.view %[[S0]]
// CHECK:         func.call @ember_tanh_{{[0-9a-f]+}}(%{{.*}}, %[[C]])
// CHECK:         func.call @ember_exp_{{[0-9a-f]+}}(%{{.*}}, %[[Y]])
// CHECK-NOT:   llvm.mlir.global
func.func @main(%x: tensor<1x64xf32> {ember.name = "data"}) -> (tensor<1x64xf32> {ember.name = "prob"}) {
  %a = graph.relu %x : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %b = graph.sigmoid %a : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %c = graph.tanh %b : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %d = graph.exp %c : (tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %d : tensor<1x64xf32>
}

// RUN: ember-opt %s -p 'ember-graph,convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory' | filecheck %s

// A call with size-class variants becomes a test of the size at run time:
// the variant where it holds, the kernel otherwise, on the same buffers.

// CHECK-LABEL: func.func @default_run(
// CHECK:         %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         %[[IS:.*]] = arith.cmpi eq, %n, %[[ONE]] : index
// CHECK:         scf.if %[[IS]] {
// CHECK-NEXT:      func.call @[[K:ember_dense_relu_[0-9a-f]+]]_v0(%[[X:[0-9]+]], %[[W:[0-9]+]], %[[B:[0-9]+]], %[[Y:[0-9]+]], %n)
// CHECK-NEXT:    } else {
// CHECK-NEXT:      func.call @[[K]](%[[X]], %[[W]], %[[B]], %[[Y]], %n)
// CHECK-NEXT:    }
func.func @main(%x: tensor<?x16xf32, ["n"]>) -> tensor<?x40xf32, ["n"]> {
  %w = graph.param "w" : tensor<40x16xf32>
  %b = graph.param "b" : tensor<40xf32>
  %y = graph.dense %x, %w, %b : (tensor<?x16xf32, ["n"]>, tensor<40x16xf32>, tensor<40xf32>) -> tensor<?x40xf32, ["n"]>
  %z = graph.relu %y : (tensor<?x40xf32, ["n"]>) -> tensor<?x40xf32, ["n"]>
  func.return %z : tensor<?x40xf32, ["n"]>
}

// RUN: ember-opt %s --split-input-file -p 'convert-graph-to-te,convert-te-to-loop{scratch-args=true},graph-plan-memory' | filecheck %s

// A concatenation along channels at batch 1 whose operands it alone reads
// runs no kernel: each producer writes its slab of the result in place
// (relu at byte 0, exp at 256), and the reader sees the whole.

// CHECK-NOT:     func.func private @ember_concat
// CHECK-LABEL:   func.func @default_run(
// CHECK-SAME:        %[[X:[^:]*]]: memref<1x4x4x4xf32>
// CHECK-SAME:        %[[WS:[^:]*]]: memref<512xi8> {ember.name = "workspace", ember.output}
// CHECK:           %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[A:.*]] = memref.view %[[WS]][%[[ZERO]]][] : memref<512xi8> to memref<1x4x4x4xf32>
// CHECK-NEXT:      func.call @{{ember_relu_[0-9a-f]+}}(%[[X]], %[[A]])
// CHECK-NEXT:      %[[AT:.*]] = arith.constant 256 : index
// CHECK-NEXT:      %[[B:.*]] = memref.view %[[WS]][%[[AT]]][] : memref<512xi8> to memref<1x4x4x4xf32>
// CHECK-NEXT:      func.call @{{ember_exp_[0-9a-f]+}}(%[[X]], %[[B]])
// CHECK-NEXT:      %[[C:.*]] = memref.view %[[WS]][%[[ZERO]]][] : memref<512xi8> to memref<1x8x4x4xf32>
// CHECK-NEXT:      func.call @{{ember_tanh_[0-9a-f]+}}(%[[C]], %{{.*}})
// CHECK-NEXT:      func.return
func.func @main(%x: tensor<1x4x4x4xf32> {ember.name = "data"}) -> (tensor<1x8x4x4xf32> {ember.name = "y"}) {
  %a = graph.relu %x : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %b = graph.exp %x : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = graph.concat %a, %b {axis = 1} : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x8x4x4xf32>
  %t = graph.tanh %c : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %t : tensor<1x8x4x4xf32>
}

// -----

// Where another op reads an operand too, or the slabs are not contiguous
// (a batch of 2), the concatenation stays a kernel.

// CHECK-LABEL:   func.func @default_run(
// CHECK:           func.call @{{ember_concat_[0-9a-f]+}}
// CHECK:           func.call @{{ember_concat_[0-9a-f]+}}
func.func @main(%x: tensor<1x4x4x4xf32> {ember.name = "data"}, %z: tensor<2x4x4x4xf32> {ember.name = "z"}) -> (tensor<1x8x4x4xf32> {ember.name = "y"}, tensor<1x4x4x4xf32> {ember.name = "a"}, tensor<2x8x4x4xf32> {ember.name = "w"}) {
  %a = graph.relu %x : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %b = graph.exp %x : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = graph.concat %a, %b {axis = 1} : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x8x4x4xf32>
  %t = graph.tanh %c : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %n = graph.neg %a : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = graph.relu %z : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %q = graph.exp %z : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %w = graph.concat %p, %q {axis = 1} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x8x4x4xf32>
  %u = graph.tanh %w : (tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  func.return %t, %n, %u : tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>, tensor<2x8x4x4xf32>
}

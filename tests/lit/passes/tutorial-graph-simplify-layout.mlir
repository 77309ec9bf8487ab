// RUN: ember-opt %s --split-input-file --load-pass-plugin %S/../../../examples/custom_pass/simplify_layout.py -p graph-simplify-layout | filecheck %s
// RUN: ember-opt %s --split-input-file --load-pass-plugin %S/../../../examples/custom_pass/simplify_layout.py -p graph-simplify-layout-walk | filecheck %s
// RUN: ember-opt %s --split-input-file --load-pass-plugin %S/../../../examples/custom_pass/simplify_layout.py -p 'graph-simplify-layout{transposes=false}' | filecheck %s --check-prefix=NOTR

// The tutorial's plugin pass (docs/tutorial_custom_pass.md): a flatten then a
// reshape is one reshape; a transpose pair that cancels goes; a transpose that
// moves only unit dims is a reshape. The pattern pass and the walk agree.

// CHECK-LABEL: func.func @head(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<1x64x1x1xf32>, %[[W:[^:]*]]: tensor<10x64xf32>)
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[X]] : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.dense %[[R]], %[[W]]
// CHECK-NEXT:    func.return %[[Y]]

// NOTR-LABEL: func.func @head(
// NOTR:         %[[R:.*]] = graph.reshape %{{.*}} : (tensor<1x64x1x1xf32>) -> tensor<64x1xf32>
// NOTR-NEXT:    graph.transpose %[[R]] {perm = [1, 0]}
// NOTR-NEXT:    %[[WT:.*]] = graph.transpose
// NOTR-NEXT:    graph.transpose %[[WT]]
func.func @head(%x: tensor<1x64x1x1xf32>, %w: tensor<10x64xf32>) -> tensor<1x10xf32> {
  %f = graph.flatten %x {axis = 1} : (tensor<1x64x1x1xf32>) -> tensor<1x64xf32>
  %r = graph.reshape %f : (tensor<1x64xf32>) -> tensor<64x1xf32>
  %t = graph.transpose %r {perm = [1, 0]} : (tensor<64x1xf32>) -> tensor<1x64xf32>
  %wt = graph.transpose %w {perm = [1, 0]} : (tensor<10x64xf32>) -> tensor<64x10xf32>
  %wtt = graph.transpose %wt {perm = [1, 0]} : (tensor<64x10xf32>) -> tensor<10x64xf32>
  %y = graph.dense %t, %wtt : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
  func.return %y : tensor<1x10xf32>
}

// -----

// Two transposes compose into one; a reshape to the same shape is its input.

// CHECK-LABEL: func.func @compose(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[X]] {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    func.return %[[T]]

// NOTR-LABEL: func.func @compose(
// NOTR-COUNT-2: graph.transpose
// NOTR-NEXT:    func.return
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %a = graph.transpose %x {perm = [0, 2, 1]} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %b = graph.transpose %a {perm = [2, 1, 0]} : (tensor<2x4x3xf32>) -> tensor<3x4x2xf32>
  %c = graph.reshape %b : (tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
  func.return %c : tensor<3x4x2xf32>
}

// -----

// A real permutation of a reshape's result stays: nothing to cancel.

// CHECK-LABEL: func.func @keep(
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.transpose
// CHECK-NEXT:    func.return
func.func @keep(%x: tensor<6x4xf32>) -> tensor<4x3x2xf32> {
  %r = graph.reshape %x : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  %t = graph.transpose %r : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  func.return %t : tensor<4x3x2xf32>
}

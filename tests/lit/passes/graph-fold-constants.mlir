// RUN: ember-opt %s --split-input-file -p graph-fold-constants | filecheck %s
// RUN: ember-opt %s --split-input-file -p 'graph-fold-constants{max-elements=2}' | filecheck %s --check-prefix=SMALL

// Ops on literals fold into one literal; only what the rest reads is kept.

// CHECK-LABEL: func.func @literals(
// CHECK-SAME:      %[[X:.*]]: tensor<2x2xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense<[2.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.mul %[[X]], %[[T]]
// CHECK-NEXT:    func.return %[[Y]], %[[S]]
func.func @literals(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>) {
  %c = graph.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %s = graph.sqrt %c : (tensor<2xf32>) -> tensor<2xf32>
  %t = graph.add %s, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = graph.mul %x, %t : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %y, %s : tensor<2x2xf32>, tensor<2xf32>
}

// -----

// Layout ops and reductions on literals fold too (transpose, reshape, concat, pad,
// reduce); a literal larger than max-elements is left to compute at run time.

// CHECK-LABEL: func.func @layout(
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<{{\[}}[1.000000e+00, 3.000000e+00, 0.000000e+00, 4.000000e+00, 1.000000e+01]]> : tensor<1x5xf32>
// CHECK-NEXT:    func.return %[[C]]

// SMALL-LABEL: func.func @layout(
// SMALL:         graph.transpose
// SMALL-NEXT:    graph.reshape
// SMALL-NEXT:    graph.constant dense<1.000000e+01> : tensor<1x1xf32>
// SMALL-NEXT:    graph.concat
func.func @layout() -> tensor<1x5xf32> {
  %c = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = graph.transpose %c {perm = [1, 0]} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %r = graph.reshape %t : (tensor<2x2xf32>) -> tensor<1x4xf32>
  %s = graph.reduce_sum %c {axes = [], keepdims = true} : (tensor<2x2xf32>) -> tensor<1x1xf32>
  %a = graph.concat %r, %s {axis = 1} : (tensor<1x4xf32>, tensor<1x1xf32>) -> tensor<1x5xf32>
  %p = graph.pad %a {pads = [0, 0, 0, 0]} : (tensor<1x5xf32>) -> tensor<1x5xf32>
  %b = graph.constant dense<[[1.0, 3.0, 0.0, 10.0, 10.0]]> : tensor<1x5xf32>
  %m = graph.minimum %p, %b : (tensor<1x5xf32>, tensor<1x5xf32>) -> tensor<1x5xf32>
  func.return %m : tensor<1x5xf32>
}

// -----

// Params are not known to the pass form: ops on them stay.

// CHECK-LABEL: func.func @params(
// CHECK-NEXT:    %[[W:.*]] = graph.param "fc.weight" : tensor<4x3xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[W]]
// CHECK-NEXT:    graph.dense %{{.*}}, %[[T]]
func.func @params(%x: tensor<1x4xf32>) -> tensor<1x3xf32> {
  %w = graph.param "fc.weight" : tensor<4x3xf32>
  %t = graph.transpose %w {perm = [1, 0]} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %y = graph.dense %x, %t : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
  func.return %y : tensor<1x3xf32>
}

// -----

// A reshape to its operand's type and a transpose by the identity permutation
// are their operand, known or not; a transpose that keeps the type but moves
// axes (perm [0, 2, 1] of 2x3x3) stays.

// CHECK-LABEL: func.func @identities(
// CHECK-SAME:      %[[X:.*]]: tensor<2x3x3xf32>)
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[X]] {perm = [0, 2, 1]}
// CHECK-NEXT:    %[[R:.*]] = graph.transpose %[[T]] : (tensor<2x3x3xf32>) -> tensor<3x3x2xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @identities(%x: tensor<2x3x3xf32>) -> tensor<3x3x2xf32> {
  %a = graph.reshape %x : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %b = graph.transpose %a {perm = [0, 1, 2]} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %c = graph.transpose %b {perm = [0, 2, 1]} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %d = graph.reshape %c : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %e = graph.transpose %d : (tensor<2x3x3xf32>) -> tensor<3x3x2xf32>
  func.return %e : tensor<3x3x2xf32>
}

// RUN: ember-opt %s | filecheck %s
// RUN: ember-opt %s | ember-opt | filecheck %s

// Symbolic dimensions (issue 25): a dynamic dim of a graph tensor is named by
// an expression in the type's encoding, one per `?` in order. Shape rules
// compute on the expressions: a reshape keeps the element count (batch * seq
// * 768 both ways), dense contracts a static K, matmul contracts and
// broadcasts symbolic batch dims, a mask of [batch, 1, 1, seq] broadcasts
// against [batch, 12, seq, seq].

// CHECK-LABEL: func.func @attention(
// CHECK-SAME:      %{{.*}}: tensor<?x?x768xf32, ["batch", "seq"]>
// CHECK:         graph.reshape %{{.*}} : (tensor<?x?x768xf32, ["batch", "seq"]>) -> tensor<?x768xf32, ["batch * seq"]>
// CHECK:         graph.dense
// CHECK-SAME:      -> tensor<?x768xf32, ["batch * seq"]>
// CHECK:         graph.matmul
// CHECK-SAME:      -> tensor<?x12x?x?xf32, ["batch", "seq", "seq"]>
// CHECK:         graph.add
// CHECK:         graph.softmax
func.func @attention(%x: tensor<?x?x768xf32, ["batch", "seq"]>, %m: tensor<?x1x1x?xf32, ["batch", "seq"]>) -> tensor<?x12x?x?xf32, ["batch", "seq", "seq"]> {
  %w = graph.param "w" : tensor<768x768xf32>
  %r = graph.reshape %x : (tensor<?x?x768xf32, ["batch", "seq"]>) -> tensor<?x768xf32, ["batch * seq"]>
  %d = graph.dense %r, %w : (tensor<?x768xf32, ["batch * seq"]>, tensor<768x768xf32>) -> tensor<?x768xf32, ["batch * seq"]>
  %q = graph.reshape %d : (tensor<?x768xf32, ["batch * seq"]>) -> tensor<?x?x12x64xf32, ["batch", "seq"]>
  %t = graph.transpose %q {perm = [0, 2, 1, 3]} : (tensor<?x?x12x64xf32, ["batch", "seq"]>) -> tensor<?x12x?x64xf32, ["batch", "seq"]>
  %k = graph.transpose %q {perm = [0, 2, 3, 1]} : (tensor<?x?x12x64xf32, ["batch", "seq"]>) -> tensor<?x12x64x?xf32, ["batch", "seq"]>
  %s = graph.matmul %t, %k : (tensor<?x12x?x64xf32, ["batch", "seq"]>, tensor<?x12x64x?xf32, ["batch", "seq"]>) -> tensor<?x12x?x?xf32, ["batch", "seq", "seq"]>
  %a = graph.add %s, %m : (tensor<?x12x?x?xf32, ["batch", "seq", "seq"]>, tensor<?x1x1x?xf32, ["batch", "seq"]>) -> tensor<?x12x?x?xf32, ["batch", "seq", "seq"]>
  %p = graph.softmax %a {axis = -1} : (tensor<?x12x?x?xf32, ["batch", "seq", "seq"]>) -> tensor<?x12x?x?xf32, ["batch", "seq", "seq"]>
  func.return %p : tensor<?x12x?x?xf32, ["batch", "seq", "seq"]>
}

// CHECK-LABEL: func.func @expressions(
// CHECK:         graph.concat %{{.*}}, %{{.*}} {axis = 0} : (tensor<?x4xf32, ["n"]>, tensor<?x4xf32, ["n + 1"]>) -> tensor<?x4xf32, ["2 * n + 1"]>
// CHECK:         graph.pad
// CHECK-SAME:      -> tensor<?x6xf32, ["2 * n + 3"]>
func.func @expressions(%a: tensor<?x4xf32, ["n"]>, %b: tensor<?x4xf32, ["n + 1"]>) -> tensor<?x6xf32, ["2 * n + 3"]> {
  %c = graph.concat %a, %b {axis = 0} : (tensor<?x4xf32, ["n"]>, tensor<?x4xf32, ["n + 1"]>) -> tensor<?x4xf32, ["2 * n + 1"]>
  %p = graph.pad %c {pads = [1, 1, 1, 1]} : (tensor<?x4xf32, ["2 * n + 1"]>) -> tensor<?x6xf32, ["2 * n + 3"]>
  func.return %p : tensor<?x6xf32, ["2 * n + 3"]>
}

// Slices of a symbolic axis: an end that is the axis' extent (`"n"`, as the
// importer resolves ONNX's INT64_MAX end) or a known index; the count is an
// expression (1:n:2 keeps n // 2). Sizes that may be symbolic are written as
// expression strings in the attribute (`shape = ["n", 32]`).
// CHECK-LABEL: func.func @slices(
// CHECK:         graph.slice %{{.*}} {starts = [0, 32], ends = ["n", 64], steps = [1, 1]} : (tensor<?x96xf32, ["n"]>) -> tensor<?x32xf32, ["n"]>
// CHECK:         graph.slice %{{.*}} {starts = [1, 0], ends = ["n", 32], steps = [2, 1]} : (tensor<?x96xf32, ["n"]>) -> tensor<?x32xf32, ["n // 2"]>
// CHECK:         graph.broadcast_to %{{.*}} {shape = ["n", 32]} : (tensor<?x1xf32, ["n"]>) -> tensor<?x32xf32, ["n"]>
func.func @slices(%x: tensor<?x96xf32, ["n"]>, %m: tensor<?x1xf32, ["n"]>) -> tensor<?x32xf32, ["n"]> {
  %a = graph.slice %x {starts = [0, 32], ends = ["n", 64], steps = [1, 1]} : (tensor<?x96xf32, ["n"]>) -> tensor<?x32xf32, ["n"]>
  %b = graph.slice %x {starts = [1, 0], ends = ["n", 32], steps = [2, 1]} : (tensor<?x96xf32, ["n"]>) -> tensor<?x32xf32, ["n // 2"]>
  %e = graph.broadcast_to %m {shape = ["n", 32]} : (tensor<?x1xf32, ["n"]>) -> tensor<?x32xf32, ["n"]>
  %s = graph.add %a, %e : (tensor<?x32xf32, ["n"]>, tensor<?x32xf32, ["n"]>) -> tensor<?x32xf32, ["n"]>
  func.return %s : tensor<?x32xf32, ["n"]>
}

// Sizes from the model's symbols on static tensors (what the ONNX importer
// makes of GPT-2's `bias[:, :, :t, :t]`, `torch.ones(t, t)` and
// `mask.repeat(b, 1)`): a slice to a symbolic end on a static axis (the
// importer bounds t by 32), a literal broadcast to a symbolic shape, a tile by
// a symbolic count.
// CHECK-LABEL: func.func @sized(
// CHECK:         graph.slice %{{.*}} {starts = [0, 0], ends = ["t", "t"], steps = [1, 1]} : (tensor<32x32xf32>) -> tensor<?x?xf32, ["t", "t"]>
// CHECK:         graph.broadcast_to %{{.*}} {shape = ["t", "t"]} : (tensor<f32>) -> tensor<?x?xf32, ["t", "t"]>
// CHECK:         graph.trilu %{{.*}} {upper = false, k = 0}
// CHECK:         graph.tile %{{.*}} {repeats = ["b", 1]} : (tensor<1x4xf32>) -> tensor<?x4xf32, ["b"]>
func.func @sized(%m: tensor<32x32xf32>, %r: tensor<1x4xf32>) -> (tensor<?x?xf32, ["t", "t"]>, tensor<?x4xf32, ["b"]>) {
  %s = graph.slice %m {starts = [0, 0], ends = ["t", "t"], steps = [1, 1]} : (tensor<32x32xf32>) -> tensor<?x?xf32, ["t", "t"]>
  %one = graph.constant dense<1.0> : tensor<f32>
  %o = graph.broadcast_to %one {shape = ["t", "t"]} : (tensor<f32>) -> tensor<?x?xf32, ["t", "t"]>
  %l = graph.trilu %o {upper = false, k = 0} : (tensor<?x?xf32, ["t", "t"]>) -> tensor<?x?xf32, ["t", "t"]>
  %a = graph.add %s, %l : (tensor<?x?xf32, ["t", "t"]>, tensor<?x?xf32, ["t", "t"]>) -> tensor<?x?xf32, ["t", "t"]>
  %t = graph.tile %r {repeats = ["b", 1]} : (tensor<1x4xf32>) -> tensor<?x4xf32, ["b"]>
  func.return %a, %t : tensor<?x?xf32, ["t", "t"]>, tensor<?x4xf32, ["b"]>
}

// RUN: ember-opt %s -p graph-mixed-precision 2>&1 | filecheck %s

// Where numpy cannot run the graph (a reshape to two sizes known only at run
// time), each layer is measured alone, on standard normal data of its
// input's shape and its weights, and the pass says so.
// CHECK: Warning: graph-mixed-precision: the calibration cannot run through the graph in numpy ('graph.reshape': {{.*}}); each layer is measured alone on standard normal inputs instead
// CHECK: graph.matmul %r, %w {ember.precision = "bf16"}

builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4"} {
func.func @main(%x: tensor<?x8xf32, ["batch * seq"]> {ember.name = "x"}) -> tensor<?x?x4xf32, ["batch", "seq"]> {
  %w = graph.constant dense<[[0.5, 1.0, -1.0, 0.1], [-1.0, 1.0, 2.0, 0.2], [0.25, -1.0, -3.0, 0.3], [2.0, 0.5, 4.0, 0.4], [1.0, 0.25, 1.0, 0.5], [0.75, 2.0, 0.5, 0.6], [-0.5, 1.0, 0.25, 0.7], [1.5, -0.75, 0.125, 0.8]]> : tensor<8x4xf32>
  %r = graph.reshape %x : (tensor<?x8xf32, ["batch * seq"]>) -> tensor<?x?x8xf32, ["batch", "seq"]>
  %d = graph.matmul %r, %w : (tensor<?x?x8xf32, ["batch", "seq"]>, tensor<8x4xf32>) -> tensor<?x?x4xf32, ["batch", "seq"]>
  func.return %d : tensor<?x?x4xf32, ["batch", "seq"]>
}
}

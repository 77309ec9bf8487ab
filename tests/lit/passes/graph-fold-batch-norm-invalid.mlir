// RUN: ember-opt %s --verify-diagnostics -p graph-fold-batch-norm | filecheck %s

// Statistics must be floats: the scale needs a square root.

func.func @integer_stats(%x: tensor<1x2xi64>, %s: tensor<2xi64>) -> tensor<1x2xi64> {
  %z = graph.batch_norm %x, %s, %s, %s, %s : (tensor<1x2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x2xi64>
  func.return %z : tensor<1x2xi64>
}

// CHECK: graph-fold-batch-norm: expected f32 or f64 statistics, got tensor<2xi64>

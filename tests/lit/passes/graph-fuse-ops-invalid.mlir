// RUN: ember-opt %s --verify-diagnostics -p 'graph-fuse-ops{max-group-size=0}' | filecheck %s

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: graph-fuse-ops: expected a positive max-group-size, got 0

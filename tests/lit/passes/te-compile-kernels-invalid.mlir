// RUN: not ember-opt %s -p 'convert-graph-to-te,te-compile-kernels' 2>&1 | filecheck %s

// The objects a module names must map symbols to cache keys.
// CHECK: expected ember.objects to map symbols to cache keys, got {ember_old = 3 : i64}
builtin.module attributes {ember.objects = {ember_old = 3}} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

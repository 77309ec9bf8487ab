// RUN: not ember-opt %s -p graph-plan-memory --split-input-file 2>&1 | filecheck %s

// Kernels must be loop functions first.
// CHECK: graph-plan-memory: kernel @k is still a te function: run convert-te-to-loop{scratch-args=true} first
func.func private @k(%a: tensor<4xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.call_kernel @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Every graph op must have become a kernel call.
// CHECK: graph-plan-memory: 'graph.relu' in @main: expected only graph.call_kernel, graph.param, views and func.return (run convert-graph-to-te first)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// A signature that does not fit the call.
// CHECK: graph-plan-memory: kernel @k: expected 2 operands, the result and 0 scratch buffers, got 2 arguments
func.func private @k(memref<4xf32>, memref<4xf32> {ember.output})
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.call_kernel @k(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// A result no kernel computes (convert-graph-to-te copies such results).
// CHECK: graph-plan-memory: result 0 of @main is not computed by a kernel of its own
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.param "w" : tensor<4xf32>
  func.return %w : tensor<4xf32>
}


// -----

// A variant whose signature is not its kernel's (not the same computation).
// CHECK: graph-plan-memory: variant @v of kernel @k takes other arguments than it
func.func private @k(memref<4xf32>, memref<4xf32> {ember.output})
func.func private @v(memref<4xf32>, memref<4xf32> {ember.output}, memref<4xf32> {ember.scratch})
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.call_kernel @k(%x) {ember.variants = [{callee = @v, size = "n", equals = 1 : i64}]} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

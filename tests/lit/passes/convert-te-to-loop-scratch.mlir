// RUN: ember-opt %s -p 'convert-te-to-loop{scratch-args=true}' --split-input-file | filecheck %s
// RUN: ember-opt %s -p convert-te-to-loop --split-input-file | filecheck %s --check-prefix=ALLOC

// With scratch-args, an intermediate computed at the root is not a heap
// allocation: it becomes an out-parameter after the outputs, marked
// ember.scratch, in stage order; the caller provides its memory.

// CHECK-LABEL: func.func @chain(
// CHECK-SAME:      %[[A:[^:]*]]: memref<64xf32> {ember.name = "A"},
// CHECK-SAME:      %[[D:[^:]*]]: memref<64xf32> {ember.name = "D", ember.output},
// CHECK-SAME:      %[[B:[^:]*]]: memref<64xf32> {ember.name = "B", ember.output, ember.scratch},
// CHECK-SAME:      %[[C:[^:]*]]: memref<64xf32> {ember.name = "C", ember.output, ember.scratch}) {
// CHECK-NOT:     loop.alloc
// CHECK:         memref.store %{{.*}}, %[[B]][%{{.*}}] : memref<64xf32>
// CHECK:         memref.load %[[B]][%{{.*}}] : memref<64xf32>
// CHECK:         memref.store %{{.*}}, %[[C]][%{{.*}}] : memref<64xf32>
// CHECK:         memref.load %[[C]][%{{.*}}] : memref<64xf32>
// CHECK:         memref.store %{{.*}}, %[[D]][%{{.*}}] : memref<64xf32>
// CHECK:         func.return

// Without it, the intermediates are loop.allocs at the top of the function.
// ALLOC-LABEL: func.func @chain(
// ALLOC-SAME:      %{{[^:]*}}: memref<64xf32> {ember.name = "A"},
// ALLOC-SAME:      %{{[^:]*}}: memref<64xf32> {ember.name = "D", ember.output}) {
// ALLOC-NEXT:    loop.alloc : memref<64xf32>
// ALLOC-NEXT:    loop.alloc : memref<64xf32>
func.func @chain(%A: tensor<64xf32>) -> tensor<64xf32> {
  %B = te.compute "B" (%i) -> tensor<64xf32> {
    %a = te.read %A[%i] : tensor<64xf32>
    %m = arith.mulf %a, %a : f32
    te.yield %m : f32
  }
  %C = te.compute "C" (%i) -> tensor<64xf32> {
    %b = te.read %B[%i] : tensor<64xf32>
    %n = arith.negf %b : f32
    te.yield %n : f32
  }
  %D = te.compute "D" (%i) -> tensor<64xf32> {
    %c = te.read %C[%i] : tensor<64xf32>
    %e = arith.addf %c, %c : f32
    te.yield %e : f32
  }
  func.return %D : tensor<64xf32>
}

// -----

// Buffers the schedule places elsewhere stay where they are: an inlined stage
// has none, a stage computed inside a consumer's loop keeps its local buffer,
// and a local cache at the root stays on the stack.

// CHECK-LABEL: func.func @placed(
// CHECK-SAME:      %{{[^:]*}}: memref<8x4xf32> {ember.name = "A"},
// CHECK-SAME:      %{{[^:]*}}: memref<8x4xf32> {ember.name = "E", ember.output}) {
// CHECK-NOT:     ember.scratch
// CHECK:         loop.alloc local : memref<8x4xf32>
// CHECK:         loop.for
// CHECK:           loop.alloc local : memref<1x4xf32>
func.func @placed(%A: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %B = te.compute "B" (%i, %j) -> tensor<8x4xf32> {
    %a = te.read %A[%i, %j] : tensor<8x4xf32>
    %m = arith.mulf %a, %a : f32
    te.yield %m : f32
  }
  %C = te.compute "C" (%i, %j) -> tensor<8x4xf32> {
    %b = te.read %B[%i, %j] : tensor<8x4xf32>
    %n = arith.negf %b : f32
    te.yield %n : f32
  }
  %E = te.compute "E" (%i, %j) -> tensor<8x4xf32> {
    %c = te.read %C[%i, %j] : tensor<8x4xf32>
    %x = te.read %A[%i, %j] : tensor<8x4xf32>
    %e = arith.addf %c, %x : f32
    te.yield %e : f32
  }
  te.schedule {
    te.compute_inline "B"
    te.compute_at "C" at "E" "i"
    te.cache_read "A" "local" readers ["E"] -> "A.local"
  }
  func.return %E : tensor<8x4xf32>
}

// RUN: ember-opt %s -p convert-loop-to-scf --split-input-file | filecheck %s

// Serial loops become plain scf.for; other kinds keep theirs as ember.loop_kind,
// next to the loop's own discardable attributes.

// CHECK-LABEL: func.func @kinds(
// CHECK-SAME:      %[[A:.*]]: memref<64xf32>) {
// CHECK:         scf.for %[[I:.*]] = %[[C0:.*]] to %[[C64:.*]] step %[[C1:.*]] {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[A]][%[[I]]] : memref<64xf32>
// CHECK-NEXT:      memref.store %[[X]], %[[A]][%[[I]]] : memref<64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %{{.*}} = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK-NEXT:      scf.for %{{.*}} = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK-NEXT:      } {ember.loop_kind = "vectorized"}
// CHECK-NEXT:    } {ember.note = "outer", ember.loop_kind = "parallel"}
// CHECK-NEXT:    func.return
// CHECK-NOT:     loop.
func.func @kinds(%A: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %A[%i] : memref<64xf32>
    memref.store %x, %A[%i] : memref<64xf32>
  }
  loop.for %i = %c0 to %c64 step %c1 parallel {
    loop.for %j = %c0 to %c64 step %c1 vectorized {
    }
  } {ember.note = "outer"}
  func.return
}

// -----

// An unrolled loop with constant bounds is replaced by one copy of its body per
// iteration; the induction variable becomes an index constant.

// CHECK-LABEL: func.func @unroll(
// CHECK-SAME:      %[[A:.*]]: memref<8xf32>) {
// CHECK:         arith.constant 6 : index
// CHECK-NEXT:    %[[I1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[X1:.*]] = memref.load %[[A]][%[[I1]]] : memref<8xf32>
// CHECK-NEXT:    %[[Y1:.*]] = arith.addf %[[X1]], %[[X1]] : f32
// CHECK-NEXT:    memref.store %[[Y1]], %[[A]][%[[I1]]] : memref<8xf32>
// CHECK-NEXT:    %[[I3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[X3:.*]] = memref.load %[[A]][%[[I3]]] : memref<8xf32>
// CHECK-NEXT:    %[[Y3:.*]] = arith.addf %[[X3]], %[[X3]] : f32
// CHECK-NEXT:    memref.store %[[Y3]], %[[A]][%[[I3]]] : memref<8xf32>
// CHECK-NEXT:    %[[I5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[X5:.*]] = memref.load %[[A]][%[[I5]]] : memref<8xf32>
// CHECK-NEXT:    %[[Y5:.*]] = arith.addf %[[X5]], %[[X5]] : f32
// CHECK-NEXT:    memref.store %[[Y5]], %[[A]][%[[I5]]] : memref<8xf32>
// CHECK-NEXT:    func.return
func.func @unroll(%A: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  loop.for %i = %c1 to %c6 step %c2 unrolled {
    %x = memref.load %A[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %A[%i] : memref<8xf32>
  }
  func.return
}

// -----

// Nested: the inner loops are lowered first, so the unrolled outer body copies
// scf.for loops and other unrolled copies; an empty range leaves nothing.

// CHECK-LABEL: func.func @nested(
// CHECK:         arith.constant 4 : index
// CHECK-NEXT:    %[[I0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[J0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    memref.store %{{.*}}, %{{.*}}[%[[I0]], %[[J0]]]
// CHECK-NEXT:    %[[J1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    memref.store %{{.*}}, %{{.*}}[%[[I0]], %[[J1]]]
// CHECK-NEXT:    scf.for %[[K:.*]] = {{.*}} {
// CHECK-NEXT:      memref.store %{{.*}}, %{{.*}}[%[[I0]], %[[K]]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[I1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[J0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    memref.store %{{.*}}, %{{.*}}[%[[I1]], %[[J0]]]
// CHECK-NEXT:    %[[J1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    memref.store %{{.*}}, %{{.*}}[%[[I1]], %[[J1]]]
// CHECK-NEXT:    scf.for %[[K:.*]] = {{.*}} {
// CHECK-NEXT:      memref.store %{{.*}}, %{{.*}}[%[[I1]], %[[K]]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @nested(%A: memref<2x4xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c2 step %c1 unrolled {
    loop.for %j = %c0 to %c2 step %c1 unrolled {
      memref.store %v, %A[%i, %j] : memref<2x4xf32>
    }
    loop.for %k = %c2 to %c4 step %c1 {
      memref.store %v, %A[%i, %k] : memref<2x4xf32>
    }
    loop.for %e = %c4 to %c2 step %c1 unrolled {
      memref.store %v, %A[%i, %e] : memref<2x4xf32>
    }
  }
  func.return
}

// -----

// Bounds that are not constants: an scf.for that remembers it wanted unrolling.

// CHECK-LABEL: func.func @unroll_dynamic(
// CHECK-SAME:      %[[N:.*]]: index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK:         } {ember.loop_kind = "unrolled"}
func.func @unroll_dynamic(%n: index, %A: memref<8xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %n step %c1 unrolled {
    memref.store %v, %A[%i] : memref<8xf32>
  }
  func.return
}

// -----

// Global buffers are heap-allocated, 64-byte aligned, and freed before the
// terminator of their block; local ones live on the stack.

// CHECK-LABEL: func.func @buffers(
// CHECK:         %[[G:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK-NEXT:    %[[L:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() {alignment = 64 : i64, ember.note = "tmp"} : memref<4xi32>
// CHECK:         scf.for
// CHECK-NEXT:      %[[B:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT:      %[[S:.*]] = memref.alloca() {alignment = 64 : i64} : memref<f32>
// CHECK-NEXT:      memref.dealloc %[[B]] : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %[[G]] : memref<64x64xf32>
// CHECK-NEXT:    memref.dealloc %[[T]] : memref<4xi32>
// CHECK-NEXT:    func.return
// CHECK-NOT:     memref.dealloc
func.func @buffers(%n: index) {
  %g = loop.alloc : memref<64x64xf32>
  %l = loop.alloc local : memref<16xf32>
  %t = loop.alloc {ember.note = "tmp"} : memref<4xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %n step %c1 {
    %b = loop.alloc : memref<8xf32>
    %s = loop.alloc local : memref<f32>
  }
  func.return
}

// -----

// A buffer with dynamic dims keeps its sizes (and its attributes).

// CHECK-LABEL: func.func @dynamic_buffer(
// CHECK-SAME:      %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK:         %[[D:.*]] = memref.alloc(%[[N]], %[[M]]) {alignment = 64 : i64, ember.dims = ["n", "m"]} : memref<?x8x?xf32>
// CHECK:         memref.store %{{.*}}, %[[D]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x8x?xf32>
// CHECK-NEXT:    memref.dealloc %[[D]] : memref<?x8x?xf32>
// CHECK-NEXT:    func.return
func.func @dynamic_buffer(%n: index, %m: index) {
  %d = loop.alloc(%n, %m) {ember.dims = ["n", "m"]} : memref<?x8x?xf32>
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  memref.store %x, %d[%c0, %c0, %c0] : memref<?x8x?xf32>
  func.return
}

// -----

// A buffer in an unrolled body is allocated and freed in every copy.

// CHECK-LABEL: func.func @alloc_in_unrolled(
// CHECK-COUNT-3: memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK-NOT:     memref.alloc
func.func @alloc_in_unrolled() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  loop.for %i = %c0 to %c3 step %c1 unrolled {
    %b = loop.alloc : memref<4xf32>
  }
  func.return
}

// -----

// The output of convert-te-to-loop lowers with it.

// CHECK-LABEL: func.func @te_chain(
// CHECK:         %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:         memref.dealloc %[[T]] : memref<4xf32>
// CHECK-NEXT:    func.return
func.func @te_chain(%A: memref<4xf32> {ember.name = "A"}, %U: memref<4xf32> {ember.name = "U"}) {
  %T = loop.alloc : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %T[%i] : memref<4xf32>
  }
  loop.for %i_1 = %c0 to %c4 step %c1 {
    %t = memref.load %T[%i_1] : memref<4xf32>
    memref.store %t, %U[%i_1] : memref<4xf32>
  }
  func.return
}

// -----

// loop.call_packed stays for convert-call-packed-to-llvm, which lowers it once
// loops are branches (an early return must leave every loop).

// CHECK-LABEL: func.func @host_call(
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.call_packed "my.step"(%{{.*}}, %[[I]]) : memref<4xf32>, index
// CHECK-NEXT:    }
func.func @host_call(%A: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.call_packed "my.step"(%A, %i) : memref<4xf32>, index
  }
  func.return
}

// RUN: ember-opt %s -p convert-te-to-loop --split-input-file | filecheck %s

// A te.extern becomes its body on whole buffers: the inputs' (an argument, or a
// compute's buffer) and its own (a loop.alloc, or the out-parameter when it is a
// result). Consumers read its buffer like any other.

// CHECK-LABEL: func.func @between(
// CHECK-SAME:      %[[A:.*]]: memref<16xf32> {ember.name = "A"}, %[[C:.*]]: memref<16xf32> {ember.name = "C", ember.output})
// CHECK-NEXT:    %[[A1:.*]] = loop.alloc : memref<16xf32>
// CHECK-NEXT:    %[[B:.*]] = loop.alloc : memref<16xf32>
// CHECK:         loop.for
// CHECK:           memref.store %{{.*}}, %[[A1]][%{{.*}}] : memref<16xf32>
// CHECK:         }
// CHECK-NEXT:    %[[K:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    loop.call_packed "my.sort"(%[[A1]], %[[B]], %[[K]], "asc") : memref<16xf32>, memref<16xf32>, i64
// CHECK-NEXT:    loop.for
// CHECK:           %{{.*}} = memref.load %[[B]][%{{.*}}] : memref<16xf32>
// CHECK:           memref.store %{{.*}}, %[[C]][%{{.*}}] : memref<16xf32>
// CHECK-NOT:     te.
func.func @between(%A: tensor<16xf32> {ember.name = "A"}) -> tensor<16xf32> {
  %A1 = te.compute "A1" (%i) -> tensor<16xf32> {
    %a = te.read %A[%i] : tensor<16xf32>
    %b = arith.addf %a, %a : f32
    te.yield %b : f32
  }
  %B = te.extern "B" (%A1) : (tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%in: memref<16xf32>, %out: memref<16xf32>):
    %k = arith.constant 3 : i64
    loop.call_packed "my.sort"(%in, %out, %k, "asc") : memref<16xf32>, memref<16xf32>, i64
  }
  %C = te.compute "C" (%i) -> tensor<16xf32> {
    %x = te.read %B[%i] : tensor<16xf32>
    te.yield %x : f32
  }
  func.return %C : tensor<16xf32>
}

// -----

// An extern that is a result writes its out-parameter; an input is passed as is.

// CHECK-LABEL: func.func @result(
// CHECK-SAME:      %[[A:.*]]: memref<2x3xi32> {ember.name = "A"}, %[[R:.*]]: memref<2x3xi32> {ember.name = "R", ember.output})
// CHECK-NEXT:    loop.call_packed "my.copy"(%[[A]], %[[R]]) : memref<2x3xi32>, memref<2x3xi32>
// CHECK-NEXT:    loop.call_packed "my.check"(%[[R]]) : memref<2x3xi32>
// CHECK-NEXT:    func.return
func.func @result(%A: tensor<2x3xi32> {ember.name = "A"}) -> tensor<2x3xi32> {
  %R = te.extern "R" (%A) : (tensor<2x3xi32>) -> tensor<2x3xi32> {
  ^bb0(%in: memref<2x3xi32>, %out: memref<2x3xi32>):
    loop.call_packed "my.copy"(%in, %out) : memref<2x3xi32>, memref<2x3xi32>
    loop.call_packed "my.check"(%out) : memref<2x3xi32>
  }
  func.return %R : tensor<2x3xi32>
}

// -----

// Its consumers take any schedule; the extern runs whole before them.

// CHECK-LABEL: func.func @scheduled_consumer(
// CHECK:         loop.call_packed "my.fill"(%[[B:.*]]) : memref<64xf32>
// CHECK-NEXT:    loop.for %[[O:.*]] = %{{.*}} to %{{.*}} step %{{.*}} parallel {
// CHECK-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} vectorized {
func.func @scheduled_consumer() -> tensor<64xf32> {
  %B = te.extern "B" () : () -> tensor<64xf32> {
  ^bb0(%out: memref<64xf32>):
    loop.call_packed "my.fill"(%out) : memref<64xf32>
  }
  %C = te.compute "C" (%i) -> tensor<64xf32> {
    %x = te.read %B[%i] : tensor<64xf32>
    te.yield %x : f32
  }
  te.schedule {
    te.split "C" "i" factor 16 -> "i.outer", "i.inner"
    te.parallel "C" "i.outer"
    te.vectorize "C" "i.inner"
  }
  func.return %C : tensor<64xf32>
}

// RUN: ember-opt %s -p 'te-compute-inline{stage=B}' | filecheck %s
// RUN: ember-opt %s -p 'te-compute-inline{stage=B},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP

// te-compute-inline substitutes a producer's expression, its indices replaced by
// the reader's, into every te.read of it: no buffer and no loop nest are left
// for the producer.

// CHECK-LABEL: func.func @chain(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.compute_inline "B"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @chain(
// LOOP-SAME:      %[[A:[^:]*]]: memref<64xf32> {{.*}}, %[[C:[^:]*]]: memref<64xf32>
// LOOP-NOT:     loop.alloc
// LOOP:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      %[[VA:.*]] = memref.load %[[A]][%[[I]]] : memref<64xf32>
// LOOP-NEXT:      %[[SQ:.*]] = arith.mulf %[[VA]], %[[VA]] : f32
// LOOP-NEXT:      %[[N:.*]] = arith.negf %[[SQ]] : f32
// LOOP-NEXT:      memref.store %[[N]], %[[C]][%[[I]]] : memref<64xf32>
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return
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
  func.return %C : tensor<64xf32>
}

// B(i, j) = 2 * A[j, i] read as B[5 - k, i] inside a reduction: A[i, 5 - k].
// LOOP-LABEL: func.func @transposes(
// LOOP-SAME:      %[[A:[^:]*]]: memref<4x6xf32> {{.*}}, %[[C:[^:]*]]: memref<4xf32>
// LOOP-DAG:     %[[C5:.*]] = arith.constant 5 : index
// LOOP-DAG:     %[[CM1:.*]] = arith.constant -1 : index
// LOOP-NOT:     loop.alloc
// LOOP:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      memref.store %{{.*}}, %[[C]][%[[I]]] : memref<4xf32>
// LOOP-NEXT:      loop.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        %[[NK:.*]] = arith.muli %[[K]], %[[CM1]] : index
// LOOP-NEXT:        %[[R:.*]] = arith.addi %[[NK]], %[[C5]] : index
// LOOP-NEXT:        %[[VA:.*]] = memref.load %[[A]][%[[I]], %[[R]]] : memref<4x6xf32>
// LOOP-NEXT:        %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// LOOP-NEXT:        %[[M:.*]] = arith.mulf %[[VA]], %[[TWO]] : f32
// LOOP-NEXT:        %[[ACC:.*]] = memref.load %[[C]][%[[I]]] : memref<4xf32>
// LOOP-NEXT:        %[[S:.*]] = arith.addf %[[ACC]], %[[M]] : f32
// LOOP-NEXT:        memref.store %[[S]], %[[C]][%[[I]]] : memref<4xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return
func.func @transposes(%A: tensor<4x6xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i, %j) -> tensor<6x4xf32> {
    %a = te.read %A[%j, %i] : tensor<4x6xf32>
    %c = arith.constant 2.0 : f32
    %m = arith.mulf %a, %c : f32
    te.yield %m : f32
  }
  %C = te.compute "C" (%i) reduce sum (%k : 6) -> tensor<4xf32> {
    %c5 = arith.constant 5 : index
    %r = arith.subi %c5, %k : index
    %b = te.read %B[%r, %i] : tensor<6x4xf32>
    te.yield %b : f32
  }
  func.return %C : tensor<4xf32>
}

// Two readers each get their own copy of the expression.
// LOOP-LABEL: func.func @two_readers(
// LOOP-NOT:     loop.alloc
// LOOP:         loop.for
// LOOP:           math.exp
// LOOP:           arith.negf
// LOOP:         loop.for
// LOOP:           math.exp
// LOOP:           math.sqrt
// LOOP:         func.return
func.func @two_readers(%A: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    %e = math.exp %a : f32
    te.yield %e : f32
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    %n = arith.negf %b : f32
    te.yield %n : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    %r = math.sqrt %b : f32
    te.yield %r : f32
  }
  func.return %C, %D : tensor<8xf32>, tensor<8xf32>
}

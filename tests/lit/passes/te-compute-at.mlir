// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=16},te-compute-at{stage=B target=C axis="i.outer"},te-compute-at{stage=S target=D axis=i}' | filecheck %s
// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=16},te-compute-at{stage=B target=C axis="i.outer"},te-compute-at{stage=S target=D axis=i},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP

// te-compute-at computes a producer inside a loop of its consumer: a local buffer
// of the tile one iteration of that loop reads, filled just before the consumer's
// inner loops, which read it at the tile's offset.

// CHECK-LABEL: func.func @chain(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "C" "i" factor 16 -> "i.outer", "i.inner"
// CHECK-NEXT:      te.compute_at "B" at "C" "i.outer"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @chain(
// LOOP-SAME:      %[[A:[^:]*]]: memref<64xf32> {{.*}}, %[[C:[^:]*]]: memref<64xf32>
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP-NOT:     loop.alloc
// LOOP:         loop.for %[[O:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:      %[[B:.*]] = loop.alloc local : memref<16xf32>
// LOOP-NEXT:      loop.for %[[BI:.*]] = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP-NEXT:        %[[M:.*]] = arith.muli %[[O]], %[[C16]] : index
// LOOP-NEXT:        %[[X:.*]] = arith.addi %[[M]], %[[BI]] : index
// LOOP-NEXT:        %[[VA:.*]] = memref.load %[[A]][%[[X]]] : memref<64xf32>
// LOOP-NEXT:        %[[SQ:.*]] = arith.mulf %[[VA]], %[[VA]] : f32
// LOOP-NEXT:        memref.store %[[SQ]], %[[B]][%[[BI]]] : memref<16xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP:             %[[VB:.*]] = memref.load %[[B]][%[[I]]] : memref<16xf32>
// LOOP-NEXT:        %[[N:.*]] = arith.negf %[[VB]] : f32
// LOOP:             memref.store %[[N]], %[[C]][%{{.*}}] : memref<64xf32>
// LOOP-NEXT:      }
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

// A stencil reads B[i], B[i + 1], B[i + 2]: a tile of 16 outputs needs 18 of B.
// LOOP-LABEL: func.func @stencil(
// LOOP-DAG:     %[[C18:.*]] = arith.constant 18 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP-DAG:     %[[C1:.*]] = arith.constant 1 : index
// LOOP-DAG:     %[[C2:.*]] = arith.constant 2 : index
// LOOP:         loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      %[[B:.*]] = loop.alloc local : memref<18xf32>
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C18]] step %{{.*}} {
// LOOP:             memref.store %{{.*}}, %[[B]][%{{.*}}] : memref<18xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP:             memref.load %[[B]][%[[I]]] : memref<18xf32>
// LOOP-NEXT:        %[[I1:.*]] = arith.addi %[[I]], %[[C1]] : index
// LOOP-NEXT:        memref.load %[[B]][%[[I1]]] : memref<18xf32>
// LOOP-NEXT:        %[[I2:.*]] = arith.addi %[[I]], %[[C2]] : index
// LOOP-NEXT:        memref.load %[[B]][%[[I2]]] : memref<18xf32>
func.func @stencil(%A: tensor<66xf32>) -> tensor<64xf32> {
  %B = te.compute "B" (%i) -> tensor<66xf32> {
    %a = te.read %A[%i] : tensor<66xf32>
    %m = arith.mulf %a, %a : f32
    te.yield %m : f32
  }
  %C = te.compute "C" (%i) -> tensor<64xf32> {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %i1 = arith.addi %i, %c1 : index
    %i2 = arith.addi %i, %c2 : index
    %x = te.read %B[%i] : tensor<66xf32>
    %y = te.read %B[%i1] : tensor<66xf32>
    %z = te.read %B[%i2] : tensor<66xf32>
    %s = arith.addf %x, %y : f32
    %t = arith.addf %s, %z : f32
    te.yield %t : f32
  }
  func.return %C : tensor<64xf32>
}

// A reduction computed at its consumer's row loop: one element per row, its
// identity stored inside the row loop.
// CHECK-LABEL: func.func @rowsum_then_scale(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.compute_at "S" at "D" "i"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @rowsum_then_scale(
// LOOP-SAME:      %[[A:[^:]*]]: memref<8x16xf32> {{.*}}, %[[D:[^:]*]]: memref<8x4xf32>
// LOOP-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LOOP-DAG:     %[[C0:.*]] = arith.constant 0 : index
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP:         loop.for %[[I:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:      %[[S:.*]] = loop.alloc local : memref<1xf32>
// LOOP-NEXT:      loop.for %[[SI:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        memref.store %[[ZERO]], %[[S]][%[[SI]]] : memref<1xf32>
// LOOP-NEXT:        loop.for %[[K:.*]] = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP:               arith.addf
// LOOP:             }
// LOOP-NEXT:      }
// LOOP-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        %[[VS:.*]] = memref.load %[[S]][%[[C0]]] : memref<1xf32>
// LOOP-NEXT:        %[[VA:.*]] = memref.load %[[A]][%[[I]], %[[J]]] : memref<8x16xf32>
// LOOP-NEXT:        %[[P:.*]] = arith.mulf %[[VS]], %[[VA]] : f32
// LOOP-NEXT:        memref.store %[[P]], %[[D]][%[[I]], %[[J]]] : memref<8x4xf32>
func.func @rowsum_then_scale(%A: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %S = te.compute "S" (%i) reduce sum (%k : 16) -> tensor<8xf32> {
    %a = te.read %A[%i, %k] : tensor<8x16xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%i, %j) -> tensor<8x4xf32> {
    %s = te.read %S[%i] : tensor<8xf32>
    %a = te.read %A[%i, %j] : tensor<8x16xf32>
    %m = arith.mulf %s, %a : f32
    te.yield %m : f32
  }
  func.return %D : tensor<8x4xf32>
}

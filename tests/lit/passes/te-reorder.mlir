// RUN: ember-opt %s -p 'te-reorder{stage=E axes=j,i},te-reorder{stage=C axes=k,j},te-reorder{stage=D axes=k,i,j}' | filecheck %s
// RUN: ember-opt %s -p 'te-reorder{stage=E axes=j,i},te-reorder{stage=C axes=k,j},te-reorder{stage=D axes=k,i,j},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP

// te-reorder puts the named loops, in the given order, into the positions they
// occupy. A reduction's identity is stored just outside its first reduction loop,
// in a nest of its own over the data-parallel loops that come after it.

// CHECK-LABEL: func.func @transpose_order(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.reorder "E" ["j", "i"]
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @transpose_order(
// LOOP-SAME:      %[[A:[^:]*]]: memref<4x6xf32> {{.*}}, %[[E:[^:]*]]: memref<4x6xf32>
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C6:.*]] = arith.constant 6 : index
// LOOP:         loop.for %[[J:.*]] = %{{.*}} to %[[C6]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:        %[[V:.*]] = memref.load %[[A]][%[[I]], %[[J]]] : memref<4x6xf32>
// LOOP-NEXT:        memref.store %[[V]], %[[E]][%[[I]], %[[J]]] : memref<4x6xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }
func.func @transpose_order(%A: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %E = te.compute "E" (%i, %j) -> tensor<4x6xf32> {
    %a = te.read %A[%i, %j] : tensor<4x6xf32>
    te.yield %a : f32
  }
  func.return %E : tensor<4x6xf32>
}

// (i, j, k) becomes (i, k, j): the init runs over j inside i, before the k loop.
// CHECK-LABEL: func.func @matmul_ikj(
// CHECK:         te.reorder "C" ["k", "j"]

// LOOP-LABEL: func.func @matmul_ikj(
// LOOP-SAME:      %[[A:[^:]*]]: memref<8x16xf32> {{.*}}, %[[B:[^:]*]]: memref<16x12xf32> {{.*}}, %[[C:[^:]*]]: memref<8x12xf32>
// LOOP-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C12:.*]] = arith.constant 12 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP:         loop.for %[[I:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[J0:.*]] = %{{.*}} to %[[C12]] step %{{.*}} {
// LOOP-NEXT:        memref.store %[[ZERO]], %[[C]][%[[I]], %[[J0]]] : memref<8x12xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:      loop.for %[[K:.*]] = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP-NEXT:        loop.for %[[J:.*]] = %{{.*}} to %[[C12]] step %{{.*}} {
// LOOP-NEXT:          %[[X:.*]] = memref.load %[[A]][%[[I]], %[[K]]] : memref<8x16xf32>
// LOOP-NEXT:          %[[Y:.*]] = memref.load %[[B]][%[[K]], %[[J]]] : memref<16x12xf32>
// LOOP-NEXT:          %[[M:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// LOOP-NEXT:          %[[ACC:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<8x12xf32>
// LOOP-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[M]] : f32
// LOOP-NEXT:          memref.store %[[S]], %[[C]][%[[I]], %[[J]]] : memref<8x12xf32>
// LOOP-NEXT:        }
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return
func.func @matmul_ikj(%A: tensor<8x16xf32>, %B: tensor<16x12xf32>) -> tensor<8x12xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 16) -> tensor<8x12xf32> {
    %a = te.read %A[%i, %k] : tensor<8x16xf32>
    %b = te.read %B[%k, %j] : tensor<16x12xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %C : tensor<8x12xf32>
}

// The reduction loop outermost: the whole output is initialized first.
// CHECK-LABEL: func.func @matmul_kij(
// CHECK:         te.reorder "D" ["k", "i", "j"]

// LOOP-LABEL: func.func @matmul_kij(
// LOOP-SAME:      %{{[^:]*}}: memref<8x16xf32> {{.*}}, %{{[^:]*}}: memref<16x12xf32> {{.*}}, %[[D:[^:]*]]: memref<8x12xf32>
// LOOP-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C12:.*]] = arith.constant 12 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP:         loop.for %[[I0:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[J0:.*]] = %{{.*}} to %[[C12]] step %{{.*}} {
// LOOP-NEXT:        memref.store %[[ZERO]], %[[D]][%[[I0]], %[[J0]]] : memref<8x12xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    loop.for %{{.*}} = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:        loop.for %{{.*}} = %{{.*}} to %[[C12]] step %{{.*}} {
// LOOP:               arith.addf
func.func @matmul_kij(%A: tensor<8x16xf32>, %B: tensor<16x12xf32>) -> tensor<8x12xf32> {
  %D = te.compute "D" (%i, %j) reduce sum (%k : 16) -> tensor<8x12xf32> {
    %a = te.read %A[%i, %k] : tensor<8x16xf32>
    %b = te.read %B[%k, %j] : tensor<16x12xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %D : tensor<8x12xf32>
}

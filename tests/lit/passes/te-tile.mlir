// RUN: ember-opt %s -p 'te-tile{stage=C x=i y=j x-factor=8 y-factor=16}' | filecheck %s
// RUN: ember-opt %s -p 'te-tile{stage=C x=i y=j x-factor=8 y-factor=16},convert-te-to-loop' | filecheck %s --check-prefix=LOOP

// te-tile is two splits and a reorder: (i.outer, j.outer, i.inner, j.inner).

// CHECK-LABEL: func.func @matmul(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "C" "i" factor 8 -> "i.outer", "i.inner"
// CHECK-NEXT:      te.split "C" "j" factor 16 -> "j.outer", "j.inner"
// CHECK-NEXT:      te.reorder "C" ["i.outer", "j.outer", "i.inner", "j.inner"]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// The four tile loops, then the reduction loop; each output point's identity is
// stored inside the tile loops, just outside the reduction loop.
// LOOP-LABEL: func.func @matmul(
// LOOP-SAME:      %[[A:[^:]*]]: memref<64x32xf32> {{.*}}, %[[B:[^:]*]]: memref<32x48xf32> {{.*}}, %[[C:[^:]*]]: memref<64x48xf32>
// LOOP-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LOOP-DAG:     %[[C3:.*]] = arith.constant 3 : index
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOOP:         loop.for %[[IO:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[JO:.*]] = %{{.*}} to %[[C3]] step %{{.*}} {
// LOOP-NEXT:        loop.for %[[II:.*]] = %{{.*}} to %[[C8]] step %{{.*}} {
// LOOP-NEXT:          loop.for %[[JI:.*]] = %{{.*}} to %[[C16]] step %{{.*}} {
// LOOP-NEXT:            %[[R0:.*]] = arith.muli %[[IO]], %[[C8]] : index
// LOOP-NEXT:            %[[ROW:.*]] = arith.addi %[[R0]], %[[II]] : index
// LOOP-NEXT:            %[[C0L:.*]] = arith.muli %[[JO]], %[[C16]] : index
// LOOP-NEXT:            %[[COL:.*]] = arith.addi %[[C0L]], %[[JI]] : index
// LOOP-NEXT:            memref.store %[[ZERO]], %[[C]][%[[ROW]], %[[COL]]] : memref<64x48xf32>
// LOOP-NEXT:            loop.for %[[K:.*]] = %{{.*}} to %[[C32]] step %{{.*}} {
// LOOP:                   memref.load %[[A]][%{{.*}}, %[[K]]] : memref<64x32xf32>
// LOOP:                   memref.load %[[B]][%[[K]], %{{.*}}] : memref<32x48xf32>
// LOOP:                   arith.addf
// LOOP:                   memref.store %{{.*}}, %[[C]][%{{.*}}, %{{.*}}] : memref<64x48xf32>
// LOOP-NEXT:            }
// LOOP-NEXT:          }
// LOOP-NEXT:        }
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return
func.func @matmul(%A: tensor<64x32xf32>, %B: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 32) -> tensor<64x48xf32> {
    %a = te.read %A[%i, %k] : tensor<64x32xf32>
    %b = te.read %B[%k, %j] : tensor<32x48xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %C : tensor<64x48xf32>
}

// Tiles that do not divide (10 x 20 by 8 x 16) are guarded on both axes.
// LOOP-LABEL: func.func @ragged(
// LOOP-DAG:     %[[C2:.*]] = arith.constant 2 : index
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C16:.*]] = arith.constant 16 : index
// LOOP-DAG:     %[[C10:.*]] = arith.constant 10 : index
// LOOP-DAG:     %[[C20:.*]] = arith.constant 20 : index
// LOOP:         loop.for %{{.*}} = %{{.*}} to %[[C2]] step
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C2]] step
// LOOP-NEXT:        loop.for %{{.*}} = %{{.*}} to %[[C8]] step
// LOOP-NEXT:          loop.for %{{.*}} = %{{.*}} to %[[C16]] step
// LOOP:                 %[[IN_I:.*]] = arith.cmpi slt, %{{.*}}, %[[C10]] : index
// LOOP:                 %[[IN_J:.*]] = arith.cmpi slt, %{{.*}}, %[[C20]] : index
// LOOP-NEXT:            %[[IN:.*]] = arith.andi %[[IN_I]], %[[IN_J]] : i1
// LOOP-NEXT:            scf.if %[[IN]] {
// LOOP:                   arith.negf
func.func @ragged(%A: tensor<10x20xf32>) -> tensor<10x20xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<10x20xf32> {
    %a = te.read %A[%i, %j] : tensor<10x20xf32>
    %n = arith.negf %a : f32
    te.yield %n : f32
  }
  func.return %C : tensor<10x20xf32>
}

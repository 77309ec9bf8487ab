// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=32}' | filecheck %s
// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=32},convert-te-to-loop' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-split{stage=C axis=i nparts=3}' | filecheck %s --check-prefix=NPARTS
// RUN: ember-opt %s -p 'te-split{stage=C axis=i nparts=3},convert-te-to-loop' | filecheck %s --check-prefix=NPARTS-LOOP

// te-split appends a te.split to the schedule of every function with a stage C
// (making the te.schedule, before func.return); convert-te-to-loop then emits the
// outer and inner loops with constant extents, and guards the body with scf.if
// where the split does not divide the extent.

// CHECK-LABEL: func.func @divides(
// CHECK:         te.compute "C"
// CHECK:         te.schedule {
// CHECK-NEXT:      te.split "C" "i" factor 32 -> "i.outer", "i.inner"
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// NPARTS-LABEL: func.func @divides(
// NPARTS:         te.schedule {
// NPARTS-NEXT:      te.split "C" "i" nparts 3 -> "i.outer", "i.inner"
// NPARTS-NEXT:    }

// 128 = 4 * 32: no guard.
// LOOP-LABEL: func.func @divides(
// LOOP-SAME:      %[[A:[^:]*]]: memref<128xf32> {{.*}}, %[[C:[^:]*]]: memref<128xf32>
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOOP:         loop.for %[[O:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C32]] step %{{.*}} {
// LOOP-NOT:         scf.if
// LOOP:             %[[M:.*]] = arith.muli %[[O]], %[[C32]] : index
// LOOP-NEXT:        %[[X:.*]] = arith.addi %[[M]], %[[I]] : index
// LOOP:             %[[V:.*]] = memref.load %[[A]][%{{.*}}] : memref<128xf32>
// LOOP:             memref.store %[[V]], %[[C]][%{{.*}}] : memref<128xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return

// nparts 3 of 128: 3 outer iterations of ceil(128 / 3) = 43, guarded.
// NPARTS-LOOP-LABEL: func.func @divides(
// NPARTS-LOOP-DAG:     %[[C3:.*]] = arith.constant 3 : index
// NPARTS-LOOP-DAG:     %[[C43:.*]] = arith.constant 43 : index
// NPARTS-LOOP-DAG:     %[[C128:.*]] = arith.constant 128 : index
// NPARTS-LOOP:         loop.for %[[O:.*]] = %{{.*}} to %[[C3]] step %{{.*}} {
// NPARTS-LOOP-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C43]] step %{{.*}} {
// NPARTS-LOOP-NEXT:        %[[M:.*]] = arith.muli %[[O]], %[[C43]] : index
// NPARTS-LOOP-NEXT:        %[[X:.*]] = arith.addi %[[M]], %[[I]] : index
// NPARTS-LOOP-NEXT:        %[[IN:.*]] = arith.cmpi slt, %[[X]], %[[C128]] : index
// NPARTS-LOOP-NEXT:        scf.if %[[IN]] {
// NPARTS-LOOP:               memref.load
// NPARTS-LOOP:               memref.store
func.func @divides(%A: tensor<128xf32>) -> tensor<128xf32> {
  %C = te.compute "C" (%i) -> tensor<128xf32> {
    %a = te.read %A[%i] : tensor<128xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<128xf32>
}

// 100 = 4 * 32 - 28: the last outer iteration runs past the end, so the body is
// guarded by i.outer * 32 + i.inner < 100.
// LOOP-LABEL: func.func @remainder(
// LOOP-SAME:      %[[A:[^:]*]]: memref<100xf32> {{.*}}, %[[C:[^:]*]]: memref<100xf32>
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOOP-DAG:     %[[C100:.*]] = arith.constant 100 : index
// LOOP:         loop.for %[[O:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[I:.*]] = %{{.*}} to %[[C32]] step %{{.*}} {
// LOOP-NEXT:        %[[M:.*]] = arith.muli %[[O]], %[[C32]] : index
// LOOP-NEXT:        %[[X:.*]] = arith.addi %[[M]], %[[I]] : index
// LOOP-NEXT:        %[[IN:.*]] = arith.cmpi slt, %[[X]], %[[C100]] : index
// LOOP-NEXT:        scf.if %[[IN]] {
// LOOP:               %[[V:.*]] = memref.load %[[A]][%{{.*}}] : memref<100xf32>
// LOOP:               memref.store %[[V]], %[[C]][%{{.*}}] : memref<100xf32>
// LOOP-NEXT:        }
// LOOP-NEXT:      }
// LOOP-NEXT:    }

// NPARTS-LOOP-LABEL: func.func @remainder(
// NPARTS-LOOP-DAG:     %[[C3:.*]] = arith.constant 3 : index
// NPARTS-LOOP-DAG:     %[[C34:.*]] = arith.constant 34 : index
// NPARTS-LOOP:         loop.for %{{.*}} = %{{.*}} to %[[C3]] step
// NPARTS-LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C34]] step
// NPARTS-LOOP:             scf.if
func.func @remainder(%A: tensor<100xf32>) -> tensor<100xf32> {
  %C = te.compute "C" (%i) -> tensor<100xf32> {
    %a = te.read %A[%i] : tensor<100xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<100xf32>
}

// A factor larger than the extent leaves one outer iteration over the whole axis.
// LOOP-LABEL: func.func @short(
// LOOP-DAG:     %[[C1:.*]] = arith.constant 1 : index
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP:         loop.for %{{.*}} = %{{.*}} to %[[C1]] step %[[C1]] {
// LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C8]] step %[[C1]] {
// LOOP-NOT:         scf.if
// LOOP:         func.return

// NPARTS-LOOP-LABEL: func.func @short(
// NPARTS-LOOP-DAG:     %[[C3:.*]] = arith.constant 3 : index
// NPARTS-LOOP:         loop.for %{{.*}} = %{{.*}} to %[[C3]] step
// NPARTS-LOOP-NEXT:      loop.for %{{.*}} = %{{.*}} to %[[C3]] step
// NPARTS-LOOP:             scf.if
func.func @short(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<8xf32>
}

// A reduction axis splits too: the identity is stored once per output point,
// outside both reduction loops, and only the combining body is guarded.
// CHECK-LABEL: func.func @reduction(
// CHECK:         te.split "C" "i" factor 32 -> "i.outer", "i.inner"

// LOOP-LABEL: func.func @reduction(
// LOOP-SAME:      %[[A:[^:]*]]: memref<4x100xf32> {{.*}}, %[[C:[^:]*]]: memref<4xf32>
// LOOP-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOOP-DAG:     %[[C100:.*]] = arith.constant 100 : index
// LOOP:         loop.for %[[J:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:      memref.store %[[ZERO]], %[[C]][%[[J]]] : memref<4xf32>
// LOOP-NEXT:      loop.for %[[O:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:        loop.for %[[I:.*]] = %{{.*}} to %[[C32]] step %{{.*}} {
// LOOP-NEXT:          %[[M:.*]] = arith.muli %[[O]], %[[C32]] : index
// LOOP-NEXT:          %[[X:.*]] = arith.addi %[[M]], %[[I]] : index
// LOOP-NEXT:          %[[IN:.*]] = arith.cmpi slt, %[[X]], %[[C100]] : index
// LOOP-NEXT:          scf.if %[[IN]] {
// LOOP:                 %[[V:.*]] = memref.load %[[A]][%[[J]], %{{.*}}] : memref<4x100xf32>
// LOOP-NEXT:            %[[ACC:.*]] = memref.load %[[C]][%[[J]]] : memref<4xf32>
// LOOP-NEXT:            %[[S:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// LOOP-NEXT:            memref.store %[[S]], %[[C]][%[[J]]] : memref<4xf32>
// LOOP-NEXT:          }
func.func @reduction(%A: tensor<4x100xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%j) reduce sum (%i : 100) -> tensor<4xf32> {
    %a = te.read %A[%j, %i] : tensor<4x100xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4xf32>
}

// A function without a stage C is left alone.
// CHECK-LABEL: func.func @other(
// CHECK-NOT:     te.schedule
// CHECK:         func.return
func.func @other(%A: tensor<8xf32>) -> tensor<8xf32> {
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  func.return %D : tensor<8xf32>
}

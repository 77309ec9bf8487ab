// RUN: ember-opt %s -p 'te-cache-write{stage=C}' | filecheck %s
// RUN: ember-opt %s -p 'te-cache-write{stage=C},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-cache-write{stage=C},te-split{stage=C axis=j factor=3},te-compute-at{stage="C.local" target=C axis="j.outer"},convert-te-to-loop,cse' | filecheck %s --check-prefix=AT

// te-cache-write moves a stage's computation into a new stage "<stage>.<scope>"
// (its axes suffixed ".c") writing a buffer of that scope; the stage itself
// becomes a copy-out of that buffer.

// CHECK-LABEL: func.func @mm(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.cache_write "C" "local" -> "C.local"
// CHECK-NEXT:    }

// The reduction accumulates into the local buffer, then a copy loop writes C.
// LOOP-LABEL: func.func @mm(
// LOOP-SAME:      %[[A:[^:]*]]: memref<8x4xf32> {{.*}}, %{{[^:]*}}: memref<4x6xf32> {{.*}}, %[[C:[^:]*]]: memref<8x6xf32>
// LOOP-NEXT:    %[[CL:.*]] = loop.alloc local : memref<8x6xf32>
// LOOP-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LOOP:         loop.for %[[IC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      loop.for %[[JC:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        memref.store %[[ZERO]], %[[CL]][%[[IC]], %[[JC]]] : memref<8x6xf32>
// LOOP-NEXT:        loop.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP:               %[[ACC:.*]] = memref.load %[[CL]][%[[IC]], %[[JC]]] : memref<8x6xf32>
// LOOP-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// LOOP-NEXT:          memref.store %[[S]], %[[CL]][%[[IC]], %[[JC]]] : memref<8x6xf32>
// LOOP-NEXT:        }
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        %[[V:.*]] = memref.load %[[CL]][%[[I]], %[[J]]] : memref<8x6xf32>
// LOOP-NEXT:        memref.store %[[V]], %[[C]][%[[I]], %[[J]]] : memref<8x6xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return

// The usual use: the accumulator is a tile computed inside the copy-out's loops.
// AT-LABEL: func.func @mm(
// AT-SAME:      %{{[^:]*}}: memref<8x4xf32> {{.*}}, %{{[^:]*}}: memref<4x6xf32> {{.*}}, %[[C:[^:]*]]: memref<8x6xf32>
// AT-DAG:     %[[C0:.*]] = arith.constant 0 : index
// AT-DAG:     %[[C2:.*]] = arith.constant 2 : index
// AT-DAG:     %[[C3:.*]] = arith.constant 3 : index
// AT-NOT:     loop.alloc
// AT:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// AT-NEXT:      loop.for %[[JO:.*]] = %{{.*}} to %[[C2]] step %{{.*}} {
// AT-NEXT:        %[[CL:.*]] = loop.alloc local : memref<1x3xf32>
// AT-NEXT:        loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// AT-NEXT:          loop.for %{{.*}} = %{{.*}} to %[[C3]] step %{{.*}} {
// AT-NEXT:            memref.store %{{.*}}, %[[CL]]
// AT-NEXT:            loop.for
// AT:                   arith.addf
// AT:           loop.for %[[JI:.*]] = %{{.*}} to %[[C3]] step %{{.*}} {
// AT-NEXT:        %[[M:.*]] = arith.muli %[[JO]], %[[C3]] : index
// AT-NEXT:        %[[V:.*]] = memref.load %[[CL]][%[[C0]], %[[JI]]] : memref<1x3xf32>
// AT-NEXT:        %[[J:.*]] = arith.addi %[[M]], %[[JI]] : index
// AT-NEXT:        memref.store %[[V]], %[[C]][%[[I]], %[[J]]] : memref<8x6xf32>
func.func @mm(%A: tensor<8x4xf32>, %B: tensor<4x6xf32>) -> tensor<8x6xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 4) -> tensor<8x6xf32> {
    %a = te.read %A[%i, %k] : tensor<8x4xf32>
    %b = te.read %B[%k, %j] : tensor<4x6xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  func.return %C : tensor<8x6xf32>
}

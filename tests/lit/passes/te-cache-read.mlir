// RUN: ember-opt %s -p 'te-cache-read{stage=A readers=C}' | filecheck %s
// RUN: ember-opt %s -p 'te-cache-read{stage=A readers=C},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-cache-read{stage=A readers=C},te-compute-at{stage="A.local" target=C axis=i},convert-te-to-loop,cse' | filecheck %s --check-prefix=AT

// te-cache-read adds a stage "<tensor>.<scope>" copying the tensor into a buffer
// of that scope; the listed readers read the copy, other readers the original.

// CHECK-LABEL: func.func @mm(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.cache_read "A" "local" readers ["C"] -> "A.local"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @mm(
// LOOP-SAME:      %[[A:[^:]*]]: memref<8x4xf32> {{.*}}, %[[B:[^:]*]]: memref<4x6xf32> {{.*}}, %[[C:[^:]*]]: memref<8x6xf32> {{.*}}, %[[D:[^:]*]]: memref<8x4xf32>
// LOOP-NEXT:    %[[AL:.*]] = loop.alloc local : memref<8x4xf32>
// LOOP:         loop.for %[[X0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      loop.for %[[X1:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        %[[V:.*]] = memref.load %[[A]][%[[X0]], %[[X1]]] : memref<8x4xf32>
// LOOP-NEXT:        memref.store %[[V]], %[[AL]][%[[X0]], %[[X1]]] : memref<8x4xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        memref.store
// LOOP-NEXT:        loop.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:          memref.load %[[AL]][%[[I]], %[[K]]] : memref<8x4xf32>
// LOOP-NEXT:          memref.load %[[B]][%[[K]], %[[J]]] : memref<4x6xf32>
// LOOP:         loop.for %[[DI:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:      loop.for %[[DJ:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP-NEXT:        %[[W:.*]] = memref.load %[[A]][%[[DI]], %[[DJ]]] : memref<8x4xf32>
// LOOP-NEXT:        arith.negf %[[W]] : f32

// Computed at the consumer's row loop, the copy holds one row of A.
// AT-LABEL: func.func @mm(
// AT-SAME:      %[[A:[^:]*]]: memref<8x4xf32> {{.*}}, %{{[^:]*}}: memref<4x6xf32> {{.*}}, %[[C:[^:]*]]: memref<8x6xf32>
// AT-DAG:     %[[C0:.*]] = arith.constant 0 : index
// AT-DAG:     %[[C1:.*]] = arith.constant 1 : index
// AT-DAG:     %[[C4:.*]] = arith.constant 4 : index
// AT-NOT:     loop.alloc
// AT:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// AT-NEXT:      %[[AL:.*]] = loop.alloc local : memref<1x4xf32>
// AT-NEXT:      loop.for %[[X0:.*]] = %{{.*}} to %[[C1]] step %{{.*}} {
// AT-NEXT:        loop.for %[[X1:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// AT-NEXT:          %[[ROW:.*]] = arith.addi %[[I]], %[[X0]] : index
// AT-NEXT:          %[[V:.*]] = memref.load %[[A]][%[[ROW]], %[[X1]]] : memref<8x4xf32>
// AT-NEXT:          memref.store %[[V]], %[[AL]][%[[X0]], %[[X1]]] : memref<1x4xf32>
// AT:           loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// AT-NEXT:        memref.store
// AT-NEXT:        loop.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// AT-NEXT:          memref.load %[[AL]][%[[C0]], %[[K]]] : memref<1x4xf32>
func.func @mm(%A: tensor<8x4xf32>, %B: tensor<4x6xf32>) -> (tensor<8x6xf32>, tensor<8x4xf32>) {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 4) -> tensor<8x6xf32> {
    %a = te.read %A[%i, %k] : tensor<8x4xf32>
    %b = te.read %B[%k, %j] : tensor<4x6xf32>
    %m = arith.mulf %a, %b : f32
    te.yield %m : f32
  }
  %D = te.compute "D" (%i, %j) -> tensor<8x4xf32> {
    %a = te.read %A[%i, %j] : tensor<8x4xf32>
    %n = arith.negf %a : f32
    te.yield %n : f32
  }
  func.return %C, %D : tensor<8x6xf32>, tensor<8x4xf32>
}

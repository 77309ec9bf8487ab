// RUN: ember-opt %s -p 'te-fuse{stage=C axes=i,j}' | filecheck %s
// RUN: ember-opt %s -p 'te-fuse{stage=C axes=i,j},convert-te-to-loop,cse' | filecheck %s --check-prefix=LOOP
// RUN: ember-opt %s -p 'te-tile{stage=C x=i y=j x-factor=2 y-factor=4},te-fuse{stage=C axes="i.outer,j.outer"}' | filecheck %s --check-prefix=TILED
// RUN: ember-opt %s -p 'te-tile{stage=C x=i y=j x-factor=2 y-factor=4},te-fuse{stage=C axes="i.outer,j.outer"},convert-te-to-loop,cse' | filecheck %s --check-prefix=TILED-LOOP

// te-fuse makes one loop over the product of the fused extents; the original
// indices come back as floordiv / rem of the fused variable.

// CHECK-LABEL: func.func @three(
// CHECK:         te.schedule {
// CHECK-NEXT:      te.fuse "C" ["i", "j"] -> "i.j.fused"
// CHECK-NEXT:    }

// LOOP-LABEL: func.func @three(
// LOOP-SAME:      %[[A:[^:]*]]: memref<2x3x4xf32> {{.*}}, %[[C:[^:]*]]: memref<2x3x4xf32>
// LOOP-DAG:     %[[C6:.*]] = arith.constant 6 : index
// LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOOP-DAG:     %[[C3:.*]] = arith.constant 3 : index
// LOOP:         loop.for %[[F:.*]] = %{{.*}} to %[[C6]] step %{{.*}} {
// LOOP-NEXT:      loop.for %[[K:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// LOOP-NEXT:        %[[I:.*]] = arith.floordivsi %[[F]], %[[C3]] : index
// LOOP-NEXT:        %[[J:.*]] = arith.remsi %[[F]], %[[C3]] : index
// LOOP-NEXT:        %[[V:.*]] = memref.load %[[A]][%[[I]], %[[J]], %[[K]]] : memref<2x3x4xf32>
// LOOP-NEXT:        memref.store %[[V]], %[[C]][%[[I]], %[[J]], %[[K]]] : memref<2x3x4xf32>
// LOOP-NEXT:      }
// LOOP-NEXT:    }
// LOOP-NEXT:    func.return
func.func @three(%A: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %C = te.compute "C" (%i, %j, %k) -> tensor<2x3x4xf32> {
    %a = te.read %A[%i, %j, %k] : tensor<2x3x4xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<2x3x4xf32>
}

// A reduction keeps its init inside the fused loop, outside the reduction loop.
// LOOP-LABEL: func.func @rowsum(
// LOOP-SAME:      %[[A:[^:]*]]: memref<6x8x5xf32> {{.*}}, %[[C:[^:]*]]: memref<6x8xf32>
// LOOP-DAG:     %[[C48:.*]] = arith.constant 48 : index
// LOOP-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOOP-DAG:     %[[C5:.*]] = arith.constant 5 : index
// LOOP-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LOOP:         loop.for %[[F:.*]] = %{{.*}} to %[[C48]] step %{{.*}} {
// LOOP-NEXT:      %[[I:.*]] = arith.floordivsi %[[F]], %[[C8]] : index
// LOOP-NEXT:      %[[J:.*]] = arith.remsi %[[F]], %[[C8]] : index
// LOOP-NEXT:      memref.store %[[ZERO]], %[[C]][%[[I]], %[[J]]] : memref<6x8xf32>
// LOOP-NEXT:      loop.for %[[K:.*]] = %{{.*}} to %[[C5]] step %{{.*}} {
// LOOP-NEXT:        %[[V:.*]] = memref.load %[[A]][%[[I]], %[[J]], %[[K]]] : memref<6x8x5xf32>
// LOOP-NEXT:        %[[ACC:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<6x8xf32>
// LOOP-NEXT:        %[[S:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// LOOP-NEXT:        memref.store %[[S]], %[[C]][%[[I]], %[[J]]] : memref<6x8xf32>

// Fusing the outer loops of a tile, the usual way to make one parallel loop:
// 3 x 2 tiles of 2 x 4.
// TILED-LABEL: func.func @rowsum(
// TILED:         te.schedule {
// TILED-NEXT:      te.split "C" "i" factor 2 -> "i.outer", "i.inner"
// TILED-NEXT:      te.split "C" "j" factor 4 -> "j.outer", "j.inner"
// TILED-NEXT:      te.reorder "C" ["i.outer", "j.outer", "i.inner", "j.inner"]
// TILED-NEXT:      te.fuse "C" ["i.outer", "j.outer"] -> "i.outer.j.outer.fused"
// TILED-NEXT:    }

// TILED-LOOP-LABEL: func.func @rowsum(
// TILED-LOOP-SAME:      %{{[^:]*}}: memref<6x8x5xf32> {{.*}}, %[[C:[^:]*]]: memref<6x8xf32>
// TILED-LOOP-DAG:     %[[C6:.*]] = arith.constant 6 : index
// TILED-LOOP-DAG:     %[[C2:.*]] = arith.constant 2 : index
// TILED-LOOP-DAG:     %[[C4:.*]] = arith.constant 4 : index
// TILED-LOOP:         loop.for %[[F:.*]] = %{{.*}} to %[[C6]] step %{{.*}} {
// TILED-LOOP-NEXT:      loop.for %[[II:.*]] = %{{.*}} to %[[C2]] step %{{.*}} {
// TILED-LOOP-NEXT:        loop.for %[[JI:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// TILED-LOOP-NEXT:          %[[IO:.*]] = arith.floordivsi %[[F]], %[[C2]] : index
// TILED-LOOP-NEXT:          %[[I0:.*]] = arith.muli %[[IO]], %[[C2]] : index
// TILED-LOOP-NEXT:          %[[I:.*]] = arith.addi %[[I0]], %[[II]] : index
// TILED-LOOP-NEXT:          %[[JO:.*]] = arith.remsi %[[F]], %[[C2]] : index
// TILED-LOOP-NEXT:          %[[J0:.*]] = arith.muli %[[JO]], %[[C4]] : index
// TILED-LOOP-NEXT:          %[[J:.*]] = arith.addi %[[J0]], %[[JI]] : index
// TILED-LOOP-NEXT:          memref.store %{{.*}}, %[[C]][%[[I]], %[[J]]] : memref<6x8xf32>
// TILED-LOOP-NEXT:          loop.for
func.func @rowsum(%A: tensor<6x8x5xf32>) -> tensor<6x8xf32> {
  %C = te.compute "C" (%i, %j) reduce sum (%k : 5) -> tensor<6x8xf32> {
    %a = te.read %A[%i, %j, %k] : tensor<6x8x5xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<6x8xf32>
}

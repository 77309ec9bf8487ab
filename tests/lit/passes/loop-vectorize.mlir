// RUN: ember-opt %s -p loop-vectorize --split-input-file | filecheck %s

// A contiguous index becomes vector.load/store at the first lane's element; a
// uniform load stays scalar and is broadcast where a vector op needs it.

// CHECK-LABEL: func.func @contiguous(
// CHECK-SAME:      %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<4xf32>, %[[C:.*]]: memref<16xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C2:.*]] = arith.constant 2 : index
// CHECK:         %[[VA:.*]] = vector.load %[[A]][%[[C0]]] : memref<16xf32>, vector<16xf32>
// CHECK-NEXT:    %[[SB:.*]] = memref.load %[[B]][%[[C2]]] : memref<4xf32>
// CHECK-NEXT:    %[[VB:.*]] = vector.broadcast %[[SB]] : f32 to vector<16xf32>
// CHECK-NEXT:    %[[S:.*]] = arith.mulf %[[VA]], %[[VB]] : vector<16xf32>
// CHECK-NEXT:    vector.store %[[S]], %[[C]][%[[C0]]] : memref<16xf32>, vector<16xf32>
// CHECK-NEXT:    func.return
// CHECK-NOT:     loop.for
func.func @contiguous(%A: memref<16xf32>, %B: memref<4xf32>, %C: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<16xf32>
    %b = memref.load %B[%c2] : memref<4xf32>
    %s = arith.mulf %a, %b : f32
    memref.store %s, %C[%i] : memref<16xf32>
  }
  func.return
}

// -----

// Booleans too: a contiguous mask is one vector.load of i1 (bytes in memory,
// which convert-memref-to-llvm loads as such), selecting between vectors.

// CHECK-LABEL: func.func @mask(
// CHECK-SAME:      %[[M:.*]]: memref<16xi1>, %[[A:.*]]: memref<16xf32>, %[[C:.*]]: memref<16xf32>)
// CHECK:         %[[VM:.*]] = vector.load %[[M]][%{{.*}}] : memref<16xi1>, vector<16xi1>
// CHECK-NEXT:    %[[VA:.*]] = vector.load %[[A]][%{{.*}}] : memref<16xf32>, vector<16xf32>
// CHECK:         %[[S:.*]] = llvm.select %[[VM]], %[[VA]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK-NEXT:    vector.store %[[S]], %[[C]][%{{.*}}] : memref<16xf32>, vector<16xf32>
// CHECK-NOT:     memref.load
func.func @mask(%M: memref<16xi1>, %A: memref<16xf32>, %C: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant -1.0e9 : f32
  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %m = memref.load %M[%i] : memref<16xi1>
    %a = memref.load %A[%i] : memref<16xf32>
    %s = arith.select %m, %a, %f : f32
    memref.store %s, %C[%i] : memref<16xf32>
  }
  func.return
}

// -----

// Stride 5 is a gather (one load per lane, inserted into a vector); the store at
// 2i + 1 a scatter (one extract and store per lane). Affine indices are folded
// to constants lane by lane.

// CHECK-LABEL: func.func @gather_scatter(
// CHECK-SAME:      %[[A:.*]]: memref<16xi32>, %[[C:.*]]: memref<9xi32>)
// CHECK:         %{{.*}} = arith.constant 5 : index
// CHECK-NEXT:    %[[I0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[L0:.*]] = memref.load %[[A]][%[[I0]]] : memref<16xi32>
// CHECK-NEXT:    %[[I1:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[L1:.*]] = memref.load %[[A]][%[[I1]]] : memref<16xi32>
// CHECK-NEXT:    %[[I2:.*]] = arith.constant 10 : index
// CHECK-NEXT:    %[[L2:.*]] = memref.load %[[A]][%[[I2]]] : memref<16xi32>
// CHECK-NEXT:    %[[I3:.*]] = arith.constant 15 : index
// CHECK-NEXT:    %[[L3:.*]] = memref.load %[[A]][%[[I3]]] : memref<16xi32>
// CHECK-NEXT:    %[[V0:.*]] = vector.broadcast %[[L0]] : i32 to vector<4xi32>
// CHECK-NEXT:    %[[V1:.*]] = vector.insert %[[L1]], %[[V0]] [1] : i32 into vector<4xi32>
// CHECK-NEXT:    %[[V2:.*]] = vector.insert %[[L2]], %[[V1]] [2] : i32 into vector<4xi32>
// CHECK-NEXT:    %[[V:.*]] = vector.insert %[[L3]], %[[V2]] [3] : i32 into vector<4xi32>
// CHECK:         %[[J0:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[E0:.*]] = vector.extract %[[V]][0] : i32 from vector<4xi32>
// CHECK-NEXT:    memref.store %[[E0]], %[[C]][%[[J0]]] : memref<9xi32>
// CHECK:         %[[J3:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[E3:.*]] = vector.extract %[[V]][3] : i32 from vector<4xi32>
// CHECK-NEXT:    memref.store %[[E3]], %[[C]][%[[J3]]] : memref<9xi32>
// CHECK-NEXT:    func.return
func.func @gather_scatter(%A: memref<16xi32>, %C: memref<9xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  loop.for %i = %c0 to %c4 step %c1 vectorized {
    %j = arith.muli %i, %c5 : index
    %a = memref.load %A[%j] : memref<16xi32>
    %m = arith.muli %i, %c2 : index
    %k = arith.addi %m, %c1 : index
    memref.store %a, %C[%k] : memref<9xi32>
  }
  func.return
}

// -----

// A load of the last index with a small constant stride (2 to 4) and a constant
// base is one contiguous load and a shuffle: of s whole vectors where they lie
// inside the row (the odd elements of an 8-element row, which a bfloat16 pack
// of channel pairs reads), else of just the first lane's to the last lane's
// elements (the even ones of a 7-element row). A base not known at compile
// time stays a gather: no load is known to stay inside the row.

// CHECK-LABEL: func.func @strided(
// CHECK-SAME:      %[[A:.*]]: memref<3x8xf32>, %[[B:.*]]: memref<7xi32>, %[[G:.*]]: memref<16xi32>,
// CHECK:         %[[W:.*]] = vector.load %[[A]][%{{.*}}, %[[S:.*]]] : memref<3x8xf32>, vector<8xf32>
// CHECK-NEXT:    %[[ODD:.*]] = vector.shuffle %[[W]], %[[W]] [1, 3, 5, 7] : vector<8xf32>, vector<8xf32>
// CHECK:         %[[V:.*]] = vector.load %[[B]][%{{.*}}] : memref<7xi32>, vector<7xi32>
// CHECK-NEXT:    %[[EVEN:.*]] = vector.shuffle %[[V]], %[[V]] [0, 2, 4, 6] : vector<7xi32>, vector<7xi32>
// CHECK:         memref.load %[[G]]
// CHECK-COUNT-3: memref.load %[[G]]
// CHECK-NOT:     vector.load %[[G]]
func.func @strided(%A: memref<3x8xf32>, %B: memref<7xi32>, %G: memref<16xi32>, %n: index, %C: memref<4xf32>, %D: memref<4xi32>, %E: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 vectorized {
    %j = arith.muli %i, %c2 : index
    %k = arith.addi %j, %c1 : index
    %a = memref.load %A[%c2, %k] : memref<3x8xf32>
    memref.store %a, %C[%i] : memref<4xf32>
    %b = memref.load %B[%j] : memref<7xi32>
    memref.store %b, %D[%i] : memref<4xi32>
    %h = arith.addi %j, %n : index
    %g = memref.load %G[%h] : memref<16xi32>
    memref.store %g, %E[%i] : memref<4xi32>
  }
  func.return
}

// -----

// Stride -1: one vector load from the last lane's element, reversed.

// CHECK-LABEL: func.func @reversed(
// CHECK-SAME:      %[[A:.*]]: memref<8xf64>, %[[C:.*]]: memref<8xf64>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         arith.constant 7 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[L:.*]] = vector.load %[[A]][%[[C4]]] : memref<8xf64>, vector<4xf64>
// CHECK-NEXT:    %[[R:.*]] = vector.shuffle %[[L]], %[[L]] [3, 2, 1, 0] : vector<4xf64>, vector<4xf64>
// CHECK-NEXT:    vector.store %[[R]], %[[C]][%[[C0]]] : memref<8xf64>, vector<4xf64>
func.func @reversed(%A: memref<8xf64>, %C: memref<8xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  loop.for %i = %c0 to %c4 step %c1 vectorized {
    %j = arith.subi %c7, %i : index
    %a = memref.load %A[%j] : memref<8xf64>
    memref.store %a, %C[%i] : memref<8xf64>
  }
  func.return
}

// -----

// An inner loop with uniform bounds stays, its body vectorized; the accumulator
// lives in memory, each lane at its own element of %C.

// CHECK-LABEL: func.func @inner_loop(
// CHECK-SAME:      %[[A:.*]]: memref<8x8xf32>, %[[B:.*]]: memref<8xf32>, %[[C:.*]]: memref<8xf32>)
// CHECK:         %[[Z:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT:    vector.store %[[Z]], %[[C]][%[[C0:.*]]] : memref<8xf32>, vector<8xf32>
// CHECK-NEXT:    loop.for %[[K:.*]] = %[[C0]] to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[VA:.*]] = vector.load %[[A]][%[[K]], %[[C0]]] : memref<8x8xf32>, vector<8xf32>
// CHECK-NEXT:      %[[SB:.*]] = memref.load %[[B]][%[[K]]] : memref<8xf32>
// CHECK-NEXT:      %[[ACC:.*]] = vector.load %[[C]][%[[C0]]] : memref<8xf32>, vector<8xf32>
// CHECK-NEXT:      %[[VB:.*]] = vector.broadcast %[[SB]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[VA]], %[[VB]] : vector<8xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : vector<8xf32>
// CHECK-NEXT:      vector.store %[[S]], %[[C]][%[[C0]]] : memref<8xf32>, vector<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @inner_loop(%A: memref<8x8xf32>, %B: memref<8xf32>, %C: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    memref.store %zero, %C[%i] : memref<8xf32>
    loop.for %k = %c0 to %c8 step %c1 {
      %a = memref.load %A[%k, %i] : memref<8x8xf32>
      %b = memref.load %B[%k] : memref<8xf32>
      %acc = memref.load %C[%i] : memref<8xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %C[%i] : memref<8xf32>
    }
  }
  func.return
}

// -----

// A guard that varies across lanes, monotone in the lane (a split of 10 by 4):
// versioned. The vector code runs where the guard holds at the first and the
// last lane, the serial loop (guard and all) elsewhere.

// CHECK-LABEL: func.func @guard(
// CHECK-SAME:      %[[A:.*]]: memref<10xf32>, %[[C:.*]]: memref<10xf32>)
// CHECK:         loop.for %[[IO:.*]] = %[[C0:.*]] to %{{.*}} step %[[C1:.*]] {
// CHECK-NEXT:      %[[FIRST:.*]] = arith.muli %[[IO]], %[[C4:.*]] : index
// CHECK-NEXT:      %[[IN0:.*]] = arith.cmpi slt, %[[FIRST]], %[[C10:.*]] : index
// CHECK-NEXT:      %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.addi %[[FIRST]], %[[C3]] : index
// CHECK-NEXT:      %[[IN3:.*]] = arith.cmpi slt, %[[LAST]], %[[C10]] : index
// CHECK-NEXT:      %[[ALL:.*]] = arith.andi %[[IN0]], %[[IN3]] : i1
// CHECK-NEXT:      scf.if %[[ALL]] {
// CHECK-NEXT:        %[[T:.*]] = arith.muli %[[IO]], %[[C4]] : index
// CHECK-NEXT:        %[[V:.*]] = vector.load %[[A]][%[[T]]] : memref<10xf32>, vector<4xf32>
// CHECK-NEXT:        vector.store %[[V]], %[[C]][%[[T]]] : memref<10xf32>, vector<4xf32>
// CHECK-NEXT:      } else {
// CHECK-NEXT:        loop.for %[[II:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK:               %[[IN:.*]] = arith.cmpi slt, %{{.*}}, %[[C10]] : index
// CHECK-NEXT:          scf.if %[[IN]] {
// CHECK-NEXT:            memref.load %[[A]]
// CHECK-NEXT:            memref.store
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @guard(%A: memref<10xf32>, %C: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  loop.for %io = %c0 to %c2 step %c1 {
    loop.for %ii = %c0 to %c4 step %c1 vectorized {
      %t = arith.muli %io, %c4 : index
      %i = arith.addi %t, %ii : index
      %in = arith.cmpi slt, %i, %c10 : index
      scf.if %in {
        %a = memref.load %A[%i] : memref<10xf32>
        memref.store %a, %C[%i] : memref<10xf32>
      }
    }
  }
  func.return
}

// -----

// An unsigned comparison is monotone while its lane-affine operand stays
// non-negative: the versioning condition checks that at both ends too.

// CHECK-LABEL: func.func @guard_unsigned(
// CHECK-SAME:      %[[A:.*]]: memref<4xf32>, %[[N:.*]]: index)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[IN0:.*]] = arith.cmpi ult, %[[C0]], %[[N]] : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[IN3:.*]] = arith.cmpi ult, %[[LAST]], %[[N]] : index
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[POS0:.*]] = arith.cmpi sge, %[[C0]], %[[ZERO]] : index
// CHECK-NEXT:    %[[POS3:.*]] = arith.cmpi sge, %[[LAST]], %[[ZERO]] : index
// CHECK-NEXT:    %[[B0:.*]] = arith.andi %[[IN0]], %[[IN3]] : i1
// CHECK-NEXT:    %[[B1:.*]] = arith.andi %[[B0]], %[[POS0]] : i1
// CHECK-NEXT:    %[[ALL:.*]] = arith.andi %[[B1]], %[[POS3]] : i1
// CHECK-NEXT:    scf.if %[[ALL]] {
// CHECK-NEXT:      vector.load %[[A]][%[[C0]]] : memref<4xf32>, vector<4xf32>
// CHECK:         } else {
// CHECK-NEXT:      loop.for
func.func @guard_unsigned(%A: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 vectorized {
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      %a = memref.load %A[%i] : memref<4xf32>
      %s = arith.addf %a, %a : f32
      memref.store %s, %A[%i] : memref<4xf32>
    }
  }
  func.return
}

// -----

// A uniform condition keeps its scf.if; a result varying in either branch is a
// vector in both.

// CHECK-LABEL: func.func @uniform_if(
// CHECK-SAME:      %[[A:.*]]: memref<4xf32>, %[[COND:.*]]: i1, %[[C:.*]]: memref<4xf32>)
// CHECK:         %[[V:.*]] = scf.if %[[COND]] -> (vector<4xf32>) {
// CHECK-NEXT:      %[[L:.*]] = vector.load %[[A]][%{{.*}}] : memref<4xf32>, vector<4xf32>
// CHECK-NEXT:      scf.yield %[[L]] : vector<4xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[ZV:.*]] = vector.broadcast %[[Z]] : f32 to vector<4xf32>
// CHECK-NEXT:      scf.yield %[[ZV]] : vector<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    vector.store %[[V]], %[[C]][%{{.*}}] : memref<4xf32>, vector<4xf32>
func.func @uniform_if(%A: memref<4xf32>, %cond: i1, %C: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 vectorized {
    %v = scf.if %cond -> (f32) {
      %a = memref.load %A[%i] : memref<4xf32>
      scf.yield %a : f32
    } else {
      %z = arith.constant 0.0 : f32
      scf.yield %z : f32
    }
    memref.store %v, %C[%i] : memref<4xf32>
  }
  func.return
}

// -----

// Past 64 lanes, a serial loop over chunks of a 64-byte vector (16 f32), then the
// 6 left as one narrower vector: on AVX-512, the module's `ember.target` (without
// it, the host's width; loop-vectorize-target.mlir has other targets).

// CHECK-LABEL: func.func @strip_mined(
// CHECK-SAME:      %[[A:.*]]: memref<70xf32>, %[[C:.*]]: memref<70xf32>)
// CHECK:         %[[REST:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[REST]] step %[[C16]] {
// CHECK-NEXT:      %[[V:.*]] = vector.load %[[A]][%[[I]]] : memref<70xf32>, vector<16xf32>
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[V]] : vector<16xf32>
// CHECK-NEXT:      vector.store %[[E]], %[[C]][%[[I]]] : memref<70xf32>, vector<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[W:.*]] = vector.load %[[A]][%[[REST]]] : memref<70xf32>, vector<6xf32>
// CHECK-NEXT:    %[[F:.*]] = math.exp %[[W]] : vector<6xf32>
// CHECK-NEXT:    vector.store %[[F]], %[[C]][%[[REST]]] : memref<70xf32>, vector<6xf32>
// CHECK-NEXT:    func.return
builtin.module attributes {ember.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512"} {
  func.func @strip_mined(%A: memref<70xf32>, %C: memref<70xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c70 = arith.constant 70 : index
    loop.for %i = %c0 to %c70 step %c1 vectorized {
      %a = memref.load %A[%i] : memref<70xf32>
      %e = math.exp %a : f32
      memref.store %e, %C[%i] : memref<70xf32>
    }
    func.return
  }
}

// -----

// xDSL's arith.cmpf and arith.select are scalar-only: lanes are compared and
// selected by llvm.fcmp and llvm.select on vectors.

// CHECK-LABEL: func.func @select(
// CHECK:         %[[A:.*]] = vector.load
// CHECK-NEXT:    %[[Z:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT:    %[[POS:.*]] = llvm.fcmp "ogt" %[[A]], %[[Z]] : vector<8xf32>
// CHECK-NEXT:    %[[R:.*]] = llvm.select %[[POS]], %[[A]], %[[Z]] : vector<8xi1>, vector<8xf32>
// CHECK-NEXT:    vector.store %[[R]]
func.func @select(%A: memref<8xf32>, %C: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<8xf32>
    %pos = arith.cmpf ogt, %a, %zero : f32
    %r = arith.select %pos, %a, %zero : f32
    memref.store %r, %C[%i] : memref<8xf32>
  }
  func.return
}

// -----

// Dimensions of extent 1 after the varying index keep an access contiguous:
// channel c of a (1, 16, 1, 1) tensor is element c. Across a dimension of
// extent 2 the lanes are 2 elements apart, a gather.

// CHECK-LABEL: func.func @trailing_units(
// CHECK-SAME:      %[[A:[^:]*]]: memref<1x16x1x1xf32>, %[[B:[^:]*]]: memref<16x2xf32>, %[[C:[^:]*]]: memref<1x16x1xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[X:.*]] = vector.load %[[A]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] : memref<1x16x1x1xf32>, vector<16xf32>
// CHECK-NOT:     vector.load
// CHECK:         memref.load %[[B]]
// CHECK-COUNT-15: memref.load %[[B]]
// CHECK-NOT:     memref.load
// CHECK:         vector.store %{{.*}}, %[[C]][%[[C0]], %[[C0]], %[[C0]]] : memref<1x16x1xf32>, vector<16xf32>
// CHECK-NEXT:    func.return
func.func @trailing_units(%A: memref<1x16x1x1xf32>, %B: memref<16x2xf32>, %C: memref<1x16x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %a = memref.load %A[%c0, %i, %c0, %c0] : memref<1x16x1x1xf32>
    %b = memref.load %B[%i, %c0] : memref<16x2xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %C[%c0, %i, %c0] : memref<1x16x1xf32>
  }
  func.return
}

// -----

// One iteration is the body at the lower bound; none, nothing.

// CHECK-LABEL: func.func @tiny(
// CHECK-SAME:      %[[A:.*]]: memref<4xf32>)
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X:.*]] = memref.load %[[A]][%[[C1]]] : memref<4xf32>
// CHECK-NEXT:    memref.store %[[X]], %[[A]][%[[C2]]] : memref<4xf32>
// CHECK-NEXT:    func.return
func.func @tiny(%A: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  loop.for %i = %c1 to %c2 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %A[%c2] : memref<4xf32>
  }
  loop.for %i = %c2 to %c1 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %A[%i] : memref<4xf32>
  }
  func.return
}

// -----

// What cannot be vectorized without changing results stays a serial loop that
// says why.

// CHECK-LABEL: func.func @fallbacks(
// CHECK-NOT:     vectorized
// CHECK:         } {ember.vectorize_failed = "expected a constant upper bound, got a value computed at run time"}
// CHECK:         } {ember.vectorize_failed = "expected step 1, got 2"}
// CHECK:         } {ember.vectorize_failed = "stores a value that differs across lanes to one element of %C (a reduction over the vectorized loop)"}
// CHECK:         } {ember.vectorize_failed = "lanes may access the same element of %C: it is stored, and no index of all its accesses is one element per lane"}
// CHECK:         } {ember.vectorize_failed = "an scf.if condition differs across lanes and is not a comparison of lane-affine indices (slt, sle, sgt, sge, ult, ule, ugt, uge) or an andi of them"}
// CHECK:         } {ember.vectorize_failed = "expected no loop.alloc in a vectorized loop"}
// CHECK:         } {ember.vectorize_failed = "'func.call' cannot be vectorized"}
// CHECK:         } {ember.vectorize_failed = "an inner loop's bounds differ across lanes"}
// CHECK-NOT:     vector.
func.func @fallbacks(%A: memref<8xf32>, %n: index, %C: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  loop.for %i = %c0 to %n step %c1 vectorized {
    %a = memref.load %A[%i] : memref<8xf32>
    memref.store %a, %C[%i] : memref<8xf32>
  }
  loop.for %i = %c0 to %c8 step %c2 vectorized {
    %a = memref.load %A[%i] : memref<8xf32>
    memref.store %a, %C[%i] : memref<8xf32>
  }
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<8xf32>
    %acc = memref.load %C[%c0] : memref<8xf32>
    %s = arith.addf %acc, %a : f32
    memref.store %s, %C[%c0] : memref<8xf32>
  }
  loop.for %i = %c1 to %c8 step %c1 vectorized {
    %j = arith.subi %i, %c1 : index
    %a = memref.load %C[%j] : memref<8xf32>
    memref.store %a, %C[%i] : memref<8xf32>
  }
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %r = arith.remsi %i, %c2 : index
    %odd = arith.cmpi eq, %r, %c1 : index
    scf.if %odd {
      %a = memref.load %A[%i] : memref<8xf32>
      memref.store %a, %C[%i] : memref<8xf32>
    }
  }
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %t = loop.alloc local : memref<1xf32>
  }
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<8xf32>
    func.call @use(%a) : (f32) -> ()
  }
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    loop.for %k = %c0 to %i step %c1 {
      %a = memref.load %A[%k] : memref<8xf32>
      memref.store %a, %C[%i] : memref<8xf32>
    }
  }
  func.return
}
func.func private @use(f32)

// -----

// xDSL's arith casts between integers and floats take scalars: lane-wise they
// become LLVM's casts, which take vectors (before: an arith.fptosi on a vector
// that failed verification after the pass; a sigmoid's exp does this cast).

// CHECK-LABEL: func.func @casts(
// CHECK:         %[[F:.*]] = vector.load
// CHECK-NEXT:    %[[I:.*]] = llvm.fptosi %[[F]] : vector<8xf32> to vector<8xi32>
// CHECK-NEXT:    %[[W:.*]] = llvm.sext %[[I]] : vector<8xi32> to vector<8xi64>
// CHECK-NEXT:    %[[T:.*]] = llvm.trunc %[[W]] : vector<8xi64> to vector<8xi16>
// CHECK-NEXT:    %[[Z:.*]] = llvm.zext %[[T]] : vector<8xi16> to vector<8xi32>
// CHECK-NEXT:    %[[U:.*]] = llvm.fptoui %[[F]] : vector<8xf32> to vector<8xi32>
// CHECK-NEXT:    %[[S:.*]] = llvm.sitofp %[[Z]] : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    %[[V:.*]] = llvm.uitofp %[[U]] : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    %[[R:.*]] = arith.addf %[[S]], %[[V]] : vector<8xf32>
// CHECK-NEXT:    vector.store %[[R]]
// CHECK-NOT:     arith.fptosi
func.func @casts(%A: memref<8xf32>, %B: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %f = memref.load %A[%i] : memref<8xf32>
    %n = arith.fptosi %f : f32 to i32
    %w = arith.extsi %n : i32 to i64
    %t = arith.trunci %w : i64 to i16
    %z = arith.extui %t : i16 to i32
    %u = arith.fptoui %f : f32 to i32
    %s = arith.sitofp %z : i32 to f32
    %v = arith.uitofp %u : i32 to f32
    %r = arith.addf %s, %v : f32
    memref.store %r, %B[%i] : memref<8xf32>
  }
  func.return
}

// RUN: ember-opt %s --split-input-file -p convert-memref-to-llvm | filecheck %s

// Loads and stores become a GEP on the row-major linear index (i64, nsw) and an
// aligned llvm.load/llvm.store; buffer and index operands meet through casts.

func.func @load_store_2d(%A: memref<4x8xf32>, %B: memref<8xf32>, %i: index, %j: index) {
  %x = memref.load %A[%i, %j] : memref<4x8xf32>
  memref.store %x, %B[%j] : memref<8xf32>
  func.return
}

// CHECK-LABEL: func.func @load_store_2d(
// CHECK-SAME:      %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8xf32>, %[[I:.*]]: index, %[[J:.*]]: index)
// Casts sit at the definitions of their values, shared by all accesses:
// CHECK-DAG:     %[[PA:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<4x8xf32> to !llvm.ptr
// CHECK-DAG:     %[[PB:.*]] = builtin.unrealized_conversion_cast %[[B]] : memref<8xf32> to !llvm.ptr
// CHECK-DAG:     %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK-DAG:     %[[J64:.*]] = builtin.unrealized_conversion_cast %[[J]] : index to i64
// CHECK-DAG:     %[[EIGHT:.*]] = llvm.mlir.constant(8) : i64
// CHECK:         %[[ROW:.*]] = llvm.mul %[[I64]], %[[EIGHT]] overflow<nsw> : i64
// CHECK-NEXT:    %[[LIN:.*]] = llvm.add %[[ROW]], %[[J64]] overflow<nsw> : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %[[PA]][%[[LIN]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %[[PB]][%[[J64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[X]], %[[Q]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NOT:     memref.

// -----

// Strides are products of the trailing extents; 0-d buffers use the pointer itself.

func.func @load_3d_and_0d(%A: memref<2x3x5xf64>, %S: memref<f64>, %i: index, %j: index, %k: index) {
  %x = memref.load %A[%i, %j, %k] : memref<2x3x5xf64>
  memref.store %x, %S[] : memref<f64>
  func.return
}

// CHECK-LABEL: func.func @load_3d_and_0d(
// CHECK-SAME:      %[[S:[^:]*]]: memref<f64>
// CHECK-DAG:     %[[PS:.*]] = builtin.unrealized_conversion_cast %[[S]] : memref<f64> to !llvm.ptr
// CHECK-DAG:     %[[C15:.*]] = llvm.mlir.constant(15) : i64
// CHECK-DAG:     %[[C5:.*]] = llvm.mlir.constant(5) : i64
// CHECK:         %[[T0:.*]] = llvm.mul %{{.*}}, %[[C15]] overflow<nsw> : i64
// CHECK-NEXT:    %[[T1:.*]] = llvm.mul %{{.*}}, %[[C5]] overflow<nsw> : i64
// CHECK-NEXT:    %[[T2:.*]] = llvm.add %[[T0]], %[[T1]] overflow<nsw> : i64
// CHECK-NEXT:    %[[T3:.*]] = llvm.add %[[T2]], %{{.*}} overflow<nsw> : i64
// CHECK-NEXT:    llvm.getelementptr inbounds %{{.*}}[%[[T3]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT:    %[[X:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> f64
// CHECK-NEXT:    llvm.store %[[X]], %[[PS]] {alignment = 8 : i64} : f64, !llvm.ptr

// -----

// Heap buffers: taken from a slot of the module (an internal null pointer
// global a site) with their bytes rounded up to the alignment (64 at least) and
// given back to it, so that a kernel called again reuses its blocks; the
// module's weak __ember_scratch_release drops every slot. Stack buffers:
// llvm.alloca aligned to 64, at the top of the entry block. A result nothing
// uses (%S) is not cast back to its memref type; the constants do not take the
// buffers' names.

func.func @buffers() {
  %T = memref.alloc() : memref<3x5xf64>
  %U = memref.alloc() {alignment = 128 : i64} : memref<4xi8>
  %S = memref.alloca() : memref<16xi32>
  memref.dealloc %T : memref<3x5xf64>
  memref.dealloc %U : memref<4xi8>
  func.return
}

// CHECK-LABEL: func.func @buffers()
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[S:.*]] = llvm.alloca %[[N]] x i32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK-NOT:     unrealized_conversion_cast %[[S]]
// CHECK-NOT:     %T{{.*}} = llvm.mlir.constant
// CHECK:         %[[SLOT0:.*]] = llvm.mlir.addressof @__ember_scratch.0 : !llvm.ptr
// CHECK-NEXT:    %[[B128:.*]] = llvm.mlir.constant(128) : i64
// CHECK-NEXT:    %[[A64:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[T:.*]] = llvm.call @__ember_scratch_take(%[[SLOT0]], %[[B128]], %[[A64]]) : (!llvm.ptr, i64, i64) -> !llvm.ptr
// CHECK:         %[[SLOT1:.*]] = llvm.mlir.addressof @__ember_scratch.1 : !llvm.ptr
// CHECK-NEXT:    %[[B128U:.*]] = llvm.mlir.constant(128) : i64
// CHECK-NEXT:    %[[A128:.*]] = llvm.mlir.constant(128) : i64
// CHECK-NEXT:    %[[U:.*]] = llvm.call @__ember_scratch_take(%[[SLOT1]], %[[B128U]], %[[A128]]) : (!llvm.ptr, i64, i64) -> !llvm.ptr
// CHECK:         llvm.call @__ember_scratch_give(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @__ember_scratch_give(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK:       llvm.mlir.global internal @__ember_scratch.0() {{.*}} : !llvm.ptr {
// CHECK-NEXT:    llvm.mlir.zero : !llvm.ptr
// CHECK:       llvm.func @__ember_scratch_take(!llvm.ptr, i64, i64) -> !llvm.ptr
// CHECK:       llvm.func weak @__ember_scratch_release() {
// CHECK-NEXT:    %[[D0:.*]] = llvm.mlir.addressof @__ember_scratch.0 : !llvm.ptr
// CHECK-NEXT:    llvm.call @__ember_scratch_drop(%[[D0]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    %[[D1:.*]] = llvm.mlir.addressof @__ember_scratch.1 : !llvm.ptr
// CHECK-NEXT:    llvm.call @__ember_scratch_drop(%[[D1]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK:       llvm.mlir.global internal @__ember_scratch.1()
// CHECK:       llvm.func @__ember_scratch_give(!llvm.ptr)
// CHECK-NOT:   llvm.func @aligned_alloc
// CHECK-NOT:   llvm.func @free

// -----

// A stack buffer inside a loop (a per-iteration buffer of a compute_at stage, or a
// thread's scratch in an outlined parallel loop) is allocated once, in the entry
// block of the function that holds it: an alloca in the loop would grow the stack
// every iteration.

func.func @alloca_in_loop(%A: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %T = memref.alloca() {alignment = 64 : i64} : memref<4xf32>
      %x = memref.load %A[%j] : memref<8xf32>
      memref.store %x, %T[%c0] : memref<4xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @alloca_in_loop(
// CHECK-NOT:     scf.for
// CHECK:         %[[N:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[T:.*]] = llvm.alloca %[[N]] x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-NOT:         llvm.alloca
// CHECK:             %[[TM:.*]] = builtin.unrealized_conversion_cast %[[T]] : !llvm.ptr to memref<4xf32>
// CHECK:             %[[X:.*]] = llvm.load
// CHECK:             llvm.store %[[X]], %{{.*}}
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// Buffers of index hold i64; vector.load/store read and write whole vectors at the
// element's address.

func.func @index_and_vectors(%I: memref<4xindex>, %A: memref<2x8xf32>, %i: index) {
  %x = memref.load %I[%i] : memref<4xindex>
  memref.store %x, %I[%i] : memref<4xindex>
  %v = vector.load %A[%i, %i] : memref<2x8xf32>, vector<4xf32>
  vector.store %v, %A[%i, %i] : memref<2x8xf32>, vector<4xf32>
  func.return
}

// CHECK-LABEL: func.func @index_and_vectors(
// CHECK:         %[[X:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK:         %[[XI:.*]] = builtin.unrealized_conversion_cast %[[X]] : i64 to index
// CHECK:         %[[XL:.*]] = builtin.unrealized_conversion_cast %[[XI]] : index to i64
// CHECK:         llvm.store %[[XL]], %{{.*}} {alignment = 8 : i64} : i64, !llvm.ptr
// CHECK:         %[[V:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK:         llvm.store %[[V]], %{{.*}} {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-NOT:     vector.

// -----

// An i1 takes a byte in ember's buffers, but LLVM's vector of i1 in memory is
// bits: a vector of i1 is loaded as bytes and truncated, stored zero-extended.

func.func @bool_vectors(%M: memref<2x16xi1>, %i: index) {
  %v = vector.load %M[%i, %i] : memref<2x16xi1>, vector<16xi1>
  vector.store %v, %M[%i, %i] : memref<2x16xi1>, vector<16xi1>
  func.return
}

// CHECK-LABEL: func.func @bool_vectors(
// CHECK:         %[[B:.*]] = llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> vector<16xi8>
// CHECK-NEXT:    %[[V:.*]] = llvm.trunc %[[B]] : vector<16xi8> to vector<16xi1>
// CHECK:         %[[W:.*]] = llvm.zext %{{.*}} : vector<16xi1> to vector<16xi8>
// CHECK-NEXT:    llvm.store %[[W]], %{{.*}} {alignment = 1 : i64} : vector<16xi8>, !llvm.ptr

// -----

// Globals become flat llvm arrays (splats expanded, uninitialized ones zeroed);
// get_global is the global's address.

"memref.global"() <{sym_name = "table", sym_visibility = "private", type = memref<2x2xf32>, initial_value = dense<1.5> : tensor<2x2xf32>, constant}> : () -> ()
"memref.global"() <{sym_name = "state", sym_visibility = "public", type = memref<3xi32>, initial_value}> : () -> ()

func.func @globals() -> f32 {
  %T = memref.get_global @table : memref<2x2xf32>
  %k = "test.op"() : () -> index
  %x = memref.load %T[%k, %k] : memref<2x2xf32>
  func.return %x : f32
}

// CHECK:       llvm.mlir.global internal constant @table(dense<1.500000e+00> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
// CHECK:       llvm.mlir.global external @state(dense<0> : tensor<3xi32>) {addr_space = 0 : i32} : !llvm.array<3 x i32>
// CHECK-LABEL: func.func @globals()
// CHECK:         %[[T:.*]] = llvm.mlir.addressof @table : !llvm.ptr
// CHECK:         %[[TM:.*]] = builtin.unrealized_conversion_cast %[[T]] : !llvm.ptr to memref<2x2xf32>
// CHECK:         %[[TP:.*]] = builtin.unrealized_conversion_cast %[[TM]] : memref<2x2xf32> to !llvm.ptr
// CHECK:         llvm.getelementptr inbounds %[[TP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32

// RUN: ember-opt %s -p loop-outline-parallel --split-input-file | filecheck %s
// RUN: ember-opt %s -p ember-cpu --split-input-file | filecheck %s --check-prefix=CPU

// A parallel loop becomes a call of GOMP_parallel with a worker and a struct of the
// values the loop captures, allocated in the entry block; constants are cloned, not
// captured. The worker runs its thread's contiguous block [first, last) of the
// iterations through @scale_parallel0. The buffers of a function whose packed entry
// proves them disjoint are noalias there; the loop keeps its attributes.

func.func @scale(%A: memref<101xf32> {ember.name = "A"}, %B: memref<101xf32> {ember.name = "B", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c101 = arith.constant 101 : index
  %two = arith.constant 2.0 : f32
  loop.for %i = %c0 to %c101 step %c1 parallel {
    %a = memref.load %A[%i] : memref<101xf32>
    %b = arith.mulf %a, %two : f32
    memref.store %b, %B[%i] : memref<101xf32>
  } {ember.note = "kept"}
  func.return
}

// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      %[[A:.*]]: memref<101xf32> {ember.name = "A"}, %[[B:.*]]: memref<101xf32> {ember.name = "B", ember.output}) {
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[DATA:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(!llvm.ptr, !llvm.ptr)> {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[PA:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<101xf32> to !llvm.ptr
// CHECK-NEXT:    %[[FA:.*]] = llvm.getelementptr inbounds %[[DATA]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(!llvm.ptr, !llvm.ptr)>
// CHECK-NEXT:    llvm.store %[[PA]], %[[FA]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[PB:.*]] = builtin.unrealized_conversion_cast %[[B]] : memref<101xf32> to !llvm.ptr
// CHECK-NEXT:    %[[FB:.*]] = llvm.getelementptr inbounds %[[DATA]][0, 1]
// CHECK-NEXT:    llvm.store %[[PB]], %[[FB]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[FN:.*]] = llvm.mlir.addressof @scale_parallel0_worker : !llvm.ptr
// CHECK-NEXT:    %[[NT:.*]] = llvm.mlir.addressof @__ember_num_threads : !llvm.ptr
// CHECK-NEXT:    %[[N:.*]] = llvm.load %[[NT]] {alignment = 4 : i64} : !llvm.ptr -> i32
// CHECK-NEXT:    %[[FLAGS:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    func.call @GOMP_parallel(%[[FN]], %[[DATA]], %[[N]], %[[FLAGS]]) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @scale_parallel0(%[[LO:.*]]: index, %[[HI:.*]]: index, %[[TA:.*]]: memref<101xf32> {llvm.noalias}, %[[TB:.*]]: memref<101xf32> {llvm.noalias}) {
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    loop.for %[[I:.*]] = %[[LO]] to %[[HI]] step %[[C1]] {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[TA]][%[[I]]] : memref<101xf32>
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[X]], %[[TWO]] : f32
// CHECK-NEXT:      memref.store %[[Y]], %[[TB]][%[[I]]] : memref<101xf32>
// CHECK-NEXT:    } {ember.note = "kept"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @scale_parallel0_worker(%[[D:.*]]: !llvm.ptr) {
// CHECK-NEXT:    %[[GA:.*]] = llvm.getelementptr inbounds %[[D]][0, 0]
// CHECK-NEXT:    %[[LA:.*]] = llvm.load %[[GA]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[WA:.*]] = builtin.unrealized_conversion_cast %[[LA]] : !llvm.ptr to memref<101xf32>
// CHECK-NEXT:    %[[GB:.*]] = llvm.getelementptr inbounds %[[D]][0, 1]
// CHECK-NEXT:    %[[LB:.*]] = llvm.load %[[GB]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[WB:.*]] = builtin.unrealized_conversion_cast %[[LB]] : !llvm.ptr to memref<101xf32>
// CHECK-DAG:     %[[WLO:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[WHI:.*]] = arith.constant 101 : index
// CHECK-DAG:     %[[WSTEP:.*]] = arith.constant 1 : index
// CHECK:         %[[T32:.*]] = func.call @omp_get_thread_num() : () -> i32
// CHECK-NEXT:    %[[N32:.*]] = func.call @omp_get_num_threads() : () -> i32
// CHECK-NEXT:    %[[T:.*]] = arith.index_cast %[[T32]] : i32 to index
// CHECK-NEXT:    %[[NN:.*]] = arith.index_cast %[[N32]] : i32 to index
// CHECK-NEXT:    %[[SPAN:.*]] = arith.subi %[[WHI]], %[[WLO]] : index
// CHECK-NEXT:    %[[TRIPS:.*]] = arith.ceildivsi %[[SPAN]], %[[WSTEP]] : index
// CHECK-NEXT:    %[[K:.*]] = arith.maxsi %[[TRIPS]], %{{.*}} : index
// CHECK-NEXT:    %[[Q:.*]] = arith.divui %[[K]], %[[NN]] : index
// CHECK-NEXT:    %[[R:.*]] = arith.remui %[[K]], %[[NN]] : index
// CHECK-NEXT:    %[[SKEW:.*]] = arith.minui %[[T]], %[[R]] : index
// CHECK-NEXT:    %[[TQ:.*]] = arith.muli %[[T]], %[[Q]] : index
// CHECK-NEXT:    %[[BEGIN:.*]] = arith.addi %[[TQ]], %[[SKEW]] : index
// CHECK-NEXT:    %[[LONGER:.*]] = arith.cmpi ult, %[[T]], %[[R]] : index
// CHECK-NEXT:    %[[EXTRA:.*]] = arith.select %[[LONGER]], %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[LEN:.*]] = arith.addi %[[Q]], %[[EXTRA]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.addi %[[BEGIN]], %[[LEN]] : index
// CHECK-NEXT:    %[[OFF0:.*]] = arith.muli %[[BEGIN]], %[[WSTEP]] : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.addi %[[WLO]], %[[OFF0]] : index
// CHECK-NEXT:    %[[OFF1:.*]] = arith.muli %[[END]], %[[WSTEP]] : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %[[WLO]], %[[OFF1]] : index
// CHECK-NEXT:    func.call @scale_parallel0(%[[FIRST]], %[[LAST]], %[[WA]], %[[WB]]) : (index, index, memref<101xf32>, memref<101xf32>) -> ()
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:  func.func private @omp_get_thread_num() -> i32
// CHECK-NEXT:  func.func private @omp_get_num_threads() -> i32
// CHECK-NEXT:  llvm.mlir.global external @__ember_num_threads(0 : i32) {addr_space = 0 : i32, alignment = 4 : i64} : i32

// -----

// Captures of every kind: buffers (a private function's arguments may alias each
// other, so only the fresh allocation %T is noalias), a float, and an index
// (stored as i64) that also bounds the loop. A step that is not 1 and a lower
// bound that is not 0 reach the worker as constants. A parallel loop nested in the
// outlined one runs serially and says why. A local buffer allocated in the body
// stays in the outlined body: each thread's frame holds its own.

func.func private @helper(%A: memref<8x16xf32>, %out: memref<8xf32>, %n: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %T = loop.alloc : memref<8xf32>
  loop.for %i = %c1 to %n step %c3 parallel {
    %acc = loop.alloc local : memref<f32>
    %x = memref.load %A[%i, %c0] : memref<8x16xf32>
    %y = arith.mulf %x, %s : f32
    memref.store %y, %acc[] : memref<f32>
    loop.for %j = %c0 to %n step %c1 parallel {
      %z = memref.load %acc[] : memref<f32>
      memref.store %z, %T[%j] : memref<8xf32>
    }
    %w = memref.load %acc[] : memref<f32>
    memref.store %w, %out[%i] : memref<8xf32>
  }
  func.return
}

// CHECK-LABEL: func.func private @helper(
// CHECK-SAME:      %[[A:.*]]: memref<8x16xf32>, %[[OUT:.*]]: memref<8xf32>, %[[N:.*]]: index, %[[S:.*]]: f32) {
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[DATA:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(!llvm.ptr, f32, i64, !llvm.ptr, !llvm.ptr)>
// CHECK:         %[[T:.*]] = loop.alloc : memref<8xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:         llvm.store %[[S]], %{{.*}} : f32, !llvm.ptr
// CHECK:         %[[NI:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK:         llvm.store %[[NI]], %{{.*}} : i64, !llvm.ptr
// CHECK:         func.call @GOMP_parallel(
// CHECK-NOT:     loop.for
// CHECK:       func.func private @helper_parallel0(%[[LO:.*]]: index, %[[HI:.*]]: index, %{{.*}}: memref<8x16xf32>, %{{.*}}: f32, %[[TN:.*]]: index, %[[TT:.*]]: memref<8xf32> {llvm.noalias}, %{{.*}}: memref<8xf32>) {
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         loop.for %{{.*}} = %[[LO]] to %[[HI]] step %[[C3]] {
// CHECK-NEXT:      %[[ACC:.*]] = loop.alloc local : memref<f32>
// CHECK:           loop.for %{{.*}} = %[[C0]] to %[[TN]] step %[[C1]] {
// CHECK:             memref.store %{{.*}}, %[[TT]][%{{.*}}] : memref<8xf32>
// CHECK-NEXT:      } {ember.serial_reason = "nested in a parallel loop: libgomp runs one level of parallelism"}
// CHECK:       func.func private @helper_parallel0_worker(%[[D:.*]]: !llvm.ptr) {
// CHECK:         %[[WS:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %[[WN64:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK-NEXT:    %[[WN:.*]] = builtin.unrealized_conversion_cast %[[WN64]] : i64 to index
// CHECK:         %[[WLO:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[WSTEP:.*]] = arith.constant 3 : index
// CHECK:         %[[SPAN:.*]] = arith.subi %[[WN]], %[[WLO]] : index
// CHECK-NEXT:    arith.ceildivsi %[[SPAN]], %[[WSTEP]] : index
// CHECK:         func.call @helper_parallel0(%{{.*}}, %{{.*}}, %{{.*}}, %[[WS]], %[[WN]], %{{.*}}, %{{.*}})
// CHECK-NOT:   loop.for {{.*}} parallel

// Through ember-cpu, the local buffer is an alloca in the entry block of the
// outlined function, not in its loop; the worker is an internal function whose
// address libgomp gets.

// CPU-LABEL:   llvm.func internal @helper(
// CPU:           %[[FN:.*]] = llvm.mlir.addressof @helper_parallel0_worker : !llvm.ptr
// CPU:           llvm.call @GOMP_parallel(%[[FN]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CPU:         llvm.func internal @helper_parallel0(
// CPU-NOT:       ^bb
// CPU:           %[[ACC:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CPU:         ^bb1(
// CPU-NOT:       llvm.alloca
// CPU:         llvm.func internal @helper_parallel0_worker(%{{.*}}: !llvm.ptr) {
// CPU:           llvm.call @omp_get_thread_num() : () -> i32
// CPU:           llvm.call @helper_parallel0(
// CPU:         llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CPU:         llvm.mlir.global external @__ember_num_threads(0 : i32)

// -----

// Two parallel loops inside a serial one: each is outlined on its own
// (@twice_parallel0, @twice_parallel1, in order) and called every iteration with its
// own struct, allocated once in the entry block; the induction variable of the
// serial loop is captured. libgomp's functions are declared once, and a
// declaration already in the module is reused.

func.func @twice(%A: memref<4xi32> {ember.output}, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = arith.constant 7 : i32
  loop.for %r = %c0 to %m step %c1 {
    loop.for %i = %c0 to %c4 step %c1 parallel {
      memref.store %v, %A[%i] : memref<4xi32>
    }
    loop.for %i = %r to %c4 step %c1 parallel {
      %t = func.call @omp_get_thread_num() : () -> i32
      memref.store %t, %A[%i] : memref<4xi32>
    }
  }
  func.return
}
func.func private @omp_get_thread_num() -> i32

// CHECK-LABEL: func.func @twice(
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[D1:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(!llvm.ptr, i64)>
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[D0:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(!llvm.ptr)>
// CHECK:         loop.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:       llvm.alloca
// CHECK:           %[[F0:.*]] = llvm.mlir.addressof @twice_parallel0_worker : !llvm.ptr
// CHECK:           func.call @GOMP_parallel(%[[F0]], %[[D0]], %{{.*}}, %{{.*}})
// CHECK:           %[[RI:.*]] = builtin.unrealized_conversion_cast %[[R]] : index to i64
// CHECK-NEXT:      %[[RF:.*]] = llvm.getelementptr inbounds %[[D1]][0, 1]
// CHECK-NEXT:      llvm.store %[[RI]], %[[RF]] : i64, !llvm.ptr
// CHECK:           %[[F1:.*]] = llvm.mlir.addressof @twice_parallel1_worker : !llvm.ptr
// A trip count known only at run time (from %r): the team only when the work
// pays for it (its ops times its trips), else the worker on the caller alone.
// CHECK:           %[[TRIPS:.*]] = arith.subi %{{.*}}, %[[R]] : index
// CHECK:           %[[PAYS:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      scf.if %[[PAYS]] {
// CHECK-NEXT:        func.call @GOMP_parallel(%[[F1]], %[[D1]], %{{.*}}, %{{.*}})
// CHECK-NEXT:      } else {
// CHECK-NEXT:        func.call @twice_parallel1_worker(%[[D1]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK:       func.func private @twice_parallel0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<4xi32>) {
// CHECK:       func.func private @twice_parallel0_worker(
// CHECK:       func.func private @twice_parallel1(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<4xi32>) {
// CHECK:           func.call @omp_get_thread_num() : () -> i32
// CHECK:       func.func private @twice_parallel1_worker(
// CHECK:         %[[WR64:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK-NEXT:    %[[WR:.*]] = builtin.unrealized_conversion_cast %[[WR64]] : i64 to index
// CHECK:         arith.subi %{{.*}}, %[[WR]] : index
// CHECK:       func.func private @omp_get_thread_num() -> i32
// CHECK-NOT:   func.func private @omp_get_thread_num
// CHECK:       func.func private @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NOT:   func.func private @omp_get_thread_num
// CHECK:       func.func private @omp_get_num_threads() -> i32
// CHECK-NOT:   func.func private @GOMP_parallel

// -----

// A loop that captures nothing passes a null pointer; names already taken are
// skipped.

func.func @nothing() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  loop.for %i = %c0 to %c8 step %c1 parallel {
  }
  func.return
}
func.func private @nothing_parallel0()

// CHECK-LABEL: func.func @nothing() {
// CHECK-NOT:     llvm.alloca
// CHECK:         %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    %[[FN:.*]] = llvm.mlir.addressof @nothing_parallel1_worker : !llvm.ptr
// CHECK:         func.call @GOMP_parallel(%[[FN]], %[[NULL]], %{{.*}}, %{{.*}})
// CHECK:       func.func private @nothing_parallel1(%{{.*}}: index, %{{.*}}: index) {
// CHECK:       func.func private @nothing_parallel1_worker(%{{.*}}: !llvm.ptr) {
// CHECK-NOT:     llvm.load
// CHECK:         func.call @nothing_parallel1(

// -----

// Without parallel loops the module is unchanged: no declarations, no global.

// CHECK-LABEL: func.func @serial(
// CHECK:         loop.for
// CHECK-NOT:     GOMP_parallel
// CHECK-NOT:     __ember_num_threads
func.func @serial(%A: memref<4xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    memref.store %x, %A[%i] : memref<4xf32>
  }
  func.return
}

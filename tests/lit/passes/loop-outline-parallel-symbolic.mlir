// RUN: ember-opt %s -p loop-outline-parallel --split-input-file | filecheck %s
// RUN: ember-opt %s -p ember-cpu --split-input-file | filecheck %s --check-prefix=CPU

// A symbolic buffer goes to the outlined function with its ember.dims, and the
// size symbols those name follow every other capture, marked ember.symbol (the
// loop-level convention its strides are computed by); a symbol no captured
// buffer names (%m, of %C) stays behind.

func.func @rows(%A: memref<?x8xf32> {ember.name = "A", ember.dims = ["n"]}, %C: memref<?xf32> {ember.name = "C", ember.dims = ["m"]}, %B: memref<?x8xf32> {ember.name = "B", ember.output, ember.dims = ["n"]}, %m: index {ember.symbol = "m"}, %n: index {ember.symbol = "n"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  loop.for %i = %c0 to %n step %c1 parallel {
    loop.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %A[%i, %j] : memref<?x8xf32>
      %b = arith.mulf %a, %two : f32
      memref.store %b, %B[%i, %j] : memref<?x8xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @rows(
// CHECK:         %[[DATA:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(!llvm.ptr, !llvm.ptr, i64)>
// CHECK:         %[[SN:.*]] = builtin.unrealized_conversion_cast %n : index to i64
// CHECK-NEXT:    %[[FN:.*]] = llvm.getelementptr inbounds %[[DATA]][0, 2]
// CHECK-NEXT:    llvm.store %[[SN]], %[[FN]] : i64, !llvm.ptr
// CHECK:         func.call @GOMP_parallel(
// CHECK:       func.func private @rows_parallel0(%{{.*}}: index, %{{.*}}: index, %[[TA:.*]]: memref<?x8xf32> {ember.dims = ["n"]}, %[[TB:.*]]: memref<?x8xf32> {ember.dims = ["n"]}, %{{.*}}: index {ember.symbol = "n"}) {
// CHECK:           memref.load %[[TA]][%{{.*}}, %{{.*}}] : memref<?x8xf32>
// CHECK:       func.func private @rows_parallel0_worker(
// CHECK:         func.call @rows_parallel0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (index, index, memref<?x8xf32>, memref<?x8xf32>, index) -> ()

// CPU-LABEL: llvm.func internal @rows_impl(
// CPU:         llvm.call @GOMP_parallel(
// CPU-LABEL: llvm.func @rows(
// CPU:         llvm.call @rows_impl(

// -----

// A dynamic loop.alloc (marked ember.dims by convert-te-to-loop) is captured
// as an argument is: a distinct allocation, so noalias too.

func.func @staged(%A: memref<?x8xf32> {ember.name = "A", ember.dims = ["n"]}, %B: memref<?x8xf32> {ember.name = "B", ember.output, ember.dims = ["n"]}, %n: index {ember.symbol = "n"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %T = loop.alloc(%n) {ember.dims = ["n"]} : memref<?x8xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %A[%i, %j] : memref<?x8xf32>
      memref.store %a, %T[%i, %j] : memref<?x8xf32>
    }
  }
  loop.for %i = %c0 to %n step %c1 parallel {
    loop.for %j = %c0 to %c8 step %c1 {
      %t = memref.load %T[%i, %j] : memref<?x8xf32>
      memref.store %t, %B[%i, %j] : memref<?x8xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @staged(
// CHECK:         %[[T:.*]] = loop.alloc(%{{.*}}) {ember.dims = ["n"]} : memref<?x8xf32>
// CHECK:         builtin.unrealized_conversion_cast %[[T]] : memref<?x8xf32> to !llvm.ptr
// CHECK:       func.func private @staged_parallel0(%{{.*}}: index, %{{.*}}: index, %[[TT:.*]]: memref<?x8xf32> {llvm.noalias, ember.dims = ["n"]}, %{{.*}}: memref<?x8xf32> {ember.dims = ["n"]}, %{{.*}}: index {ember.symbol = "n"}) {
// CHECK:           memref.load %[[TT]][%{{.*}}, %{{.*}}] : memref<?x8xf32>

// CPU-LABEL: llvm.func internal @staged_impl(
// CPU:         llvm.call @__ember_scratch_take(
// CPU:         llvm.call @GOMP_parallel(
// CPU:         llvm.call @__ember_scratch_give(
// CPU-LABEL: llvm.func internal @staged_parallel0(

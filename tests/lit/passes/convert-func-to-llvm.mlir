// RUN: ember-opt %s --split-input-file -p convert-func-to-llvm | filecheck %s

// Signatures take llvm types (memref → !llvm.ptr, index → i64); users of the entry
// block's arguments that are not converted yet see the old types through casts.

func.func @signature(%A: memref<16xf32> {ember.name = "A"}, %n: index, %x: f32) -> f32 attributes {ember.kernel} {
  %y = "test.op"(%A, %n, %x) : (memref<16xf32>, index, f32) -> f32
  func.return %y : f32
}

// CHECK-LABEL: llvm.func @signature(
// CHECK-SAME:      %[[A:.*]]: !llvm.ptr {ember.name = "A"}, %[[N:.*]]: i64, %[[X:.*]]: f32) -> f32 attributes {ember.kernel} {
// CHECK-DAG:     %[[AM:.*]] = builtin.unrealized_conversion_cast %[[A]] : !llvm.ptr to memref<16xf32>
// CHECK-DAG:     %[[NI:.*]] = builtin.unrealized_conversion_cast %[[N]] : i64 to index
// CHECK:         %[[Y:.*]] = "test.op"(%[[AM]], %[[NI]], %[[X]]) : (memref<16xf32>, index, f32) -> f32
// CHECK-NEXT:    llvm.return %[[Y]] : f32
// CHECK-NOT:     func.

// -----

// Public definitions are external, private ones internal; declarations stay
// external whatever their visibility. Calls become llvm.call on converted operands.

func.func private @helper(%i: index) -> index {
  func.return %i : index
}
func.func private @expf(f32) -> f32
func.func @caller(%i: index, %x: f32) {
  %j = func.call @helper(%i) : (index) -> index
  %y = func.call @expf(%x) : (f32) -> f32
  func.call @sink(%j, %y) : (index, f32) -> ()
  func.return
}
func.func @sink(index, f32)

// CHECK-LABEL: llvm.func internal @helper(
// CHECK-SAME:      %[[I:.*]]: i64) -> i64 {
// CHECK:         llvm.return %{{.*}} : i64
// CHECK:       llvm.func @expf(f32) -> f32
// CHECK-LABEL: llvm.func @caller(
// CHECK-SAME:      %[[CI:.*]]: i64, %[[X:.*]]: f32) {
// CHECK:         %[[J:.*]] = llvm.call @helper(%{{.*}}) : (i64) -> i64
// CHECK:         %[[JI:.*]] = builtin.unrealized_conversion_cast %[[J]] : i64 to index
// CHECK:         %[[Y:.*]] = llvm.call @expf(%[[X]]) : (f32) -> f32
// CHECK:         %[[JL:.*]] = builtin.unrealized_conversion_cast %[[JI]] : index to i64
// CHECK:         llvm.call @sink(%[[JL]], %[[Y]]) : (i64, f32) -> ()
// CHECK-NEXT:    llvm.return
// CHECK:       llvm.func @sink(i64, f32)

// -----

// Only the entry block is retyped here; other blocks belong to convert-cf-to-llvm.

func.func @blocks(%n: index) -> index {
  cf.br ^next(%n : index)
^next(%m: index):
  func.return %m : index
}

// CHECK-LABEL: llvm.func @blocks(
// CHECK-SAME:      %[[N:.*]]: i64) -> i64 {
// CHECK:         %[[NI:.*]] = builtin.unrealized_conversion_cast %[[N]] : i64 to index
// CHECK:         cf.br ^{{.*}}(%[[NI]] : index)
// CHECK:       ^{{.*}}(%[[M:.*]]: index):
// CHECK:         %[[ML:.*]] = builtin.unrealized_conversion_cast %[[M]] : index to i64
// CHECK:         llvm.return %[[ML]] : i64

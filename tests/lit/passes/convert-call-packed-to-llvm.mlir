// RUN: ember-opt %s --split-input-file -p convert-call-packed-to-llvm | filecheck %s

// A buffer becomes a DLTensor on the stack (data, cpu, ndim, dtype, shape,
// null strides, offset 0), scalars widen to int64/double, strings are constant C
// strings; the call goes through the hook, and the function returns a message
// (null on success).

// CHECK-LABEL: func.func @args(
// CHECK-SAME:      %[[A:.*]]: memref<4x2xf32>, %[[N:.*]]: i32, %[[I:.*]]: index) -> !llvm.ptr attributes {ember.fallible} {
// CHECK:         %[[VALUES:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64}
// CHECK:         %[[CODES:.*]] = llvm.alloca %{{.*}} x i32 {alignment = 4 : i64}
// CHECK:         %[[RET:.*]] = llvm.alloca %{{.*}} x i64
// CHECK:         %[[RET_CODE:.*]] = llvm.alloca %{{.*}} x i32
// CHECK:         %[[T:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(!llvm.ptr, i32, i32, i32, i8, i8, i16, !llvm.ptr, !llvm.ptr, i64)>
// CHECK:         %[[SHAPE:.*]] = llvm.alloca %{{.*}} x i64
// CHECK:         %[[DATA:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<4x2xf32> to !llvm.ptr
// CHECK:         %[[CPU:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK:         %[[NDIM:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK:         %[[CODE:.*]] = llvm.mlir.constant(2 : i8) : i8
// CHECK:         %[[BITS:.*]] = llvm.mlir.constant(32 : i8) : i8
// CHECK:         %[[F0:.*]] = llvm.getelementptr %[[T]][0, 0]
// CHECK-NEXT:    llvm.store %[[DATA]], %[[F0]]
// CHECK:         %[[F1:.*]] = llvm.getelementptr %[[T]][0, 1]
// CHECK-NEXT:    llvm.store %[[CPU]], %[[F1]]
// CHECK:         %[[F3:.*]] = llvm.getelementptr %[[T]][0, 3]
// CHECK-NEXT:    llvm.store %[[NDIM]], %[[F3]]
// CHECK:         %[[F7:.*]] = llvm.getelementptr %[[T]][0, 7]
// CHECK-NEXT:    llvm.store %[[SHAPE]], %[[F7]]
// CHECK:         %[[D1:.*]] = llvm.getelementptr %[[SHAPE]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[STR:.*]] = llvm.mlir.addressof @__ember_str.args.0 : !llvm.ptr
// CHECK:         %[[WIDE_N:.*]] = arith.extsi %[[N]] : i32 to i64
// CHECK:         %[[WIDE_X:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK:         %[[WIDE_I:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK:         %[[S0:.*]] = llvm.getelementptr %[[VALUES]][0]
// CHECK-NEXT:    llvm.store %[[T]], %[[S0]]
// CHECK-NEXT:    %[[C7:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK:         llvm.store %[[STR]], %{{.*}}
// CHECK-NEXT:    %[[C11:.*]] = llvm.mlir.constant(11 : i32) : i32
// CHECK:         llvm.store %[[WIDE_N]], %{{.*}} {alignment = 8 : i64} : i64, !llvm.ptr
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(0 : i32) : i32
// CHECK:         llvm.store %[[WIDE_X]], %{{.*}} {alignment = 8 : i64} : f64, !llvm.ptr
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(2 : i32) : i32
// CHECK:         llvm.store %[[WIDE_I]], %{{.*}} {alignment = 8 : i64} : i64, !llvm.ptr
// CHECK:         %[[NAME:.*]] = llvm.mlir.addressof @__ember_callee.args.1 : !llvm.ptr
// CHECK-NEXT:    %[[SLOT:.*]] = llvm.mlir.addressof @__ember_call_packed : !llvm.ptr
// CHECK-NEXT:    %[[HOOK:.*]] = llvm.load %[[SLOT]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         cf.cond_br %{{.*}}, ^[[NO_HOOK:.*]], ^[[CALL:.*]]
// CHECK-NEXT:  ^[[NO_HOOK]]:
// CHECK-NEXT:    %[[MISSING:.*]] = llvm.mlir.addressof @__ember_err.args.2 : !llvm.ptr
// CHECK-NEXT:    func.return %[[MISSING]] : !llvm.ptr
// CHECK-NEXT:  ^[[CALL]]:
// CHECK:         llvm.store %{{.*}}, %[[RET_CODE]]
// CHECK:         %[[RC:.*]] = llvm.call %[[HOOK]](%[[NAME]], %[[VALUES]], %[[CODES]], %{{.*}}, %[[RET]], %[[RET_CODE]])
// CHECK:         %[[BAD:.*]] = llvm.icmp "ne" %[[RC]], %{{.*}} : i32
// CHECK-NEXT:    cf.cond_br %[[BAD]], ^[[FAILED:.*]], ^[[AFTER:.*]]
// CHECK-NEXT:  ^[[FAILED]]:
// CHECK:         %[[HOST:.*]] = llvm.load %[[RET]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[OURS:.*]] = llvm.mlir.addressof @__ember_err.args.3 : !llvm.ptr
// CHECK-NEXT:    %[[MESSAGE:.*]] = llvm.select %{{.*}}, %[[HOST]], %[[OURS]] : i1, !llvm.ptr
// CHECK-NEXT:    func.return %[[MESSAGE]] : !llvm.ptr
// CHECK-NEXT:  ^[[AFTER]]:
// CHECK-NEXT:    %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    func.return %[[NULL]] : !llvm.ptr
// CHECK:       llvm.mlir.global weak @__ember_call_packed() {addr_space = 0 : i32, alignment = 8 : i64} : !llvm.ptr {
// CHECK-NEXT:    %{{.*}} = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    llvm.return
// CHECK:       llvm.mlir.global internal constant @__ember_str.args.0("s\00")
// CHECK:       llvm.mlir.global internal constant @__ember_callee.args.1("my.f\00")
// CHECK:       llvm.mlir.global internal constant @__ember_err.args.2("args: no host function table: cannot call 'my.f'\00")
// CHECK:       llvm.mlir.global internal constant @__ember_err.args.3("args: callback 'my.f' failed\00")
func.func @args(%A: memref<4x2xf32>, %n: i32, %i: index) {
  %x = arith.constant 2.5 : f32
  loop.call_packed "my.f"(%A, "s", %n, %x, %i) : memref<4x2xf32>, i32, f32, index
  func.return
}

// -----

// Inside a loop (a CFG after convert-scf-to-cf) a failed call returns from the
// function, leaving the loop; every return of the function returns null. One
// hook for the module, however many calls.

// CHECK-LABEL: func.func @in_loop(
// CHECK-SAME:      -> !llvm.ptr attributes {ember.fallible} {
// CHECK:         cf.br ^[[HEADER:.*]](%{{.*}} : index)
// CHECK:       ^[[HEADER]](%[[I:.*]]: index):
// CHECK:         cf.cond_br %{{.*}}, ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK:       ^[[BODY]]:
// CHECK:         %[[IV:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK:         cf.cond_br %{{.*}}, ^[[NO_HOOK:.*]], ^[[CALL:.*]]
// CHECK:       ^[[NO_HOOK]]:
// CHECK:         func.return %{{.*}} : !llvm.ptr
// CHECK:       ^[[CALL]]:
// CHECK:         llvm.call
// CHECK:         cf.cond_br %{{.*}}, ^[[FAILED:.*]], ^[[AFTER:.*]]
// CHECK:       ^[[FAILED]]:
// CHECK:         func.return %{{.*}} : !llvm.ptr
// CHECK:       ^[[AFTER]]:
// CHECK:         cf.br ^[[HEADER]](%{{.*}} : index)
// CHECK:       ^[[EXIT]]:
// CHECK-NEXT:    %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    func.return %[[NULL]] : !llvm.ptr
// CHECK-NOT:   loop.call_packed
// CHECK:       llvm.mlir.global weak @__ember_call_packed()
// CHECK-NOT:   llvm.mlir.global weak @__ember_call_packed()
func.func @in_loop(%A: memref<8xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  cf.br ^header(%c0 : index)
^header(%i: index):
  %more = arith.cmpi slt, %i, %c8 : index
  cf.cond_br %more, ^body, ^exit
^body:
  loop.call_packed "my.step"(%A, %i) : memref<8xi8>, index
  %next = arith.addi %i, %c1 : index
  cf.br ^header(%next : index)
^exit:
  func.return
}

func.func @also_calls() {
  loop.call_packed "my.other"()
  func.return
}

// -----

// A function that calls a fallible one is fallible: it returns the callee's
// message. A function that calls none is left alone.

// CHECK-LABEL: func.func private @inner() -> !llvm.ptr attributes {ember.fallible}
// CHECK-LABEL: func.func @outer(
// CHECK-SAME:      -> !llvm.ptr attributes {ember.fallible} {
// CHECK-NEXT:    %[[MESSAGE:.*]] = func.call @inner() : () -> !llvm.ptr
// CHECK-NEXT:    %[[AS_INT:.*]] = llvm.ptrtoint %[[MESSAGE]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[BAD:.*]] = llvm.icmp "ne" %[[AS_INT]], %[[ZERO]] : i64
// CHECK-NEXT:    cf.cond_br %[[BAD]], ^[[FAILED:.*]], ^[[AFTER:.*]]
// CHECK-NEXT:  ^[[FAILED]]:
// CHECK-NEXT:    func.return %[[MESSAGE]] : !llvm.ptr
// CHECK-NEXT:  ^[[AFTER]]:
// CHECK-NEXT:    arith.constant
// CHECK-LABEL: func.func @unrelated(%{{.*}}: memref<4xf32>) {
func.func private @inner() {
  loop.call_packed "my.ping"()
  func.return
}

func.func @outer(%A: memref<4xf32>) {
  func.call @inner() : () -> ()
  %c0 = arith.constant 0 : index
  %x = memref.load %A[%c0] : memref<4xf32>
  memref.store %x, %A[%c0] : memref<4xf32>
  func.return
}

func.func @unrelated(%A: memref<4xf32>) {
  func.return
}

// RUN: ember-opt %s --split-input-file -p convert-cf-to-llvm | filecheck %s

// Branches carry their operands in llvm types; the arguments of non-entry blocks are
// retyped (index → i64, memref → !llvm.ptr) and cast back for unconverted users.

func.func @loop(%n: index, %A: memref<8xf32>) {
  %c0 = "test.op"() : () -> index
  cf.br ^header(%c0, %A : index, memref<8xf32>)
^header(%i: index, %B: memref<8xf32>):
  %more = "test.op"(%i, %n) : (index, index) -> i1
  cf.cond_br %more, ^body, ^exit
^body:
  "test.op"(%B, %i) : (memref<8xf32>, index) -> ()
  cf.br ^header(%i, %B : index, memref<8xf32>)
^exit:
  func.return
}

// CHECK-LABEL: func.func @loop(
// CHECK-SAME:      %[[N:.*]]: index, %[[A:.*]]: memref<8xf32>) {
// CHECK:         %[[C0:.*]] = "test.op"() : () -> index
// CHECK:         %[[C0L:.*]] = builtin.unrealized_conversion_cast %[[C0]] : index to i64
// CHECK:         %[[AL:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<8xf32> to !llvm.ptr
// CHECK:         llvm.br ^[[HEADER:.*]](%[[C0L]], %[[AL]] : i64, !llvm.ptr)
// CHECK:       ^[[HEADER]](%[[I:.*]]: i64, %[[B:.*]]: !llvm.ptr):
// CHECK-DAG:     %[[BM:.*]] = builtin.unrealized_conversion_cast %[[B]] : !llvm.ptr to memref<8xf32>
// CHECK-DAG:     %[[II:.*]] = builtin.unrealized_conversion_cast %[[I]] : i64 to index
// CHECK:         %[[MORE:.*]] = "test.op"(%[[II]], %[[N]]) : (index, index) -> i1
// CHECK:         llvm.cond_br %[[MORE]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK:       ^[[BODY]]:
// CHECK:         "test.op"(%[[BM]], %[[II]]) : (memref<8xf32>, index) -> ()
// CHECK:         llvm.br ^[[HEADER]](%{{.*}}, %{{.*}} : i64, !llvm.ptr)
// CHECK:       ^[[EXIT]]:
// CHECK-NEXT:    func.return
// CHECK-NOT:     cf.

// -----

// cond_br passes operands to both successors.

func.func @select(%c: i1, %x: index, %y: f32) -> index {
  cf.cond_br %c, ^a(%x, %y : index, f32), ^b(%x : index)
^a(%i: index, %f: f32):
  func.return %i : index
^b(%j: index):
  func.return %j : index
}

// CHECK-LABEL: func.func @select(
// CHECK:         llvm.cond_br %{{.*}}, ^[[A:.*]](%{{.*}}, %{{.*}} : i64, f32), ^[[B:.*]](%{{.*}} : i64)
// CHECK:       ^[[A]](%{{.*}}: i64, %{{.*}}: f32):
// CHECK:       ^[[B]](%{{.*}}: i64):

// -----

// cf.switch becomes ember's llvm.switch; an index flag is switched on as i64.

func.func @switch(%k: index) -> i32 {
  cf.switch %k : index, [
    default: ^other,
    0: ^zero,
    5: ^five
  ]
^zero:
  %a = "test.op"() : () -> i32
  func.return %a : i32
^five:
  %b = "test.op"() : () -> i32
  func.return %b : i32
^other:
  %c = "test.op"() : () -> i32
  func.return %c : i32
}

// CHECK-LABEL: func.func @switch(
// CHECK-SAME:      %[[K:.*]]: index)
// CHECK:         %[[KL:.*]] = builtin.unrealized_conversion_cast %[[K]] : index to i64
// CHECK:         llvm.switch %[[KL]] : i64, ^[[OTHER:[a-z0-9_]+]] [0: ^[[ZERO:[a-z0-9_]+]], 5: ^[[FIVE:[a-z0-9_]+]]]
// CHECK:       ^[[ZERO]]:
// CHECK:       ^[[FIVE]]:
// CHECK:       ^[[OTHER]]:

// -----

// cf.assert splits its block: on failure the message goes to stderr and the
// program aborts.

func.func @check(%ok: i1) -> i32 {
  cf.assert %ok, "ok must hold"
  %r = "test.op"() : () -> i32
  func.return %r : i32
}

// CHECK-LABEL: func.func @check(
// CHECK-SAME:      %[[OK:.*]]: i1)
// CHECK-NEXT:    llvm.cond_br %[[OK]], ^[[CONT:.*]], ^[[FAIL:.*]]
// CHECK-NEXT:  ^[[CONT]]:
// CHECK-NEXT:    %[[R:.*]] = "test.op"() : () -> i32
// CHECK-NEXT:    func.return %[[R]] : i32
// CHECK-NEXT:  ^[[FAIL]]:
// CHECK-NEXT:    %[[FD:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:    %[[MSG:.*]] = llvm.mlir.addressof @[[GLOBAL:__ember_assert_[0-9a-f]+]] : !llvm.ptr
// CHECK-NEXT:    %[[LEN:.*]] = llvm.mlir.constant(31) : i64
// CHECK-NEXT:    %{{.*}} = llvm.call @write(%[[FD]], %[[MSG]], %[[LEN]]) : (i32, !llvm.ptr, i64) -> i64
// CHECK-NEXT:    llvm.call @abort() : () -> ()
// CHECK-NEXT:    llvm.unreachable
// CHECK:       llvm.func @write(i32, !llvm.ptr, i64) -> i64
// CHECK:       llvm.func @abort()
// CHECK:       llvm.mlir.global internal constant @[[GLOBAL]]("assertion failed: ok must hold\0A\00")

// RUN: ember-opt %s --allow-unregistered-dialect --split-input-file -p convert-index-to-llvm | filecheck %s

// xDSL has no index dialect: its ops are written in MLIR's generic form and parsed
// as unregistered ops. Everything becomes llvm on i64.

func.func @arithmetic(%a: index, %b: index) -> index {
  %0 = "index.add"(%a, %b) : (index, index) -> index
  %1 = "index.sub"(%0, %b) : (index, index) -> index
  %2 = "index.mul"(%1, %b) : (index, index) -> index
  %3 = "index.divs"(%2, %b) : (index, index) -> index
  %4 = "index.divu"(%3, %b) : (index, index) -> index
  %5 = "index.rems"(%4, %b) : (index, index) -> index
  %6 = "index.remu"(%5, %b) : (index, index) -> index
  %7 = "index.maxs"(%6, %b) : (index, index) -> index
  %8 = "index.maxu"(%7, %b) : (index, index) -> index
  %9 = "index.mins"(%8, %b) : (index, index) -> index
  %10 = "index.minu"(%9, %b) : (index, index) -> index
  %11 = "index.shl"(%10, %b) : (index, index) -> index
  %12 = "index.shrs"(%11, %b) : (index, index) -> index
  %13 = "index.shru"(%12, %b) : (index, index) -> index
  %14 = "index.and"(%13, %b) : (index, index) -> index
  %15 = "index.or"(%14, %b) : (index, index) -> index
  %16 = "index.xor"(%15, %b) : (index, index) -> index
  func.return %16 : index
}

// CHECK-LABEL: func.func @arithmetic(
// CHECK-SAME:      %[[A:.*]]: index, %[[B:.*]]: index) -> index {
// CHECK-NEXT:    %[[AL:.*]] = builtin.unrealized_conversion_cast %[[A]] : index to i64
// CHECK-NEXT:    %[[BL:.*]] = builtin.unrealized_conversion_cast %[[B]] : index to i64
// CHECK-NEXT:    %[[V0:.*]] = llvm.add %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %[[V1:.*]] = llvm.sub %[[V0]], %[[BL]] : i64
// CHECK-NEXT:    %[[V2:.*]] = llvm.mul %[[V1]], %[[BL]] : i64
// CHECK-NEXT:    %[[V3:.*]] = llvm.sdiv %[[V2]], %[[BL]] : i64
// CHECK-NEXT:    %[[V4:.*]] = llvm.udiv %[[V3]], %[[BL]] : i64
// CHECK-NEXT:    %[[V5:.*]] = llvm.srem %[[V4]], %[[BL]] : i64
// CHECK-NEXT:    %[[V6:.*]] = llvm.urem %[[V5]], %[[BL]] : i64
// CHECK-NEXT:    %[[V7:.*]] = llvm.call_intrinsic "llvm.smax.i64"(%[[V6]], %[[BL]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[V8:.*]] = llvm.call_intrinsic "llvm.umax.i64"(%[[V7]], %[[BL]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[V9:.*]] = llvm.call_intrinsic "llvm.smin.i64"(%[[V8]], %[[BL]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[V10:.*]] = llvm.call_intrinsic "llvm.umin.i64"(%[[V9]], %[[BL]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[V11:.*]] = llvm.shl %[[V10]], %[[BL]] : i64
// CHECK-NEXT:    %[[V12:.*]] = llvm.ashr %[[V11]], %[[BL]] : i64
// CHECK-NEXT:    %[[V13:.*]] = llvm.lshr %[[V12]], %[[BL]] : i64
// CHECK-NEXT:    %[[V14:.*]] = llvm.and %[[V13]], %[[BL]] : i64
// CHECK-NEXT:    %[[V15:.*]] = llvm.or %[[V14]], %[[BL]] : i64
// CHECK-NEXT:    %[[V16:.*]] = llvm.xor %[[V15]], %[[BL]] : i64
// CHECK-NEXT:    %[[R:.*]] = builtin.unrealized_conversion_cast %[[V16]] : i64 to index
// CHECK-NEXT:    func.return %[[R]] : index
// CHECK-NOT:     index.

// -----

func.func @rounding_division(%a: index, %b: index) -> (index, index, index) {
  %0 = "index.floordivs"(%a, %b) : (index, index) -> index
  %1 = "index.ceildivs"(%a, %b) : (index, index) -> index
  %2 = "index.ceildivu"(%a, %b) : (index, index) -> index
  func.return %0, %1, %2 : index, index, index
}

// CHECK-LABEL: func.func @rounding_division(
// CHECK:         %[[AL:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[BL:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[Q:.*]] = llvm.sdiv %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %[[R:.*]] = llvm.srem %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[INEXACT:.*]] = llvm.icmp "ne" %[[R]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[X:.*]] = llvm.xor %[[R]], %[[BL]] : i64
// CHECK-NEXT:    %[[DIFFER:.*]] = llvm.icmp "slt" %[[X]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[ADJUST:.*]] = llvm.and %[[INEXACT]], %[[DIFFER]] : i1
// CHECK-NEXT:    %[[STEP:.*]] = llvm.sext %[[ADJUST]] : i1 to i64
// CHECK-NEXT:    %[[FLOOR:.*]] = llvm.add %[[Q]], %[[STEP]] : i64
// CHECK:         llvm.icmp "sge"
// CHECK:         %[[STEP:.*]] = llvm.zext %{{.*}} : i1 to i64
// CHECK-NEXT:    %[[CEIL:.*]] = llvm.add %{{.*}}, %[[STEP]] : i64
// CHECK:         %[[UQ:.*]] = llvm.udiv %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %[[UR:.*]] = llvm.urem %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[UINEXACT:.*]] = llvm.icmp "ne" %[[UR]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[USTEP:.*]] = llvm.zext %[[UINEXACT]] : i1 to i64
// CHECK-NEXT:    %[[UCEIL:.*]] = llvm.add %[[UQ]], %[[USTEP]] : i64

// -----

func.func @cmp(%a: index, %b: index) {
  %0 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate eq>}> : (index, index) -> i1
  %1 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate ne>}> : (index, index) -> i1
  %2 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate slt>}> : (index, index) -> i1
  %3 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate sle>}> : (index, index) -> i1
  %4 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate sgt>}> : (index, index) -> i1
  %5 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate sge>}> : (index, index) -> i1
  %6 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate ult>}> : (index, index) -> i1
  %7 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate ule>}> : (index, index) -> i1
  %8 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate ugt>}> : (index, index) -> i1
  %9 = "index.cmp"(%a, %b) <{pred = #index<cmp_predicate uge>}> : (index, index) -> i1
  "test.op"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9) : (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) -> ()
  func.return
}

// CHECK-LABEL: func.func @cmp(
// CHECK-NEXT:    %[[AL:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[BL:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "eq" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ne" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "slt" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "sle" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "sgt" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "sge" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ult" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ule" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ugt" %[[AL]], %[[BL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.icmp "uge" %[[AL]], %[[BL]] : i64

// -----

// casts sign-extends or truncates, castu zero-extends or truncates; sizeof is 64.

func.func @constants_and_casts(%i: i32, %n: index, %w: i64) {
  %0 = "index.constant"() <{value = -42 : index}> : () -> index
  %1 = "index.bool.constant"() <{value = true}> : () -> i1
  %2 = "index.sizeof"() : () -> index
  %3 = "index.casts"(%i) : (i32) -> index
  %4 = "index.castu"(%i) : (i32) -> index
  %5 = "index.casts"(%n) : (index) -> i16
  %6 = "index.castu"(%n) : (index) -> i8
  %7 = "index.casts"(%w) : (i64) -> index
  "test.op"(%0, %1, %2, %3, %4, %5, %6, %7) : (index, i1, index, index, index, i16, i8, index) -> ()
  func.return
}

// CHECK-LABEL: func.func @constants_and_casts(
// CHECK-SAME:      %[[I:.*]]: i32, %[[N:.*]]: index, %[[W:.*]]: i64) {
// CHECK-NEXT:    %[[NL:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[C:.*]] = llvm.mlir.constant(-42) : i64
// CHECK-NEXT:    %[[CI:.*]] = builtin.unrealized_conversion_cast %[[C]] : i64 to index
// CHECK-NEXT:    %[[T:.*]] = llvm.mlir.constant(true) : i1
// CHECK-NEXT:    %[[S:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[SI:.*]] = builtin.unrealized_conversion_cast %[[S]] : i64 to index
// CHECK-NEXT:    %[[SX:.*]] = llvm.sext %[[I]] : i32 to i64
// CHECK-NEXT:    %[[SXI:.*]] = builtin.unrealized_conversion_cast %[[SX]] : i64 to index
// CHECK-NEXT:    %[[ZX:.*]] = llvm.zext %[[I]] : i32 to i64
// CHECK-NEXT:    %[[ZXI:.*]] = builtin.unrealized_conversion_cast %[[ZX]] : i64 to index
// CHECK-NEXT:    %[[T16:.*]] = llvm.trunc %[[NL]] : i64 to i16
// CHECK-NEXT:    %[[T8:.*]] = llvm.trunc %[[NL]] : i64 to i8
// CHECK-NEXT:    %[[WI:.*]] = builtin.unrealized_conversion_cast %[[W]] : i64 to index
// CHECK-NEXT:    "test.op"(%[[CI]], %[[T]], %[[SI]], %[[SXI]], %[[ZXI]], %[[T16]], %[[T8]], %[[WI]])

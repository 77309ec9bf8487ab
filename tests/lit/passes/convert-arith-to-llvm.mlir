// RUN: ember-opt %s --split-input-file -p convert-arith-to-llvm | filecheck %s

// Integer ops map one to one; overflow flags are kept.

func.func @integer(%a: i32, %b: i32) -> i32 {
  %0 = arith.addi %a, %b overflow<nsw, nuw> : i32
  %1 = arith.subi %0, %b overflow<nsw> : i32
  %2 = arith.muli %1, %b : i32
  %3 = arith.divsi %2, %b : i32
  %4 = arith.divui %3, %b : i32
  %5 = arith.remsi %4, %b : i32
  %6 = arith.remui %5, %b : i32
  %7 = arith.andi %6, %b : i32
  %8 = arith.ori %7, %b : i32
  %9 = arith.xori %8, %b : i32
  %10 = arith.shli %9, %b overflow<nuw> : i32
  %11 = arith.shrsi %10, %b : i32
  %12 = arith.shrui %11, %b : i32
  func.return %12 : i32
}

// CHECK-LABEL: func.func @integer(
// CHECK-SAME:      %[[A:.*]]: i32, %[[B:.*]]: i32) -> i32 {
// CHECK-NEXT:    %[[V0:.*]] = llvm.add %[[A]], %[[B]] overflow<nsw,nuw> : i32
// CHECK-NEXT:    %[[V1:.*]] = llvm.sub %[[V0]], %[[B]] overflow<nsw> : i32
// CHECK-NEXT:    %[[V2:.*]] = llvm.mul %[[V1]], %[[B]] : i32
// CHECK-NEXT:    %[[V3:.*]] = llvm.sdiv %[[V2]], %[[B]] : i32
// CHECK-NEXT:    %[[V4:.*]] = llvm.udiv %[[V3]], %[[B]] : i32
// CHECK-NEXT:    %[[V5:.*]] = llvm.srem %[[V4]], %[[B]] : i32
// CHECK-NEXT:    %[[V6:.*]] = llvm.urem %[[V5]], %[[B]] : i32
// CHECK-NEXT:    %[[V7:.*]] = llvm.and %[[V6]], %[[B]] : i32
// CHECK-NEXT:    %[[V8:.*]] = llvm.or %[[V7]], %[[B]] : i32
// CHECK-NEXT:    %[[V9:.*]] = llvm.xor %[[V8]], %[[B]] : i32
// CHECK-NEXT:    %[[V10:.*]] = llvm.shl %[[V9]], %[[B]] overflow<nuw> : i32
// CHECK-NEXT:    %[[V11:.*]] = llvm.ashr %[[V10]], %[[B]] : i32
// CHECK-NEXT:    %[[V12:.*]] = llvm.lshr %[[V11]], %[[B]] : i32
// CHECK-NEXT:    func.return %[[V12]] : i32
// CHECK-NOT:     arith.

// -----

// floordivsi and ceildivsi adjust the truncated quotient by one when the remainder
// is not zero and its sign differs from (agrees with) the divisor's: the i1 is
// extended and added, which also works on vectors (llvm.select wants a scalar i1).

func.func @rounding_division(%a: i64, %b: i64) -> (i64, i64, i64) {
  %f = arith.floordivsi %a, %b : i64
  %c = arith.ceildivsi %a, %b : i64
  %u = arith.ceildivui %a, %b : i64
  func.return %f, %c, %u : i64, i64, i64
}

// CHECK-LABEL: func.func @rounding_division(
// CHECK-SAME:      %[[A:.*]]: i64, %[[B:.*]]: i64)
// CHECK-NEXT:    %[[Q:.*]] = llvm.sdiv %[[A]], %[[B]] : i64
// CHECK-NEXT:    %[[R:.*]] = llvm.srem %[[A]], %[[B]] : i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[INEXACT:.*]] = llvm.icmp "ne" %[[R]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[X:.*]] = llvm.xor %[[R]], %[[B]] : i64
// CHECK-NEXT:    %[[DIFFER:.*]] = llvm.icmp "slt" %[[X]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[ADJUST:.*]] = llvm.and %[[INEXACT]], %[[DIFFER]] : i1
// CHECK-NEXT:    %[[MINUS_ONE:.*]] = llvm.sext %[[ADJUST]] : i1 to i64
// CHECK-NEXT:    %[[FLOOR:.*]] = llvm.add %[[Q]], %[[MINUS_ONE]] : i64
// CHECK-NEXT:    %[[Q:.*]] = llvm.sdiv %[[A]], %[[B]] : i64
// CHECK-NEXT:    %[[R:.*]] = llvm.srem %[[A]], %[[B]] : i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[INEXACT:.*]] = llvm.icmp "ne" %[[R]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[X:.*]] = llvm.xor %[[R]], %[[B]] : i64
// CHECK-NEXT:    %[[AGREE:.*]] = llvm.icmp "sge" %[[X]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[ADJUST:.*]] = llvm.and %[[INEXACT]], %[[AGREE]] : i1
// CHECK-NEXT:    %[[PLUS_ONE:.*]] = llvm.zext %[[ADJUST]] : i1 to i64
// CHECK-NEXT:    %[[CEIL:.*]] = llvm.add %[[Q]], %[[PLUS_ONE]] : i64
// CHECK-NEXT:    %[[UQ:.*]] = llvm.udiv %[[A]], %[[B]] : i64
// CHECK-NEXT:    %[[UR:.*]] = llvm.urem %[[A]], %[[B]] : i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[UINEXACT:.*]] = llvm.icmp "ne" %[[UR]], %[[ZERO]] : i64
// CHECK-NEXT:    %[[UPLUS_ONE:.*]] = llvm.zext %[[UINEXACT]] : i1 to i64
// CHECK-NEXT:    %[[UCEIL:.*]] = llvm.add %[[UQ]], %[[UPLUS_ONE]] : i64
// CHECK-NEXT:    func.return %[[FLOOR]], %[[CEIL]], %[[UCEIL]] : i64, i64, i64

// -----

func.func @min_max(%a: i16, %b: i16, %v: vector<4xi8>) -> (i16, i16, i16, i16, vector<4xi8>) {
  %0 = arith.maxsi %a, %b : i16
  %1 = arith.minsi %a, %b : i16
  %2 = arith.maxui %a, %b : i16
  %3 = arith.minui %a, %b : i16
  %4 = arith.maxsi %v, %v : vector<4xi8>
  func.return %0, %1, %2, %3, %4 : i16, i16, i16, i16, vector<4xi8>
}

// CHECK-LABEL: func.func @min_max(
// CHECK-SAME:      %[[A:.*]]: i16, %[[B:.*]]: i16, %[[V:.*]]: vector<4xi8>)
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.smax.i16"(%[[A]], %[[B]]) : (i16, i16) -> i16
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.smin.i16"(%[[A]], %[[B]]) : (i16, i16) -> i16
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.umax.i16"(%[[A]], %[[B]]) : (i16, i16) -> i16
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.umin.i16"(%[[A]], %[[B]]) : (i16, i16) -> i16
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.smax.v4i8"(%[[V]], %[[V]]) : (vector<4xi8>, vector<4xi8>) -> vector<4xi8>

// -----

// Float ops carry their fastmath flags; addf, subf and mulf also get `contract`,
// so that LLVM fuses a multiply feeding an add into an FMA.

func.func @float(%x: f32, %y: f32) -> f32 {
  %0 = arith.addf %x, %y fastmath<fast> : f32
  %1 = arith.subf %0, %y : f32
  %2 = arith.mulf %1, %y fastmath<nnan, ninf> : f32
  %3 = arith.divf %2, %y : f32
  %4 = arith.negf %3 fastmath<nsz> : f32
  func.return %4 : f32
}

// CHECK-LABEL: func.func @float(
// CHECK-SAME:      %[[X:.*]]: f32, %[[Y:.*]]: f32) -> f32 {
// CHECK-NEXT:    %[[V0:.*]] = llvm.fadd %[[X]], %[[Y]] {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK-NEXT:    %[[V1:.*]] = llvm.fsub %[[V0]], %[[Y]] {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK-NEXT:    %[[V2:.*]] = llvm.fmul %[[V1]], %[[Y]] {fastmathFlags = #llvm.fastmath<nnan,ninf,contract>} : f32
// CHECK-NEXT:    %[[V3:.*]] = llvm.fdiv %[[V2]], %[[Y]] : f32
// CHECK-NEXT:    %[[V4:.*]] = llvm.fneg %[[V3]] {fastmathFlags = #llvm.fastmath<nsz>} : f32
// CHECK-NEXT:    func.return %[[V4]] : f32

// -----

func.func @float_min_max(%x: vector<8xf32>, %y: vector<8xf32>, %s: f64) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, f64) {
  %0 = arith.maximumf %x, %y : vector<8xf32>
  %1 = arith.minimumf %x, %y fastmath<nnan> : vector<8xf32>
  %2 = arith.maxnumf %x, %y : vector<8xf32>
  %3 = arith.minnumf %s, %s : f64
  func.return %0, %1, %2, %3 : vector<8xf32>, vector<8xf32>, vector<8xf32>, f64
}

// CHECK-LABEL: func.func @float_min_max(
// CHECK-SAME:      %[[X:.*]]: vector<8xf32>, %[[Y:.*]]: vector<8xf32>, %[[S:.*]]: f64)
// CHECK-NEXT:    llvm.call_intrinsic "llvm.maximum.v8f32"(%[[X]], %[[Y]]) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    llvm.call_intrinsic "llvm.minimum.v8f32"(%[[X]], %[[Y]]) {fastmathFlags = #llvm.fastmath<nnan>} : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    llvm.call_intrinsic "llvm.maxnum.v8f32"(%[[X]], %[[Y]]) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    llvm.call_intrinsic "llvm.minnum.f64"(%[[S]], %[[S]]) : (f64, f64) -> f64

// -----

func.func @cmpi(%a: i32, %b: i32) {
  %0 = arith.cmpi eq, %a, %b : i32
  %1 = arith.cmpi ne, %a, %b : i32
  %2 = arith.cmpi slt, %a, %b : i32
  %3 = arith.cmpi sle, %a, %b : i32
  %4 = arith.cmpi sgt, %a, %b : i32
  %5 = arith.cmpi sge, %a, %b : i32
  %6 = arith.cmpi ult, %a, %b : i32
  %7 = arith.cmpi ule, %a, %b : i32
  %8 = arith.cmpi ugt, %a, %b : i32
  %9 = arith.cmpi uge, %a, %b : i32
  "test.op"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9) : (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) -> ()
  func.return
}

// CHECK-LABEL: func.func @cmpi(
// CHECK-SAME:      %[[A:.*]]: i32, %[[B:.*]]: i32) {
// CHECK-NEXT:    %{{.*}} = llvm.icmp "eq" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ne" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "slt" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "sle" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "sgt" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "sge" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ult" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ule" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "ugt" %[[A]], %[[B]] : i32
// CHECK-NEXT:    %{{.*}} = llvm.icmp "uge" %[[A]], %[[B]] : i32

// -----

// cmpf false and true are constants; the other predicates keep their names.

func.func @cmpf(%x: f64, %y: f64) {
  %0 = arith.cmpf false, %x, %y : f64
  %1 = arith.cmpf oeq, %x, %y : f64
  %2 = arith.cmpf ogt, %x, %y : f64
  %3 = arith.cmpf oge, %x, %y : f64
  %4 = arith.cmpf olt, %x, %y : f64
  %5 = arith.cmpf ole, %x, %y : f64
  %6 = arith.cmpf one, %x, %y : f64
  %7 = arith.cmpf ord, %x, %y : f64
  %8 = arith.cmpf ueq, %x, %y : f64
  %9 = arith.cmpf ugt, %x, %y : f64
  %10 = arith.cmpf uge, %x, %y : f64
  %11 = arith.cmpf ult, %x, %y : f64
  %12 = arith.cmpf ule, %x, %y : f64
  %13 = arith.cmpf une, %x, %y : f64
  %14 = arith.cmpf uno, %x, %y : f64
  %15 = arith.cmpf true, %x, %y : f64
  "test.op"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15) : (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) -> ()
  func.return
}

// CHECK-LABEL: func.func @cmpf(
// CHECK-SAME:      %[[X:.*]]: f64, %[[Y:.*]]: f64) {
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "oeq" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "ogt" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "oge" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "olt" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "ole" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "one" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "ord" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "ueq" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "ugt" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "uge" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "ult" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "ule" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "une" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.fcmp "uno" %[[X]], %[[Y]] : f64
// CHECK-NEXT:    %{{.*}} = llvm.mlir.constant(true) : i1

// -----

func.func @select(%c: i1, %x: vector<4xf32>, %y: vector<4xf32>, %i: index, %j: index) -> (vector<4xf32>, index) {
  %0 = arith.select %c, %x, %y : vector<4xf32>
  %1 = arith.select %c, %i, %j : index
  func.return %0, %1 : vector<4xf32>, index
}

// CHECK-LABEL: func.func @select(
// CHECK-SAME:      %[[C:.*]]: i1, %[[X:.*]]: vector<4xf32>, %[[Y:.*]]: vector<4xf32>, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK-NEXT:    %[[IL:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK-NEXT:    %[[JL:.*]] = builtin.unrealized_conversion_cast %[[J]] : index to i64
// CHECK-NEXT:    %[[V:.*]] = llvm.select %[[C]], %[[X]], %[[Y]] : i1, vector<4xf32>
// CHECK-NEXT:    %[[S:.*]] = llvm.select %[[C]], %[[IL]], %[[JL]] : i1, i64
// CHECK-NEXT:    %[[SI:.*]] = builtin.unrealized_conversion_cast %[[S]] : i64 to index
// CHECK-NEXT:    func.return %[[V]], %[[SI]] : vector<4xf32>, index

// -----

func.func @casts(%i8: i8, %i32: i32, %f16: f16, %f32: f32, %f64: f64, %i: index) {
  %0 = arith.extsi %i8 : i8 to i32
  %1 = arith.extui %i8 : i8 to i32
  %2 = arith.trunci %i32 : i32 to i8
  %3 = arith.extf %f16 : f16 to f32
  %4 = arith.truncf %f64 : f64 to f32
  %5 = arith.sitofp %i32 : i32 to f64
  %6 = arith.uitofp %i32 : i32 to f32
  %7 = arith.fptosi %f32 : f32 to i64
  %8 = arith.fptoui %f64 : f64 to i8
  %9 = arith.bitcast %f32 : f32 to i32
  %10 = arith.index_cast %i32 : i32 to index
  %11 = arith.index_cast %i : index to i8
  %12 = arith.index_cast %i : index to i64
  %13 = arith.bitcast %i : index to i64
  "test.op"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13) : (i32, i32, i8, f32, f32, f64, f32, i64, i8, i32, index, i8, i64, i64) -> ()
  func.return
}

// CHECK-LABEL: func.func @casts(
// CHECK-SAME:      %[[I8:.*]]: i8, %[[I32:.*]]: i32, %[[F16:.*]]: f16, %[[F32:.*]]: f32, %[[F64:.*]]: f64, %[[I:.*]]: index)
// CHECK-NEXT:    %[[IL:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK-NEXT:    %[[V0:.*]] = llvm.sext %[[I8]] : i8 to i32
// CHECK-NEXT:    %[[V1:.*]] = llvm.zext %[[I8]] : i8 to i32
// CHECK-NEXT:    %[[V2:.*]] = llvm.trunc %[[I32]] : i32 to i8
// CHECK-NEXT:    %[[V3:.*]] = llvm.fpext %[[F16]] : f16 to f32
// CHECK-NEXT:    %[[V4:.*]] = llvm.fptrunc %[[F64]] : f64 to f32
// CHECK-NEXT:    %[[V5:.*]] = llvm.sitofp %[[I32]] : i32 to f64
// CHECK-NEXT:    %[[V6:.*]] = llvm.uitofp %[[I32]] : i32 to f32
// CHECK-NEXT:    %[[V7:.*]] = llvm.fptosi %[[F32]] : f32 to i64
// CHECK-NEXT:    %[[V8:.*]] = llvm.fptoui %[[F64]] : f64 to i8
// CHECK-NEXT:    %[[V9:.*]] = llvm.bitcast %[[F32]] : f32 to i32
// CHECK-NEXT:    %[[V10:.*]] = llvm.sext %[[I32]] : i32 to i64
// CHECK-NEXT:    %[[V10I:.*]] = builtin.unrealized_conversion_cast %[[V10]] : i64 to index
// CHECK-NEXT:    %[[V11:.*]] = llvm.trunc %[[IL]] : i64 to i8
// CHECK-NEXT:    "test.op"(%[[V0]], %[[V1]], %[[V2]], %[[V3]], %[[V4]], %[[V5]], %[[V6]], %[[V7]], %[[V8]], %[[V9]], %[[V10I]], %[[V11]], %[[IL]], %[[IL]])

// -----

// Scalar, vector and index constants; index is i64.

func.func @constants() {
  %0 = arith.constant 42 : i32
  %1 = arith.constant -1 : i8
  %2 = arith.constant true
  %3 = arith.constant 2.5 : f32
  %4 = arith.constant 7 : index
  %5 = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
  %6 = arith.constant dense<0.5> : vector<2xf64>
  %7 = arith.constant dense<[3, 4]> : vector<2xindex>
  "test.op"(%0, %1, %2, %3, %4, %5, %6, %7) : (i32, i8, i1, f32, index, vector<4xi32>, vector<2xf64>, vector<2xindex>) -> ()
  func.return
}

// CHECK-LABEL: func.func @constants() {
// CHECK-NEXT:    %[[V0:.*]] = llvm.mlir.constant(42 : i32) : i32
// CHECK-NEXT:    %[[V1:.*]] = llvm.mlir.constant(-1 : i8) : i8
// CHECK-NEXT:    %[[V2:.*]] = llvm.mlir.constant(true) : i1
// CHECK-NEXT:    %[[V3:.*]] = llvm.mlir.constant(2.500000e+00 : f32) : f32
// CHECK-NEXT:    %[[V4:.*]] = llvm.mlir.constant(7) : i64
// CHECK-NEXT:    %[[V4I:.*]] = builtin.unrealized_conversion_cast %[[V4]] : i64 to index
// CHECK-NEXT:    %[[V5:.*]] = llvm.mlir.constant(dense<[1, 2, 3, 4]> : vector<4xi32>) : vector<4xi32>
// CHECK-NEXT:    %[[V6:.*]] = llvm.mlir.constant(dense<5.000000e-01> : vector<2xf64>) : vector<2xf64>
// CHECK-NEXT:    %[[V7:.*]] = llvm.mlir.constant(dense<[3, 4]> : vector<2xi64>) : vector<2xi64>
// CHECK-NEXT:    %[[V7I:.*]] = builtin.unrealized_conversion_cast %[[V7]] : vector<2xi64> to vector<2xindex>
// CHECK-NEXT:    "test.op"(%[[V0]], %[[V1]], %[[V2]], %[[V3]], %[[V4I]], %[[V5]], %[[V6]], %[[V7I]])

// -----

// An index value from unconverted code is cast once, after its definition, for all
// its users; a result consumed by converted ops is used directly; results
// consumed elsewhere are cast back to index.

func.func @index(%n: index) -> index {
  %c = arith.constant 4 : index
  %0 = arith.muli %n, %c : index
  %1 = arith.addi %0, %n : index
  %2 = arith.floordivsi %1, %c : index
  func.return %2 : index
}

// CHECK-LABEL: func.func @index(
// CHECK-SAME:      %[[N:.*]]: index) -> index {
// CHECK-NEXT:    %[[NL:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[C:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[M:.*]] = llvm.mul %[[NL]], %[[C]] : i64
// CHECK-NEXT:    %[[S:.*]] = llvm.add %[[M]], %[[NL]] : i64
// CHECK-NEXT:    %{{.*}} = llvm.sdiv %[[S]], %[[C]] : i64
// CHECK:         %[[F:.*]] = llvm.add
// CHECK-NEXT:    %[[FI:.*]] = builtin.unrealized_conversion_cast %[[F]] : i64 to index
// CHECK-NEXT:    func.return %[[FI]] : index
// CHECK-NOT:     builtin.unrealized_conversion_cast

// -----

func.func @extended(%a: i32, %b: i32, %v: vector<2xi64>) -> (i32, i1, i32, i32, i32, i32, vector<2xi64>, vector<2xi64>) {
  %sum, %overflow = arith.addui_extended %a, %b : i32, i1
  %ul, %uh = arith.mului_extended %a, %b : i32
  %sl, %sh = arith.mulsi_extended %a, %b : i32
  %vl, %vh = arith.mulsi_extended %v, %v : vector<2xi64>
  func.return %sum, %overflow, %ul, %uh, %sl, %sh, %vl, %vh : i32, i1, i32, i32, i32, i32, vector<2xi64>, vector<2xi64>
}

// CHECK-LABEL: func.func @extended(
// CHECK-SAME:      %[[A:.*]]: i32, %[[B:.*]]: i32, %[[V:.*]]: vector<2xi64>)
// CHECK-NEXT:    %[[SUM:.*]] = llvm.add %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[OVF:.*]] = llvm.icmp "ult" %[[SUM]], %[[A]] : i32
// CHECK-NEXT:    %[[AU:.*]] = llvm.zext %[[A]] : i32 to i64
// CHECK-NEXT:    %[[BU:.*]] = llvm.zext %[[B]] : i32 to i64
// CHECK-NEXT:    %[[PU:.*]] = llvm.mul %[[AU]], %[[BU]] : i64
// CHECK-NEXT:    %[[K:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[HU:.*]] = llvm.lshr %[[PU]], %[[K]] : i64
// CHECK-NEXT:    %[[UL:.*]] = llvm.trunc %[[PU]] : i64 to i32
// CHECK-NEXT:    %[[UH:.*]] = llvm.trunc %[[HU]] : i64 to i32
// CHECK-NEXT:    %[[AS:.*]] = llvm.sext %[[A]] : i32 to i64
// CHECK-NEXT:    %[[BS:.*]] = llvm.sext %[[B]] : i32 to i64
// CHECK-NEXT:    %[[PS:.*]] = llvm.mul %[[AS]], %[[BS]] : i64
// CHECK-NEXT:    %[[K:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[HS:.*]] = llvm.lshr %[[PS]], %[[K]] : i64
// CHECK-NEXT:    %[[SL:.*]] = llvm.trunc %[[PS]] : i64 to i32
// CHECK-NEXT:    %[[SH:.*]] = llvm.trunc %[[HS]] : i64 to i32
// Vectors of i128 constants are built lane by lane (xDSL has no 128-bit dense).
// CHECK-NEXT:    %[[VA:.*]] = llvm.sext %[[V]] : vector<2xi64> to vector<2xi128>
// CHECK-NEXT:    %[[VB:.*]] = llvm.sext %[[V]] : vector<2xi64> to vector<2xi128>
// CHECK-NEXT:    %[[VP:.*]] = llvm.mul %[[VA]], %[[VB]] : vector<2xi128>
// CHECK-NEXT:    %[[K:.*]] = llvm.mlir.constant(64 : i128) : i128
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : vector<2xi128>
// CHECK-NEXT:    %[[L0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[K0:.*]] = llvm.insertelement %[[K]], %[[U]][%[[L0]] : i64] : vector<2xi128>
// CHECK-NEXT:    %[[L1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[KV:.*]] = llvm.insertelement %[[K]], %[[K0]][%[[L1]] : i64] : vector<2xi128>
// CHECK-NEXT:    %[[VH:.*]] = llvm.lshr %[[VP]], %[[KV]] : vector<2xi128>
// CHECK-NEXT:    %[[VLO:.*]] = llvm.trunc %[[VP]] : vector<2xi128> to vector<2xi64>
// CHECK-NEXT:    %[[VHI:.*]] = llvm.trunc %[[VH]] : vector<2xi128> to vector<2xi64>
// CHECK-NEXT:    func.return %[[SUM]], %[[OVF]], %[[UL]], %[[UH]], %[[SL]], %[[SH]], %[[VLO]], %[[VHI]]

// -----

// Under ember's bare-pointer convention a memref is an !llvm.ptr: select picks one
// pointer, bitcast keeps it.

func.func @memrefs(%c: i1, %a: memref<4xf32>, %b: memref<4xf32>) -> memref<4xi32> {
  %0 = arith.select %c, %a, %b : memref<4xf32>
  %1 = arith.bitcast %0 : memref<4xf32> to memref<4xi32>
  func.return %1 : memref<4xi32>
}

// CHECK-LABEL: func.func @memrefs(
// CHECK-SAME:      %[[C:.*]]: i1, %[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>) -> memref<4xi32> {
// CHECK-NEXT:    %[[AP:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<4xf32> to !llvm.ptr
// CHECK-NEXT:    %[[BP:.*]] = builtin.unrealized_conversion_cast %[[B]] : memref<4xf32> to !llvm.ptr
// CHECK-NEXT:    %[[S:.*]] = llvm.select %[[C]], %[[AP]], %[[BP]] : i1, !llvm.ptr
// CHECK-NEXT:    %[[R:.*]] = builtin.unrealized_conversion_cast %[[S]] : !llvm.ptr to memref<4xi32>
// CHECK-NEXT:    func.return %[[R]] : memref<4xi32>

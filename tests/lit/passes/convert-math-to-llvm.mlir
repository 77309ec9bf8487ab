// RUN: ember-opt %s --split-input-file -p convert-math-to-llvm | filecheck %s

// Functions LLVM has an intrinsic for are called by their mangled name, on scalars
// and vectors alike, with the op's fastmath flags.

func.func @intrinsics(%x: f32, %v: vector<4xf64>) {
  %0 = math.absf %x : f32
  %1 = math.ceil %x : f32
  %2 = math.floor %x : f32
  %3 = math.round %x : f32
  %4 = math.roundeven %x : f32
  %5 = math.trunc %x : f32
  %6 = math.sqrt %x : f32
  %7 = math.exp %x fastmath<fast> : f32
  %8 = math.exp2 %x : f32
  %9 = math.log %x : f32
  %10 = math.log2 %x : f32
  %11 = math.log10 %x : f32
  %12 = math.sin %x : f32
  %13 = math.cos %x : f32
  %14 = math.tan %x : f32
  %15 = math.asin %x : f32
  %16 = math.acos %x : f32
  %17 = math.atan %x : f32
  %18 = math.sinh %x : f32
  %19 = math.cosh %x : f32
  %20 = math.tanh %x : f32
  %21 = math.tanh %v fastmath<afn> : vector<4xf64>
  func.return
}

// CHECK-LABEL: func.func @intrinsics(
// CHECK-SAME:      %[[X:.*]]: f32, %[[V:.*]]: vector<4xf64>) {
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.fabs.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.ceil.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.floor.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.round.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.roundeven.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.trunc.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.sqrt.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.exp.f32"(%[[X]]) {fastmathFlags = #llvm.fastmath<fast>} : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.exp2.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.log.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.log2.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.log10.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.sin.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.cos.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.tan.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.asin.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.acos.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.atan.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.sinh.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.cosh.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.tanh.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.tanh.v4f64"(%[[V]]) {fastmathFlags = #llvm.fastmath<afn>} : (vector<4xf64>) -> vector<4xf64>
// CHECK-NEXT:    func.return
// CHECK-NOT:     math.

// -----

func.func @binary(%x: f64, %y: f64, %v: vector<2xf32>) {
  %0 = math.powf %x, %y : f64
  %1 = math.atan2 %x, %y : f64
  %2 = math.copysign %v, %v : vector<2xf32>
  %3 = math.fma %x, %y, %x fastmath<contract> : f64
  func.return
}

// CHECK-LABEL: func.func @binary(
// CHECK-SAME:      %[[X:.*]]: f64, %[[Y:.*]]: f64, %[[V:.*]]: vector<2xf32>) {
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.pow.f64"(%[[X]], %[[Y]]) : (f64, f64) -> f64
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.atan2.f64"(%[[X]], %[[Y]]) : (f64, f64) -> f64
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.copysign.v2f32"(%[[V]], %[[V]]) : (vector<2xf32>, vector<2xf32>) -> vector<2xf32>
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.fma.f64"(%[[X]], %[[Y]], %[[X]]) {fastmathFlags = #llvm.fastmath<contract>} : (f64, f64, f64) -> f64

// -----

// Integer intrinsics: abs, ctlz and cttz take `i1 false`, so abs(INT_MIN), ctlz(0)
// and cttz(0) are defined as in math; index is i64.

func.func @integer(%i: i32, %n: index, %v: vector<4xi16>) -> index {
  %0 = math.absi %i : i32
  %1 = math.ctlz %n : index
  %2 = math.cttz %v : vector<4xi16>
  %3 = math.ctpop %i : i32
  func.return %1 : index
}

// CHECK-LABEL: func.func @integer(
// CHECK-SAME:      %[[I:.*]]: i32, %[[N:.*]]: index, %[[V:.*]]: vector<4xi16>) -> index {
// CHECK-NEXT:    %[[NL:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[F0:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.abs.i32"(%[[I]], %[[F0]]) : (i32, i1) -> i32
// CHECK-NEXT:    %[[F1:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %[[CTLZ:.*]] = llvm.call_intrinsic "llvm.ctlz.i64"(%[[NL]], %[[F1]]) : (i64, i1) -> i64
// CHECK-NEXT:    %[[CTLZI:.*]] = builtin.unrealized_conversion_cast %[[CTLZ]] : i64 to index
// CHECK-NEXT:    %[[F2:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.cttz.v4i16"(%[[V]], %[[F2]]) : (vector<4xi16>, i1) -> vector<4xi16>
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.ctpop.i32"(%[[I]]) : (i32) -> i32
// CHECK-NEXT:    func.return %[[CTLZI]] : index

// -----

// rsqrt is 1 / sqrt; fpowi is pow on the exponent converted to float (no
// compiler-rt __powi* call, any exponent width).

func.func @expanded(%x: f32, %n: i64, %v: vector<2xf64>, %m: vector<2xi32>) {
  %0 = math.rsqrt %x fastmath<fast> : f32
  %1 = math.fpowi %x, %n : f32, i64
  %2 = math.fpowi %v, %m : vector<2xf64>, vector<2xi32>
  func.return
}

// CHECK-LABEL: func.func @expanded(
// CHECK-SAME:      %[[X:.*]]: f32, %[[N:.*]]: i64, %[[V:.*]]: vector<2xf64>, %[[M:.*]]: vector<2xi32>) {
// CHECK-NEXT:    %[[ROOT:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[X]]) {fastmathFlags = #llvm.fastmath<fast>} : (f32) -> f32
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK-NEXT:    %{{.*}} = llvm.fdiv %[[ONE]], %[[ROOT]] {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK-NEXT:    %[[NF:.*]] = llvm.sitofp %[[N]] : i64 to f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.pow.f32"(%[[X]], %[[NF]]) : (f32, f32) -> f32
// CHECK-NEXT:    %[[MF:.*]] = llvm.sitofp %[[M]] : vector<2xi32> to vector<2xf64>
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.pow.v2f64"(%[[V]], %[[MF]]) : (vector<2xf64>, vector<2xf64>) -> vector<2xf64>

// -----

// Functions without an intrinsic call libm, declared once per module; f16 goes
// through float.

func.func @libm(%x: f32, %d: f64, %h: f16) {
  %0 = math.erf %x : f32
  %1 = math.erf %0 : f32
  %2 = math.erf %d fastmath<afn> : f64
  %3 = math.cbrt %x : f32
  %4 = math.expm1 %d : f64
  %5 = math.log1p %x : f32
  %6 = math.asinh %x : f32
  %7 = math.acosh %x : f32
  %8 = math.atanh %x : f32
  %9 = math.erf %h : f16
  func.return
}

// CHECK-LABEL: func.func @libm(
// CHECK-SAME:      %[[X:.*]]: f32, %[[D:.*]]: f64, %[[H:.*]]: f16) {
// CHECK-NEXT:    %[[E:.*]] = llvm.call @erff(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @erff(%[[E]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @erf(%[[D]]) {fastmathFlags = #llvm.fastmath<afn>} : (f64) -> f64
// CHECK-NEXT:    %{{.*}} = llvm.call @cbrtf(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @expm1(%[[D]]) : (f64) -> f64
// CHECK-NEXT:    %{{.*}} = llvm.call @log1pf(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @asinhf(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @acoshf(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @atanhf(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %[[HF:.*]] = llvm.fpext %[[H]] : f16 to f32
// CHECK-NEXT:    %[[HE:.*]] = llvm.call @erff(%[[HF]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.fptrunc %[[HE]] : f32 to f16
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  llvm.func @erff(f32) -> f32
// CHECK-NEXT:  llvm.func @erf(f64) -> f64
// CHECK-NEXT:  llvm.func @cbrtf(f32) -> f32
// CHECK-NEXT:  llvm.func @expm1(f64) -> f64
// CHECK-NEXT:  llvm.func @log1pf(f32) -> f32
// CHECK-NEXT:  llvm.func @asinhf(f32) -> f32
// CHECK-NEXT:  llvm.func @acoshf(f32) -> f32
// CHECK-NEXT:  llvm.func @atanhf(f32) -> f32
// CHECK-NOT:   llvm.func

// -----

// libm calls on vectors are scalarized, one call per lane.

func.func @libm_vector(%v: vector<2xf32>, %h: vector<2xf16>) -> vector<2xf32> {
  %0 = math.erf %v : vector<2xf32>
  %1 = math.erf %h : vector<2xf16>
  func.return %0 : vector<2xf32>
}

// CHECK-LABEL: func.func @libm_vector(
// CHECK-SAME:      %[[V:.*]]: vector<2xf32>, %[[H:.*]]: vector<2xf16>) -> vector<2xf32> {
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : vector<2xf32>
// CHECK-NEXT:    %[[I0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[X0:.*]] = llvm.extractelement %[[V]][%[[I0]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[Y0:.*]] = llvm.call @erff(%[[X0]]) : (f32) -> f32
// CHECK-NEXT:    %[[R0:.*]] = llvm.insertelement %[[Y0]], %[[U]][%[[I0]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[I1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[X1:.*]] = llvm.extractelement %[[V]][%[[I1]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[Y1:.*]] = llvm.call @erff(%[[X1]]) : (f32) -> f32
// CHECK-NEXT:    %[[R1:.*]] = llvm.insertelement %[[Y1]], %[[R0]][%[[I1]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : vector<2xf16>
// CHECK-NEXT:    %[[I0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[X0:.*]] = llvm.extractelement %[[H]][%[[I0]] : i64] : vector<2xf16>
// CHECK-NEXT:    %[[W0:.*]] = llvm.fpext %[[X0]] : f16 to f32
// CHECK-NEXT:    %[[Y0:.*]] = llvm.call @erff(%[[W0]]) : (f32) -> f32
// CHECK-NEXT:    %[[N0:.*]] = llvm.fptrunc %[[Y0]] : f32 to f16
// CHECK-NEXT:    %[[H0:.*]] = llvm.insertelement %[[N0]], %[[U]][%[[I0]] : i64] : vector<2xf16>
// CHECK:         llvm.insertelement %{{.*}}, %[[H0]][%{{.*}} : i64] : vector<2xf16>
// CHECK-NEXT:    func.return %[[R1]] : vector<2xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  llvm.func @erff(f32) -> f32

// -----

// An existing declaration is reused.

llvm.func @erff(f32) -> f32

func.func @declared(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  func.return %0 : f32
}

// CHECK:       llvm.func @erff(f32) -> f32
// CHECK-LABEL: func.func @declared(
// CHECK:         llvm.call @erff(%{{.*}}) : (f32) -> f32
// CHECK-NOT:   llvm.func @erff

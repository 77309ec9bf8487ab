// RUN: ember-opt %s | ember-opt | filecheck %s
// RUN: ember-opt %s --print-op-generic | ember-opt | filecheck %s

// dot.u8i8 on a scalar and on 1-D vectors of i32 lanes round-trips.

// CHECK-LABEL: func.func @dot(
// CHECK:         %{{.*}} = dot.u8i8 %acc, %a, %b : i32
// CHECK:         %{{.*}} = dot.u8i8 %vacc, %va, %vb : vector<16xi32>
func.func @dot(%acc: i32, %a: i32, %b: i32, %vacc: vector<16xi32>, %va: vector<16xi32>, %vb: vector<16xi32>) -> vector<16xi32> {
  %s = dot.u8i8 %acc, %a, %b : i32
  %v = dot.u8i8 %vacc, %va, %vb : vector<16xi32>
  func.return %v : vector<16xi32>
}

// dot.bf16: an f32 accumulator (scalar or vector) and i32 words of two
// bfloat16 numbers, one word per f32 lane; both types are printed.

// CHECK-LABEL: func.func @bf16(
// CHECK:         %{{.*}} = dot.bf16 %acc, %a, %b : f32, i32
// CHECK:         %{{.*}} = dot.bf16 %vacc, %va, %vb : vector<16xf32>, vector<16xi32>
// CHECK:         %{{.*}} = dot.bf16 %wacc, %wa, %wb : vector<4xf32>, vector<4xi32>
func.func @bf16(%acc: f32, %a: i32, %b: i32, %vacc: vector<16xf32>, %va: vector<16xi32>, %vb: vector<16xi32>, %wacc: vector<4xf32>, %wa: vector<4xi32>, %wb: vector<4xi32>) -> vector<16xf32> {
  %s = dot.bf16 %acc, %a, %b : f32, i32
  %v = dot.bf16 %vacc, %va, %vb : vector<16xf32>, vector<16xi32>
  %w = dot.bf16 %wacc, %wa, %wb : vector<4xf32>, vector<4xi32>
  func.return %v : vector<16xf32>
}

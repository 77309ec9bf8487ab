// RUN: ember-opt %s | ember-opt | filecheck %s

// dot.u8i8 on a scalar and on 1-D vectors of i32 lanes round-trips.

// CHECK-LABEL: func.func @dot(
// CHECK:         %{{.*}} = dot.u8i8 %acc, %a, %b : i32
// CHECK:         %{{.*}} = dot.u8i8 %vacc, %va, %vb : vector<16xi32>
func.func @dot(%acc: i32, %a: i32, %b: i32, %vacc: vector<16xi32>, %va: vector<16xi32>, %vb: vector<16xi32>) -> vector<16xi32> {
  %s = dot.u8i8 %acc, %a, %b : i32
  %v = dot.u8i8 %vacc, %va, %vb : vector<16xi32>
  func.return %v : vector<16xi32>
}

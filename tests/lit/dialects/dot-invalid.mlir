// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Lanes of four bytes are i32: no other integer type.

func.func @i64(%a: i64) -> i64 {
  %s = "dot.u8i8"(%a, %a, %a) : (i64, i64, i64) -> i64
  func.return %s : i64
}

// CHECK: Operation does not verify: operand 'acc' at position 0 does not verify:
// CHECK-NEXT: Expected attribute i32 but got i64

// -----

// The accumulator, the operands and the result are of one type.

func.func @mixed(%a: i32, %v: vector<4xi32>) -> i32 {
  %s = "dot.u8i8"(%a, %v, %v) : (i32, vector<4xi32>, vector<4xi32>) -> i32
  func.return %s : i32
}

// CHECK: Operation does not verify: operand 'lhs' at position 1 does not verify:
// CHECK-NEXT: attribute i32 expected from variable 'T', but got vector<4xi32>

// -----

// Only 1-D vectors.

func.func @two_d(%v: vector<2x4xi32>) -> vector<2x4xi32> {
  %s = "dot.u8i8"(%v, %v, %v) : (vector<2x4xi32>, vector<2x4xi32>, vector<2x4xi32>) -> vector<2x4xi32>
  func.return %s : vector<2x4xi32>
}

// CHECK: Operation does not verify: operand 'acc' at position 0 does not verify:

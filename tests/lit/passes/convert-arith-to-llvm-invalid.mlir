// RUN: ember-opt %s --split-input-file --verify-diagnostics -p convert-arith-to-llvm | filecheck %s

// Ops on tensors are not lowered to llvm: they must be bufferized first.

func.func @on_tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK: convert-arith-to-llvm: cannot lower 'arith.addf' in @on_tensors: expected integers, index or floats, 1-D vectors of them, or memrefs, got tensor<4xf32>

// -----

// LLVM vectors are one-dimensional.

func.func @nd_vector(%a: vector<2x4xi32>) -> vector<2x4xi32> {
  %0 = arith.addi %a, %a : vector<2x4xi32>
  func.return %0 : vector<2x4xi32>
}

// CHECK: convert-arith-to-llvm: cannot lower 'arith.addi' in @nd_vector: expected integers, index or floats, 1-D vectors of them, or memrefs, got vector<2x4xi32>

// -----

func.func @scalable_vector(%a: vector<[4]xf32>) -> vector<[4]xf32> {
  %0 = arith.mulf %a, %a : vector<[4]xf32>
  func.return %0 : vector<[4]xf32>
}

// CHECK: convert-arith-to-llvm: cannot lower 'arith.mulf' in @scalable_vector: expected integers, index or floats, 1-D vectors of them, or memrefs, got vector<[4]xf32>

// -----

// The diagnostic names the first op left, even if the rest would convert.

func.func @mixed(%a: i32, %t: tensor<2xi32>) -> tensor<2xi32> {
  %0 = arith.addi %a, %a : i32
  %1 = arith.constant dense<1> : tensor<2xi32>
  %2 = arith.addi %t, %1 : tensor<2xi32>
  func.return %2 : tensor<2xi32>
}

// CHECK: convert-arith-to-llvm: cannot lower 'arith.constant' in @mixed: expected integers, index or floats, 1-D vectors of them, or memrefs, got tensor<2xi32>

// -----

// xDSL's arith.cmpf has an i1 result even on vectors: not a lane-wise comparison.

func.func @vector_cmpf(%x: vector<8xf32>) -> i1 {
  %0 = arith.cmpf olt, %x, %x : vector<8xf32>
  func.return %0 : i1
}

// CHECK: convert-arith-to-llvm: cannot lower 'arith.cmpf' in @vector_cmpf: expected a vector<8xi1> result for a comparison of vector<8xf32>, got i1; compare lanes with llvm.icmp / llvm.fcmp

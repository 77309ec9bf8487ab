// RUN: ember-opt %s --split-input-file --verify-diagnostics -p convert-math-to-llvm | filecheck %s

// LLVM has no integer power.

func.func @ipowi(%a: i32, %b: i32) -> i32 {
  %0 = math.ipowi %a, %b : i32
  func.return %0 : i32
}

// CHECK: convert-math-to-llvm: cannot lower 'math.ipowi' in @ipowi: LLVM has no integer power; expand it to a loop first

// -----

// libm has no f128 functions ember calls.

func.func @erf_f128(%x: f128) -> f128 {
  %0 = math.erf %x : f128
  func.return %0 : f128
}

// CHECK: convert-math-to-llvm: cannot lower 'math.erf' in @erf_f128: expected f16, bf16, f32 or f64 for libm, got f128

// -----

func.func @on_tensors(%t: tensor<8xf32>) -> tensor<8xf32> {
  %0 = math.exp %t : tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// CHECK: convert-math-to-llvm: cannot lower 'math.exp' in @on_tensors: expected integers, index or floats, 1-D vectors of them, or memrefs, got tensor<8xf32>

// -----

// The libm function's name is taken by something that is not an llvm.func.

func.func private @erff(f32) -> f32

func.func @taken(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  func.return %0 : f32
}

// CHECK: convert-math-to-llvm: cannot lower 'math.erf' in @taken: cannot declare llvm.func @erff: the symbol is taken by 'func.func'

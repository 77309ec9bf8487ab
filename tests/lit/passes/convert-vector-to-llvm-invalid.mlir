// RUN: ember-opt %s -p convert-vector-to-llvm --split-input-file --verify-diagnostics | filecheck %s

// A vector op ember has no lowering for is named, with the function it is in.

func.func @print(%x: f32) {
  "vector.print"(%x) : (f32) -> ()
  func.return
}

// CHECK: convert-vector-to-llvm: cannot lower 'vector.print' in @print: ember has no lowering of it to the llvm dialect

// -----

func.func @masked(%A: memref<8xf32>, %m: vector<8xi1>, %p: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %v = vector.maskedload %A[%c0], %m, %p : memref<8xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
  func.return %v : vector<8xf32>
}

// CHECK: convert-vector-to-llvm: cannot lower 'vector.maskedload' in @masked: ember has no lowering of it to the llvm dialect

// -----

// LLVM vectors are one-dimensional.

func.func @two_d(%x: f32) -> vector<2x4xf32> {
  %v = vector.broadcast %x : f32 to vector<2x4xf32>
  func.return %v : vector<2x4xf32>
}

// CHECK: convert-vector-to-llvm: cannot lower 'vector.broadcast' in @two_d: expected integers, index or floats, 1-D vectors of them, or memrefs, got vector<2x4xf32>

// -----

func.func @shuffle_lengths(%a: vector<4xf32>, %b: vector<2xf32>) -> vector<2xf32> {
  %v = vector.shuffle %a, %b [0, 5] : vector<4xf32>, vector<2xf32>
  func.return %v : vector<2xf32>
}

// CHECK: convert-vector-to-llvm: cannot lower 'vector.shuffle' in @shuffle_lengths: expected operands of one type (LLVM's shufflevector), got vector<4xf32> and vector<2xf32>

// -----

func.func @float_kind_on_integers(%w: vector<4xi32>) -> i32 {
  %r = vector.reduction <maxnumf>, %w : vector<4xi32> into i32
  func.return %r : i32
}

// CHECK: convert-vector-to-llvm: cannot lower 'vector.reduction' in @float_kind_on_integers: expected an integer combining kind, got 'maxnumf' on vector<4xi32>

// -----

func.func @broadcast_lanes(%v: vector<2xf32>) -> vector<4xf32> {
  %r = vector.broadcast %v : vector<2xf32> to vector<4xf32>
  func.return %r : vector<4xf32>
}

// CHECK: convert-vector-to-llvm: cannot lower 'vector.broadcast' in @broadcast_lanes: expected a scalar or a 1-lane vector to broadcast to vector<4xf32>, got vector<2xf32>

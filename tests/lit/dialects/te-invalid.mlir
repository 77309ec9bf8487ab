// RUN: ember-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @too_many_indices() -> tensor<4xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<4xf32> {
    %c = arith.constant 1.0 : f32
    te.yield %c : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected 1 index block arguments, got 2

// -----

func.func @missing_reduce_index() -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C", reduce = "sum", reduce_extents = array<i64: 8>}> ({
  ^bb0(%i: index):
    %c = arith.constant 1.0 : f32
    "te.yield"(%c) : (f32) -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected 2 index block arguments, got 1

// -----

func.func @float_index() -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C"}> ({
  ^bb0(%i: f32):
    "te.yield"(%i) : (f32) -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected index block arguments, got f32

// -----

func.func @yield_type() -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %c = arith.constant 1 : i32
    te.yield %c : i32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected yield of f32, got i32

// -----

func.func @no_yield() -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C"}> ({
  ^bb0(%i: index):
    "llvm.unreachable"() : () -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected the body to end in te.yield, got llvm.unreachable

// -----

func.func @bad_combiner(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce prod (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected combiner sum, max or min, or a combine region for the custom combiner 'prod', got none

// -----

func.func @reduce_without_extents() -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C", reduce = "sum"}> ({
  ^bb0(%i: index):
    %c = arith.constant 1.0 : f32
    "te.yield"(%c) : (f32) -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected 'reduce' and 'reduce_extents' together, got only one

// -----

func.func @empty_reduction(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 0) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected positive reduction extents, got [0]

// -----

func.func @dynamic_shape() -> tensor<?xf32> {
  %C = te.compute "C" (%i) -> tensor<?xf32> {
    %c = arith.constant 1.0 : f32
    te.yield %c : f32
  }
  func.return %C : tensor<?xf32>
}

// CHECK: Operation does not verify: expected a name for each dynamic dim of tensor<?xf32> (as in tensor<?x768xf32, ["seq"]>), got none

// -----

func.func @reduce_dims_text(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : "n +") -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: reduction extent:

// -----

func.func @not_a_tensor() {
  %C = te.compute "C" (%i) -> memref<4xf32> {
    %c = arith.constant 1.0 : f32
    te.yield %c : f32
  }
  func.return
}

// CHECK: expected a tensor type, got memref<4xf32>

// -----

func.func @read_index_count(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected 2 indices, got 1

// -----

func.func @read_result_type(%A: tensor<4xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %a = "te.read"(%A, %i) : (tensor<4xf32>, index) -> f64
    %t = arith.truncf %a : f64 to f32
    te.yield %t : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected result of type f32, got f64

// -----

func.func @read_outside_compute(%A: tensor<4xf32>, %i: index) -> f32 {
  %a = te.read %A[%i] : tensor<4xf32>
  func.return %a : f32
}

// CHECK: Operation does not verify: expected te.read inside a te.compute body

// -----

func.func @yield_outside_compute(%x: f32) {
  te.yield %x : f32
}

// CHECK: Operation does not verify: 'te.yield' expects parent op 'te.compute'

// -----

func.func @builtin_with_combine(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  } combine (%acc, %x) identity 0.0 : f32 {
    %s = arith.addf %acc, %x : f32
    te.yield %s : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected no combine region for the builtin combiner 'sum'

// -----

func.func @identity_type(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce prod (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  } combine (%acc, %x) identity 1 : i32 {
    %p = arith.mulf %acc, %x : f32
    te.yield %p : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected an identity of type f32, got 1 : i32

// -----

func.func @combine_arity(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce twice (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  } combine (%acc) identity 0.0 : f32 {
    %p = arith.addf %acc, %acc : f32
    te.yield %p : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected the combine region to take (accumulated, next) values of type f32, got (f32)

// -----

func.func @combine_argument_types(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C", reduce = "prod", reduce_extents = array<i64: 8>, identity = 1.0 : f32}> ({
  ^bb0(%i: index, %k: index):
    %a = "te.read"(%A, %i, %k) : (tensor<4x8xf32>, index, index) -> f32
    "te.yield"(%a) : (f32) -> ()
  }, {
  ^bb0(%acc: f32, %x: f64):
    "te.yield"(%acc) : (f32) -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected the combine region to take (accumulated, next) values of type f32, got (f32, f64)

// -----

func.func @combine_yield_type(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce prod (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  } combine (%acc, %x) identity 1.0 : f32 {
    %p = arith.mulf %acc, %x : f32
    %w = arith.extf %p : f32 to f64
    te.yield %w : f64
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected yield of f32, got f64

// -----

func.func @combine_without_yield(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C", reduce = "prod", reduce_extents = array<i64: 8>, identity = 1.0 : f32}> ({
  ^bb0(%i: index, %k: index):
    %a = "te.read"(%A, %i, %k) : (tensor<4x8xf32>, index, index) -> f32
    "te.yield"(%a) : (f32) -> ()
  }, {
  ^bb0(%acc: f32, %x: f32):
    "llvm.unreachable"() : () -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected the combine region to end in te.yield, got llvm.unreachable

// -----

func.func @combine_reads(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce weird (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  } combine (%acc, %x) identity 0.0 : f32 {
    %c0 = arith.constant 0 : index
    %b = te.read %A[%c0, %c0] : tensor<4x8xf32>
    %s = arith.addf %acc, %b : f32
    te.yield %s : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected no te.read in the combine region: a combiner sees only its two arguments

// -----

func.func @combine_without_reduce() -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C", identity = 1.0 : f32}> ({
  ^bb0(%i: index):
    %c = arith.constant 1.0 : f32
    "te.yield"(%c) : (f32) -> ()
  }, {
  ^bb0(%acc: f32, %x: f32):
    "te.yield"(%acc) : (f32) -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected a combine region only on a reduction

// -----

func.func @identity_without_combine(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C", reduce = "prod", reduce_extents = array<i64: 8>, identity = 1.0 : f32}> ({
  ^bb0(%i: index, %k: index):
    %a = "te.read"(%A, %i, %k) : (tensor<4x8xf32>, index, index) -> f32
    "te.yield"(%a) : (f32) -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected a combine region and an 'identity' together, got only one

// -----

func.func @combiner_name(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = "te.compute"() <{name = "C", reduce = "two words", reduce_extents = array<i64: 8>, identity = 1.0 : f32}> ({
  ^bb0(%i: index, %k: index):
    %a = "te.read"(%A, %i, %k) : (tensor<4x8xf32>, index, index) -> f32
    "te.yield"(%a) : (f32) -> ()
  }, {
  ^bb0(%acc: f32, %x: f32):
    "te.yield"(%acc) : (f32) -> ()
  }) : () -> tensor<4xf32>
  func.return %C : tensor<4xf32>
}

// CHECK: Operation does not verify: expected the combiner's name to be an identifier, got 'two words'

// -----

func.func @combine_needs_identity(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce prod (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  } combine (%acc, %x) {
    %p = arith.mulf %acc, %x : f32
    te.yield %p : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: Expected 'identity'

// RUN: ember-opt %s -p convert-te-to-loop --split-input-file --verify-diagnostics | filecheck %s

func.func @read_of_empty() -> tensor<4xf32> {
  %E = tensor.empty() : tensor<4xf32>
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %x = te.read %E[%i] : tensor<4xf32>
    te.yield %x : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @read_of_empty: 'tensor.empty' produces a tensor in a te function; only te.compute, te.read and func.return may touch tensors

// -----

func.func @return_empty() -> tensor<4xf32> {
  %E = tensor.empty() : tensor<4xf32>
  func.return %E : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @return_empty: result 0 is defined by 'tensor.empty'; expected a function argument or a te.compute result

// -----

func.func private @external(tensor<4xf32>) -> f32

func.func @call(%A: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @external(%A) : (tensor<4xf32>) -> f32
  func.return %A : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @call: 'func.call' uses a tensor in a te function; only te.compute, te.read and func.return may touch tensors

// -----

func.func @extract_in_body(%A: tensor<4xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %x = tensor.extract %A[%i] : tensor<4xf32>
    te.yield %x : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @extract_in_body: 'tensor.extract' uses a tensor in a te.compute body; only te.compute, te.read and func.return may touch tensors

// -----

func.func @nested_compute(%A: tensor<4xf32>, %b: i1) -> tensor<4xf32> {
  scf.if %b {
    %C = te.compute "C" (%i) -> tensor<4xf32> {
      %x = te.read %A[%i] : tensor<4xf32>
      te.yield %x : f32
    }
  }
  func.return %A : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @nested_compute: 'te.compute' in 'scf.if' cannot be lowered; te.compute must sit directly in the body of a func.func

// -----

// No tensor in the signature: the nested compute still makes this a te function.
func.func @nested_no_tensors(%b: i1) {
  scf.if %b {
    %C = te.compute "C" (%i) -> tensor<4xf32> {
      %c = arith.constant 1.0 : f32
      te.yield %c : f32
    }
  }
  func.return
}

// CHECK: convert-te-to-loop: @nested_no_tensors: 'te.compute' in 'scf.if' cannot be lowered

// -----

func.func @compute_in_compute() -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %D = te.compute "D" (%j) -> tensor<4xf32> {
      %c = arith.constant 1.0 : f32
      te.yield %c : f32
    }
    %c = arith.constant 1.0 : f32
    te.yield %c : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @compute_in_compute: 'te.compute' inside a te.compute body cannot be lowered

// -----

"te.compute"() <{name = "C"}> ({
^bb0(%i: index):
  %c = arith.constant 1.0 : f32
  "te.yield"(%c) : (f32) -> ()
}) : () -> tensor<4xf32>

// CHECK: convert-te-to-loop: module: 'te.compute' in 'builtin.module' cannot be lowered

// -----

func.func @dynamic(%A: tensor<?xf32>) -> tensor<?xf32> {
  func.return %A : tensor<?xf32>
}

// CHECK: convert-te-to-loop: @dynamic: expected a name for each dynamic dim of tensor<?xf32> (as in tensor<?x768xf32, ["seq"]>), got none

// -----

func.func @unranked(%A: tensor<*xf32>) -> tensor<*xf32> {
  func.return %A : tensor<*xf32>
}

// CHECK: convert-te-to-loop: @unranked: expected a ranked tensor for argument 0, got tensor<*xf32>

// -----

func.func @scalar_result(%A: tensor<4xf32>) -> f32 {
  %c = arith.constant 1.0 : f32
  func.return %c : f32
}

// CHECK: convert-te-to-loop: @scalar_result: expected a ranked tensor for result 0, got f32

// -----

func.func @complex_sum(%A: tensor<4x2xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %C = te.compute "C" (%i) reduce sum (%k : 2) -> tensor<4xcomplex<f32>> {
    %x = te.read %A[%i, %k] : tensor<4x2xcomplex<f32>>
    te.yield %x : complex<f32>
  }
  func.return %C : tensor<4xcomplex<f32>>
}

// CHECK: convert-te-to-loop: @complex_sum: 'C': expected a float or integer type to reduce, got complex<f32>

// -----

func.func @branches(%A: tensor<4xf32>, %b: i1) -> tensor<4xf32> {
  cf.cond_br %b, ^bb1, ^bb2
^bb1:
  func.return %A : tensor<4xf32>
^bb2:
  func.return %A : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @branches: expected a te function with a single block

// -----

// numpy's sum of booleans is a count, which an i1 result cannot hold.

func.func @bool_sum(%X: tensor<4x2xi1>) -> tensor<4xi1> {
  %C = te.compute "C" (%i) reduce sum (%k : 2) -> tensor<4xi1> {
    %x = te.read %X[%i, %k] : tensor<4x2xi1>
    te.yield %x : i1
  }
  func.return %C : tensor<4xi1>
}

// CHECK: convert-te-to-loop: @bool_sum: 'C': expected max (any) or min (all) to reduce i1, got sum (a count of booleans needs an integer result type)

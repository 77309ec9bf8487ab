// RUN: not ember-opt %s -p 'te-parallel{stage=C}' 2>&1 | filecheck %s --check-prefix=NO-AXIS
// RUN: not ember-opt %s -p 'te-parallel{stage=Nope axis=i}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-parallel{stage=C axis=k},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-AXIS: te-parallel: expected option 'axis'
// NO-SUCH-STAGE: te-parallel: no function has a stage 'Nope'

// The iterations of a reduction loop depend on each other.
func.func @reduction_loop(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @reduction_loop: te.parallel: loop 'k' of stage 'C' is a reduction loop; its iterations depend on each other

// -----

func.func @split_reduction_loop(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%r : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %r] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "r" factor 2 -> "r.outer", "k"
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @split_reduction_loop: te.parallel: loop 'k' of stage 'C' is a reduction loop; its iterations depend on each other

// -----

func.func @already_unrolled(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %k) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.unroll "C" "k"
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @already_unrolled: te.parallel: loop 'k' of stage 'C' is already unrolled

// -----

func.func @no_such_loop(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %j] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.parallel: stage 'C' has no loop 'k'; its loops are i, j

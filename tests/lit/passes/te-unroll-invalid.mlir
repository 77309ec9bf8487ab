// RUN: not ember-opt %s -p 'te-unroll{stage=C}' 2>&1 | filecheck %s --check-prefix=NO-AXIS
// RUN: not ember-opt %s -p 'te-unroll{stage=Nope axis=i}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-unroll{stage=C axis=k},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-AXIS: te-unroll: expected option 'axis'
// NO-SUCH-STAGE: te-unroll: no function has a stage 'Nope'

func.func @already_vectorized(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %k) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.vectorize "C" "k"
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @already_vectorized: te.unroll: loop 'k' of stage 'C' is already vectorized

// -----

func.func @no_such_loop(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %j] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.unroll: stage 'C' has no loop 'k'; its loops are i, j

// -----

func.func @fused_away(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %k) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.fuse "C" ["i", "k"] -> "f"
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @fused_away: te.unroll: loop 'k' of stage 'C' was already split or fused; its loops are f

// RUN: not ember-opt %s -p 'te-pragma{stage=C key=auto_unroll_max_step value=4}' 2>&1 | filecheck %s --check-prefix=NO-AXIS
// RUN: not ember-opt %s -p 'te-pragma{stage=C axis=i value=4}' 2>&1 | filecheck %s --check-prefix=NO-KEY
// RUN: not ember-opt %s -p 'te-pragma{stage=Nope axis=i key=auto_unroll_max_step}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-pragma{stage=C axis=k key=auto_unroll_max_step value=4},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-AXIS: te-pragma: expected option 'axis'
// NO-KEY: te-pragma: expected option 'key'
// NO-SUCH-STAGE: te-pragma: no function has a stage 'Nope'

func.func @no_such_loop(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %j] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.pragma: stage 'C' has no loop 'k'; its loops are i, j

// -----

func.func @split_loop(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %k) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "k" factor 4 -> "k.outer", "k.inner"
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @split_loop: te.pragma: loop 'k' of stage 'C' was already split or fused; its loops are i, k.outer, k.inner

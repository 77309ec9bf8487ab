// RUN: not ember-opt %s -p 'te-bind{stage=C axis=i}' 2>&1 | filecheck %s --check-prefix=NO-THREAD
// RUN: not ember-opt %s -p 'te-bind{stage=C thread="threadIdx.x"}' 2>&1 | filecheck %s --check-prefix=NO-AXIS
// RUN: not ember-opt %s -p 'te-bind{stage=C axis=i thread="warp.x"}' 2>&1 | filecheck %s --check-prefix=BAD-THREAD
// RUN: not ember-opt %s -p 'te-bind{stage=Nope axis=i thread="threadIdx.x"}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-bind{stage=C axis=k thread="threadIdx.x"},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-THREAD: te-bind: expected option 'thread'
// NO-AXIS: te-bind: expected option 'axis'
// BAD-THREAD: te-bind: expected a thread axis (blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, vthread), got 'warp.x'
// NO-SUCH-STAGE: te-bind: no function has a stage 'Nope'

func.func @no_such_loop(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<4x8xf32> {
    %a = te.read %A[%i, %j] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4x8xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.bind: stage 'C' has no loop 'k'; its loops are i, j

// -----

// A reduction axis is not bound: its threads would have to combine their parts.
func.func @reduction(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @reduction: te.bind: loop 'k' of stage 'C' is a reduction axis; only data-parallel loops can be bound to a thread axis

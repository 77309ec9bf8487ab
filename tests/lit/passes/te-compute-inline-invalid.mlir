// RUN: not ember-opt %s -p 'te-compute-inline' 2>&1 | filecheck %s --check-prefix=NO-STAGE
// RUN: not ember-opt %s -p 'te-compute-inline{stage=Nope}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-compute-inline{stage=B},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-STAGE: te-compute-inline: expected option 'stage'
// NO-SUCH-STAGE: te-compute-inline: no function has a stage 'Nope'

func.func @reduction(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %b = te.read %B[%i] : tensor<4xf32>
    te.yield %b : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @reduction: te.compute_inline: stage 'B' is a reduction and cannot be inlined

// -----

func.func @output(%A: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %B = te.compute "B" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %b = te.read %B[%i] : tensor<4xf32>
    te.yield %b : f32
  }
  func.return %B, %C : tensor<4xf32>, tensor<4xf32>
}

// CHECK: convert-te-to-loop: @output: te.compute_inline: stage 'B' is an output of the function

// -----

func.func @twice(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %b = te.read %B[%i] : tensor<4xf32>
    te.yield %b : f32
  }
  te.schedule {
    te.compute_inline "B"
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @twice: te.compute_inline: stage 'B' was inlined

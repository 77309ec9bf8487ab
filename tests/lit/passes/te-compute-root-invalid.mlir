// RUN: not ember-opt %s -p 'te-compute-root' 2>&1 | filecheck %s --check-prefix=NO-STAGE
// RUN: not ember-opt %s -p 'te-compute-root{stage=Nope}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-compute-root{stage=B},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-STAGE: te-compute-root: expected option 'stage'
// NO-SUCH-STAGE: te-compute-root: no function has a stage 'Nope'

func.func @inlined(%A: tensor<4xf32>) -> tensor<4xf32> {
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

// CHECK: convert-te-to-loop: @inlined: te.compute_root: stage 'B' was inlined

// RUN: not ember-opt %s -p 'te-cache-write' 2>&1 | filecheck %s --check-prefix=NO-STAGE
// RUN: not ember-opt %s -p 'te-cache-write{stage=C scope=texture}' 2>&1 | filecheck %s --check-prefix=SCOPE
// RUN: not ember-opt %s -p 'te-cache-write{stage=Nope}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-cache-write{stage=C},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-STAGE: te-cache-write: expected option 'stage'
// SCOPE: te-cache-write: expected scope global, shared or local, got 'texture'
// NO-SUCH-STAGE: te-cache-write: no function has a stage 'Nope'

// cache_write replaces the stage's loops, so it must come before loop primitives.
func.func @after_split(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "k" factor 4 -> "k.outer", "k.inner"
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @after_split: te.cache_write: stage 'C' already has loop primitives; apply te.cache_write first

// -----

func.func @after_parallel(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.parallel "C" "i"
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @after_parallel: te.cache_write: stage 'C' already has loop primitives; apply te.cache_write first

// -----

func.func @after_pragma(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.pragma "C" "i" "auto_unroll_max_step" = 4
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @after_pragma: te.cache_write: stage 'C' already has loop primitives; apply te.cache_write first

// -----

func.func @twice(%A: tensor<4x8xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 8) -> tensor<4xf32> {
    %a = te.read %A[%i, %k] : tensor<4x8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.cache_write "C" "local" -> "C.local"
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @twice: te.cache_write: a stage 'C.local' exists

// -----

func.func @inlined(%A: tensor<4xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%i) -> tensor<4xf32> {
    %c = te.read %C[%i] : tensor<4xf32>
    te.yield %c : f32
  }
  te.schedule {
    te.compute_inline "C"
  }
  func.return %D : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @inlined: te.cache_write: stage 'C' was inlined

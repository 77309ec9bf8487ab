// RUN: not ember-opt %s -p 'te-cache-read{stage=A}' 2>&1 | filecheck %s --check-prefix=NO-READERS
// RUN: not ember-opt %s -p 'te-cache-read{readers=C}' 2>&1 | filecheck %s --check-prefix=NO-STAGE
// RUN: not ember-opt %s -p 'te-cache-read{stage=A scope=texture readers=C}' 2>&1 | filecheck %s --check-prefix=SCOPE
// RUN: not ember-opt %s -p 'te-cache-read{stage=Nope readers=C}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-TENSOR
// RUN: ember-opt %s -p 'te-cache-read{stage=A readers=C},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-READERS: te-cache-read: expected option 'readers'
// NO-STAGE: te-cache-read: expected option 'stage'
// SCOPE: te-cache-read: expected scope global, shared or local, got 'texture'
// NO-SUCH-TENSOR: te-cache-read: no function has a stage 'Nope'

func.func @not_a_reader(%A: tensor<4xf32>, %B: tensor<4xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %b = te.read %B[%i] : tensor<4xf32>
    te.yield %b : f32
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @not_a_reader: te.cache_read: stage 'C' does not read 'A'

// -----

func.func @no_such_reader(%A: tensor<4xf32>) -> tensor<4xf32> {
  %D = te.compute "D" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  func.return %D : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @no_such_reader: te.cache_read: no stage 'C'; the stages are D

// -----

func.func @twice(%A: tensor<4xf32>) -> tensor<4xf32> {
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.cache_read "A" "local" readers ["C"] -> "A.local"
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @twice: te.cache_read: a stage 'A.local' exists

// -----

// A is a compute here, inlined before it is cached.
func.func @inlined(%X: tensor<4xf32>) -> tensor<4xf32> {
  %A = te.compute "A" (%i) -> tensor<4xf32> {
    %x = te.read %X[%i] : tensor<4xf32>
    te.yield %x : f32
  }
  %C = te.compute "C" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.compute_inline "A"
  }
  func.return %C : tensor<4xf32>
}

// CHECK: convert-te-to-loop: @inlined: te.cache_read: stage 'A' was inlined

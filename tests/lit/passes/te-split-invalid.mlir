// RUN: not ember-opt %s -p 'te-split{stage=C}' 2>&1 | filecheck %s --check-prefix=NO-AXIS
// RUN: not ember-opt %s -p 'te-split{axis=i factor=4}' 2>&1 | filecheck %s --check-prefix=NO-STAGE
// RUN: not ember-opt %s -p 'te-split{stage=C axis=i}' 2>&1 | filecheck %s --check-prefix=NO-FACTOR
// RUN: not ember-opt %s -p 'te-split{stage=C axis=i factor=4 nparts=2}' 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: not ember-opt %s -p 'te-split{stage=C axis=i factor=-4}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not ember-opt %s -p 'te-split{stage=Nope axis=i factor=4}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-split{stage=C axis=i factor=4},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-AXIS: te-split: expected option 'axis'
// NO-AXIS-NOT: Traceback
// NO-STAGE: te-split: expected option 'stage'
// NO-FACTOR: te-split: expected exactly one positive factor or nparts, got factor=0 nparts=0
// BOTH: te-split: expected exactly one positive factor or nparts, got factor=4 nparts=2
// NEGATIVE: te-split: expected exactly one positive factor or nparts, got factor=-4 nparts=0
// NO-SUCH-STAGE: te-split: no function has a stage 'Nope'

func.func @no_such_loop(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%x) -> tensor<8xf32> {
    %a = te.read %A[%x] : tensor<8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.split: stage 'C' has no loop 'i'; its loops are x

// -----

func.func @split_twice(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" factor 2 -> "i.o", "i.i"
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @split_twice: te.split: loop 'i' of stage 'C' was already split or fused; its loops are i.o, i.i

// -----

func.func @name_taken(%A: tensor<8x4x2xf32>) -> tensor<8x4x2xf32> {
  %C = te.compute "C" (%i, %j, %k) -> tensor<8x4x2xf32> {
    %a = te.read %A[%i, %j, %k] : tensor<8x4x2xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.fuse "C" ["j", "k"] -> "i.outer"
  }
  func.return %C : tensor<8x4x2xf32>
}

// CHECK: convert-te-to-loop: @name_taken: te.split: stage 'C' already has a loop named 'i.outer'

// -----

func.func @split_inlined(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %c = te.read %C[%i] : tensor<8xf32>
    te.yield %c : f32
  }
  te.schedule {
    te.compute_inline "C"
  }
  func.return %D : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @split_inlined: te.split: stage 'C' was inlined

// -----

// B was attached to C's loop i; splitting i afterwards leaves B nowhere to go.
func.func @split_after_compute_at(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  te.schedule {
    te.compute_at "B" at "C" "i"
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @split_after_compute_at: te.compute_at: loop 'i' of stage 'C' was split or fused after 'B' was attached to it

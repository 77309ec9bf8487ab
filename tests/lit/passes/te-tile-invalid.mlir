// RUN: not ember-opt %s -p 'te-tile{stage=C x=i y=j x-factor=8}' 2>&1 | filecheck %s --check-prefix=NO-Y-FACTOR
// RUN: not ember-opt %s -p 'te-tile{stage=C x=i x-factor=8 y-factor=2}' 2>&1 | filecheck %s --check-prefix=NO-Y
// RUN: not ember-opt %s -p 'te-tile{stage=C x=i y=i x-factor=8 y-factor=2}' 2>&1 | filecheck %s --check-prefix=SAME
// RUN: not ember-opt %s -p 'te-tile{stage=C x=i y=j x-factor=8 y-factor=-2}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not ember-opt %s -p 'te-tile{stage=Nope x=i y=j x-factor=8 y-factor=2}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-tile{stage=C x=i y=j x-factor=4 y-factor=2},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-Y-FACTOR: te-tile: expected option 'y-factor'
// NO-Y: te-tile: expected option 'y'
// SAME: te-tile: expected two different loops x and y, got 'i' twice
// NEGATIVE: te-tile: expected a positive split, got -2
// NO-SUCH-STAGE: te-tile: no function has a stage 'Nope'

func.func @one_axis(%A: tensor<8xf32>) -> tensor<8xf32> {
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @one_axis: te.split: stage 'C' has no loop 'j'; its loops are i.outer, i.inner

// -----

func.func @already_split(%A: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<8x4xf32> {
    %a = te.read %A[%i, %j] : tensor<8x4xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "j" nparts 2 -> "j.outer", "j.inner"
  }
  func.return %C : tensor<8x4xf32>
}

// CHECK: convert-te-to-loop: @already_split: te.split: loop 'j' of stage 'C' was already split or fused; its loops are i.outer, i.inner, j.outer, j.inner

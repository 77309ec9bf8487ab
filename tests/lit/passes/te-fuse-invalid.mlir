// RUN: not ember-opt %s -p 'te-fuse{stage=C}' 2>&1 | filecheck %s --check-prefix=NO-AXES
// RUN: not ember-opt %s -p 'te-fuse{stage=C axes=i}' 2>&1 | filecheck %s --check-prefix=ONE
// RUN: not ember-opt %s -p 'te-fuse{stage=Nope axes=i,j}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-fuse{stage=C axes=i,k},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-AXES: te-fuse: expected option 'axes'
// ONE: te-fuse: expected at least two loops to fuse, got 1
// NO-SUCH-STAGE: te-fuse: no function has a stage 'Nope'

func.func @not_adjacent(%A: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %C = te.compute "C" (%i, %j, %k) -> tensor<2x3x4xf32> {
    %a = te.read %A[%i, %j, %k] : tensor<2x3x4xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<2x3x4xf32>
}

// CHECK: convert-te-to-loop: @not_adjacent: te.fuse: loops i, k of stage 'C' must be adjacent, outermost first

// -----

func.func @inner_first(%A: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %C = te.compute "C" (%k, %i) -> tensor<2x3xf32> {
    %a = te.read %A[%k, %i] : tensor<2x3xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<2x3xf32>
}

// CHECK: convert-te-to-loop: @inner_first: te.fuse: loops i, k of stage 'C' must be adjacent, outermost first

// -----

func.func @data_and_reduction(%A: tensor<2x3xf32>) -> tensor<2xf32> {
  %C = te.compute "C" (%i) reduce sum (%k : 3) -> tensor<2xf32> {
    %a = te.read %A[%i, %k] : tensor<2x3xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<2xf32>
}

// CHECK: convert-te-to-loop: @data_and_reduction: te.fuse: cannot fuse reduction and data-parallel loops of stage 'C'

// -----

func.func @no_such_loop(%A: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<2x3xf32> {
    %a = te.read %A[%i, %j] : tensor<2x3xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<2x3xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.fuse: stage 'C' has no loop 'k'; its loops are i, j

// -----

func.func @fused_name_taken(%A: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %C = te.compute "C" (%i, %k, %j) -> tensor<2x3x4xf32> {
    %a = te.read %A[%i, %k, %j] : tensor<2x3x4xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "j" factor 2 -> "i.k.fused", "j.inner"
  }
  func.return %C : tensor<2x3x4xf32>
}

// CHECK: convert-te-to-loop: @fused_name_taken: te.fuse: stage 'C' already has a loop named 'i.k.fused'

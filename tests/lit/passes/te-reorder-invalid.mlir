// RUN: not ember-opt %s -p 'te-reorder{stage=C}' 2>&1 | filecheck %s --check-prefix=NO-AXES
// RUN: not ember-opt %s -p 'te-reorder{stage=C axes=j,i,j}' 2>&1 | filecheck %s --check-prefix=DUPLICATE
// RUN: not ember-opt %s -p 'te-reorder{stage=Nope axes=j,i}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-reorder{stage=C axes=j,i},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-AXES: te-reorder: expected option 'axes'
// DUPLICATE: te-reorder: expected distinct loops, got ['j', 'i', 'j']
// NO-SUCH-STAGE: te-reorder: no function has a stage 'Nope'

func.func @no_such_loop(%A: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %C = te.compute "C" (%i, %k) -> tensor<2x3xf32> {
    %a = te.read %A[%i, %k] : tensor<2x3xf32>
    te.yield %a : f32
  }
  func.return %C : tensor<2x3xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.reorder: stage 'C' has no loop 'j'; its loops are i, k

// -----

func.func @reorder_split_loop(%A: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %C = te.compute "C" (%i, %j) -> tensor<8x3xf32> {
    %a = te.read %A[%i, %j] : tensor<8x3xf32>
    te.yield %a : f32
  }
  te.schedule {
    te.split "C" "i" factor 4 -> "i.outer", "i.inner"
  }
  func.return %C : tensor<8x3xf32>
}

// CHECK: convert-te-to-loop: @reorder_split_loop: te.reorder: loop 'i' of stage 'C' was already split or fused; its loops are i.outer, i.inner, j

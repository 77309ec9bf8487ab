// RUN: not ember-opt %s -p 'te-compute-at{stage=B axis=i}' 2>&1 | filecheck %s --check-prefix=NO-TARGET
// RUN: not ember-opt %s -p 'te-compute-at{stage=B target=D}' 2>&1 | filecheck %s --check-prefix=NO-AXIS
// RUN: not ember-opt %s -p 'te-compute-at{stage=Nope target=D axis=i}' 2>&1 | filecheck %s --check-prefix=NO-SUCH-STAGE
// RUN: ember-opt %s -p 'te-compute-at{stage=B target=D axis=i},convert-te-to-loop' --split-input-file --verify-diagnostics | filecheck %s

// NO-TARGET: te-compute-at: expected option 'target'
// NO-AXIS: te-compute-at: expected option 'axis'
// NO-SUCH-STAGE: te-compute-at: no function has a stage 'Nope'

// D does not read B: C, which does, runs outside D's loops.
func.func @not_a_reader(%A: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  func.return %C, %D : tensor<8xf32>, tensor<8xf32>
}

// CHECK: convert-te-to-loop: @not_a_reader: te.compute_at: stage 'B' is read by 'C', which does not run inside loop 'i' of stage 'D'

// -----

// D reads B, and so does C.
func.func @another_reader(%A: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  func.return %C, %D : tensor<8xf32>, tensor<8xf32>
}

// CHECK: convert-te-to-loop: @another_reader: te.compute_at: stage 'B' is read by 'C', which does not run inside loop 'i' of stage 'D'

// -----

func.func @output(%A: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  func.return %B, %D : tensor<8xf32>, tensor<8xf32>
}

// CHECK: convert-te-to-loop: @output: te.compute_at: stage 'B' is an output of the function; outputs are computed at the root

// -----

func.func @no_such_loop(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%x) -> tensor<8xf32> {
    %b = te.read %B[%x] : tensor<8xf32>
    te.yield %b : f32
  }
  func.return %D : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @no_such_loop: te.compute_at: stage 'D' has no loop 'i'; its loops are x

// -----

func.func @no_such_target(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %C = te.compute "C" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  func.return %C : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @no_such_target: te.compute_at: no stage 'D'; the stages are B, C

// -----

func.func @target_inlined(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  %E = te.compute "E" (%i) -> tensor<8xf32> {
    %d = te.read %D[%i] : tensor<8xf32>
    te.yield %d : f32
  }
  te.schedule {
    te.compute_inline "D"
  }
  func.return %E : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @target_inlined: te.compute_at: stage 'D' was inlined

// -----

// D is already computed inside B's loop; B inside D's would be a cycle.
func.func @cycle(%A: tensor<8xf32>) -> tensor<8xf32> {
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  %E = te.compute "E" (%i) -> tensor<8xf32> {
    %d = te.read %D[%i] : tensor<8xf32>
    te.yield %d : f32
  }
  te.schedule {
    te.compute_at "D" at "B" "i"
  }
  func.return %E : tensor<8xf32>
}

// CHECK: convert-te-to-loop: @cycle: te.compute_at: stages {{.*}} are attached in a cycle

// -----

func.func @attached_to_producer(%A: tensor<8xf32>) -> tensor<8xf32> {
  %D = te.compute "D" (%i) -> tensor<8xf32> {
    %a = te.read %A[%i] : tensor<8xf32>
    te.yield %a : f32
  }
  %B = te.compute "B" (%i) -> tensor<8xf32> {
    %d = te.read %D[%i] : tensor<8xf32>
    te.yield %d : f32
  }
  %E = te.compute "E" (%i) -> tensor<8xf32> {
    %b = te.read %B[%i] : tensor<8xf32>
    te.yield %b : f32
  }
  func.return %E : tensor<8xf32>
}

// D is B's producer: B's only reader, E, runs outside D's loop.
// CHECK: convert-te-to-loop: @attached_to_producer: te.compute_at: stage 'B' is read by 'E', which does not run inside loop 'i' of stage 'D'

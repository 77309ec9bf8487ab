// RUN: ember-opt %s -p convert-te-to-loop --split-input-file --verify-diagnostics | filecheck %s

// What a schedule cannot do with a loop of symbolic extent is a diagnostic
// naming the primitive, the loop, the stage and the extent, and what to do
// instead.

// Unrolling needs a trip count known at compile time.

func.func @unroll(%A: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %B = te.compute "B" (%i) -> tensor<?xf32, ["n"]> {
    %a = te.read %A[%i] : tensor<?xf32, ["n"]>
    te.yield %a : f32
  }
  te.schedule {
    te.unroll "B" "i"
  }
  func.return %B : tensor<?xf32, ["n"]>
}

// CHECK: convert-te-to-loop: @unroll: te.unroll: loop 'i' of stage 'B' has the symbolic extent n; split it by a factor and unroll the inner loop

// -----

// A split by parts makes an inner loop of symbolic extent that the outer one
// steps by.

func.func @nparts(%A: tensor<?xf32, ["n"]>) -> tensor<?xf32, ["n"]> {
  %B = te.compute "B" (%i) -> tensor<?xf32, ["n"]> {
    %a = te.read %A[%i] : tensor<?xf32, ["n"]>
    te.yield %a : f32
  }
  te.schedule {
    te.split "B" "i" nparts 4 -> "i.outer", "i.inner"
  }
  func.return %B : tensor<?xf32, ["n"]>
}

// CHECK: convert-te-to-loop: @nparts: te.split of 'i' of stage 'B' makes a loop of symbolic extent (n + 3) // 4 that others step by; split a symbolic loop by a factor

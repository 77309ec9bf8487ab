// RUN: not ember-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not ember-opt %s 2>&1 | filecheck %s --check-prefix=PARSE

// Bad input gets one diagnostic and a non-zero exit, never a Python traceback.

// PASS: ember-opt: error: unknown pass 'no-such-pass'
// PASS-NOT: Traceback

// PARSE: te-compute-missing-yield
// PARSE-NOT: Traceback

func.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {
  %B = te.compute "B" (%i) -> tensor<4xf32> {
    %a = te.read %A[%i] : tensor<4xf32>
    "te-compute-missing-yield"
  }
  func.return %B : tensor<4xf32>
}


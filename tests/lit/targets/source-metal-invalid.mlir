// RUN: not ember-opt %s -t metal 2>&1 | filecheck %s
// RUN: ember-opt %s -t opencl | filecheck %s --check-prefix=OPENCL

// Metal has no 64-bit float: f64 IR is refused naming the first op that
// touches it, where OpenCL prints doubles.

// CHECK: error: metal source: 'memref.load' in @square uses f64: Metal has no 64-bit float (double); compute in float32 (cast the inputs) or build for 'cuda' or 'opencl'

// OPENCL: #pragma OPENCL EXTENSION cl_khr_fp64: enable
// OPENCL: double {{.*}} = A[{{.*}}];

func.func @square(%A: tensor<256xf64> {ember.name = "A"}) -> tensor<256xf64> {
  %C = te.compute "C" (%i) -> tensor<256xf64> {
    %0 = te.read %A[%i] : tensor<256xf64>
    %1 = arith.mulf %0, %0 : f64
    te.yield %1 : f64
  }
  te.schedule {
    te.split "C" "i" factor 64 -> "i.outer", "i.inner"
    te.bind "C" "i.outer" "blockIdx.x"
    te.bind "C" "i.inner" "threadIdx.x"
  }
  func.return %C : tensor<256xf64>
}

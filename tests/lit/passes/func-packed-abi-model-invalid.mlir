// RUN: ember-opt %s --split-input-file --verify-diagnostics -p func-packed-abi | filecheck %s

// ember.model must describe @default_run exactly: a mismatch is the compiler's
// bug, caught here instead of as a wrong result at run time.

builtin.module attributes {ember.model = "{\"inputs\": [], \"outputs\": []"} {
}

// CHECK: func-packed-abi: ember.model: invalid JSON: Expecting ',' delimiter

// -----

builtin.module attributes {ember.model = 3 : i64} {
}

// CHECK: func-packed-abi: ember.model: expected a string of JSON, got 3 : i64

// -----

builtin.module attributes {ember.model = "{\"inputs\": [], \"outputs\": [], \"workspace_bytes\": -1, \"params_bytes\": 0}"} {
}

// CHECK: func-packed-abi: ember.model: expected "workspace_bytes" to be a non-negative integer, got -1

// -----

builtin.module attributes {ember.model = "{\"inputs\": [{\"name\": \"x\"}], \"outputs\": [], \"workspace_bytes\": 0, \"params_bytes\": 0}"} {
}

// CHECK: func-packed-abi: ember.model: expected "inputs" to be a list of {"name", "shape", "dtype"} objects

// -----

builtin.module attributes {ember.model = "{\"inputs\": [], \"outputs\": [], \"workspace_bytes\": 0, \"params_bytes\": 0}"} {
  func.func @main(%x: memref<4xf32>) {
    func.return
  }
}

// CHECK: func-packed-abi: the module has ember.model but no public @default_run over static buffers to run the model

// -----

builtin.module attributes {ember.model = "{\"inputs\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"float32\"}], \"outputs\": [], \"workspace_bytes\": 0, \"params_bytes\": 0}"} {
  func.func @default_run(%x: memref<4xf32>, %ws: memref<64xi8>) {
    func.return
  }
}

// CHECK: func-packed-abi: @default_run: expected 3 arguments for a model with 1 input(s) and 0 output(s) (inputs, outputs, workspace, params), got 2

// -----

builtin.module attributes {ember.model = "{\"inputs\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"float32\"}], \"outputs\": [{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float32\"}], \"workspace_bytes\": 64, \"params_bytes\": 0}"} {
  func.func @default_run(%x: memref<5xf32>, %y: memref<4xf32> {ember.output}, %ws: memref<64xi8>, %p: memref<0xi8>) {
    func.return
  }
}

// CHECK: func-packed-abi: @default_run: argument 0 (x): expected shape (4,) (from ember.model), got (5,)

// -----

builtin.module attributes {ember.model = "{\"inputs\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"float32\"}], \"outputs\": [{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float32\"}], \"workspace_bytes\": 64, \"params_bytes\": 0}"} {
  func.func @default_run(%x: memref<4xf32>, %y: memref<4xf32>, %ws: memref<64xi8>, %p: memref<0xi8>) {
    func.return
  }
}

// CHECK: func-packed-abi: @default_run: argument 1 (y): expected an output (ember.output)

// -----

builtin.module attributes {ember.model = "{\"inputs\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"float32\"}], \"outputs\": [{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float32\"}], \"workspace_bytes\": 64, \"params_bytes\": 16}"} {
  func.func @default_run(%x: memref<4xf32>, %y: memref<4xf32> {ember.output}, %ws: memref<64xi8>, %p: memref<4xf32>) {
    func.return
  }
}

// CHECK: func-packed-abi: @default_run: argument 3 (params): expected an i8 buffer, got memref<4xf32>

// -----

builtin.module attributes {ember.model = "{\"inputs\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"int32\"}], \"outputs\": [], \"workspace_bytes\": 0, \"params_bytes\": 0}"} {
  func.func @default_run(%x: memref<4xf32>, %ws: memref<0xi8>, %p: memref<0xi8>) {
    func.return
  }
}

// CHECK: func-packed-abi: @default_run: argument 0 (x): expected int32, got float32

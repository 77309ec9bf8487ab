// RUN: ember-opt %s --split-input-file -p func-packed-abi | filecheck %s

// A module with ember.model (the AOT compiler's description of the model) gets
// it in __ember_metadata under "model", int64 constants with the workspace and
// params sizes, and __ember_model_io for C hosts: #inputs, #outputs, then per
// tensor dtype code, bits, ndim, extents. The workspace and params buffers of
// @default_run are uint8 tensors (DLPack code 1) whatever their i8 signedness.

builtin.module attributes {ember.model = "{\"inputs\": [{\"name\": \"data\", \"shape\": [1, 8], \"dtype\": \"float32\"}], \"outputs\": [{\"name\": \"out\", \"shape\": [2], \"dtype\": \"float32\"}], \"workspace_bytes\": 128, \"params_bytes\": 64, \"params\": {\"w\": {\"offset\": 0, \"shape\": [4], \"dtype\": \"float32\"}}, \"params_embedded\": false}"} {
  func.func @default_run(%x: memref<1x8xf32> {ember.name = "data"},
                         %y: memref<2xf32> {ember.name = "out", ember.output},
                         %ws: memref<128xi8> {ember.name = "workspace", ember.output},
                         %p: memref<64xi8> {ember.name = "params"}) {
    func.return
  }
}

// CHECK:       llvm.mlir.global internal constant @__ember_err.default_run.2.tensor("default_run: argument 2 (workspace): expected uint8 tensor of shape (128,)\00")
// CHECK:       llvm.mlir.global internal constant @__ember_err.default_run.3.tensor("default_run: argument 3 (params): expected uint8 tensor of shape (64,)\00")
// CHECK-LABEL: llvm.func @default_run(
// CHECK:         llvm.mlir.constant(1 : i8) : i8
// CHECK:         llvm.mlir.addressof @__ember_err.default_run.2.tensor
// CHECK:       llvm.mlir.global external constant @__ember_model_workspace_bytes(128 : i64) {addr_space = 0 : i32, alignment = 8 : i64} : i64
// CHECK-NEXT:  llvm.mlir.global external constant @__ember_model_params_bytes(64 : i64) {addr_space = 0 : i32, alignment = 8 : i64} : i64
// CHECK-NEXT:  llvm.mlir.global external constant @__ember_model_io(dense<[1, 1, 2, 32, 2, 1, 8, 2, 32, 1, 2]> : tensor<11xi64>) {addr_space = 0 : i32, alignment = 8 : i64} : !llvm.array<11 x i64>
// CHECK:       @__ember_metadata.json("{\22entry\22: \22default_run\22, \22functions\22: {\22default_run\22: {\22args\22: [{{.*}}{\22name\22: \22workspace\22, \22shape\22: [128], \22dtype\22: \22uint8\22, \22output\22: true}, {\22name\22: \22params\22, \22shape\22: [64], \22dtype\22: \22uint8\22, \22output\22: false}]}}, \22model\22: {\22inputs\22: [{\22name\22: \22data\22, {{.*}}\22params_embedded\22: false}}\00")

// -----

// Without ember.model nothing of the model is emitted.

func.func @plain(%x: memref<4xf32>) {
  func.return
}

// CHECK-LABEL: llvm.func @plain(
// CHECK-NOT:   __ember_model
// CHECK-NOT:   \22model\22

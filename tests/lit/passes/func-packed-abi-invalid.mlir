// RUN: ember-opt %s --split-input-file --verify-diagnostics -p func-packed-abi | filecheck %s

// An entry needs buffers it can check: static shapes, identity layout.

func.func @dynamic(%A: memref<?xf32>) {
  func.return
}

// CHECK: func-packed-abi: @dynamic: argument 0: expected a static shape, or ember.dims naming each dynamic dim of memref<?xf32> (as ["n"] for memref<?x8xf32>), got none

// -----

func.func @taken(%A: memref<4xf32>) {
  func.return
}
func.func private @taken_impl(%A: memref<4xf32>) {
  func.return
}

// CHECK: func-packed-abi: @taken: cannot rename it: @taken_impl already exists

// -----

func.func @bad_dtype(%A: memref<4xf32> {ember.dtype = "uint32"}) {
  func.return
}

// CHECK: func-packed-abi: @bad_dtype: argument 0: ember.dtype "uint32" does not fit memref<4xf32>

// -----

func.func @float_as_int(%A: memref<4xf32> {ember.dtype = "int32"}) {
  func.return
}

// CHECK: func-packed-abi: @float_as_int: argument 0: ember.dtype "int32" does not fit memref<4xf32>

// -----

func.func @wider(%A: memref<4xi8> {ember.dtype = "uint16"}) {
  func.return
}

// CHECK: func-packed-abi: @wider: argument 0: ember.dtype "uint16" does not fit memref<4xi8>

// -----

func.func @nibbles(%A: memref<4xi4>) {
  func.return
}

// CHECK: func-packed-abi: @nibbles: argument 0: unsupported element type in memref<4xi4>

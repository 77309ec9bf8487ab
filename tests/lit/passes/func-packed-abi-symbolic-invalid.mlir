// RUN: not ember-opt %s -p func-packed-abi --split-input-file 2>&1 | filecheck %s

// A dim reads a symbol no index argument gives.
// CHECK: func-packed-abi: @f: dims read n, which no index argument marked ember.symbol gives
func.func @f(%A: memref<?xf32> {ember.dims = ["n"]}, %m: index {ember.symbol = "m"}) {
  func.return
}

// -----

// A symbol that is no buffer's dim by itself has no shape to be read from.
// CHECK: func-packed-abi: @g: symbol n is no buffer's dim by itself, so no shape gives its value
func.func @g(%A: memref<?xf32> {ember.dims = ["2 * n"]}, %n: index {ember.symbol = "n"}) {
  func.return
}

// -----

// Every dynamic dim is named.
// CHECK: func-packed-abi: @h: argument 0: expected a static shape, or ember.dims naming each dynamic dim of memref<?x?xf32> (as ["n"] for memref<?x8xf32>), got ["n"]
func.func @h(%A: memref<?x?xf32> {ember.dims = ["n"]}, %n: index {ember.symbol = "n"}) {
  func.return
}

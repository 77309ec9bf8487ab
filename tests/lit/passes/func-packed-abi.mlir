// RUN: ember-opt %s --split-input-file -p func-packed-abi | filecheck %s

// A public function over static buffers becomes the private @f_impl; @f is its
// packed entry. Checks run in order, each failure branching to ^fail with a static
// message and a code (-1 for the count, -2 - i for argument i).

func.func @scale(%X: memref<4x8xf32> {ember.name = "X"}) {
  func.return
}

// CHECK:       func.func private @scale_impl(%{{.*}}: memref<4x8xf32> {ember.name = "X"})
// CHECK:       llvm.mlir.global internal constant @__ember_err.scale.count("scale: expected 1 argument (X)\00")
// CHECK:       llvm.mlir.global internal constant @__ember_err.scale.0.type("scale: argument 0 (X): expected a tensor\00")
// CHECK:       llvm.mlir.global internal constant @__ember_err.scale.0.device("scale: argument 0 (X): expected a CPU tensor\00")
// CHECK:       llvm.mlir.global internal constant @__ember_err.scale.0.tensor("scale: argument 0 (X): expected float32 tensor of shape (4, 8)\00")
// CHECK:       llvm.mlir.global internal constant @__ember_err.scale.0.strides("scale: argument 0 (X): expected compact row-major strides\00")

// CHECK-LABEL: llvm.func @scale(
// CHECK-SAME:      %[[ARGS:.*]]: !llvm.ptr, %[[CODES:.*]]: !llvm.ptr, %[[N:.*]]: i32, %[[RET:.*]]: !llvm.ptr, %[[RET_CODE:.*]]: !llvm.ptr) -> i32 {
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    %[[COUNT_OK:.*]] = llvm.icmp "eq" %[[N]], %[[ONE]] : i32
// CHECK-NEXT:    %[[MSG:.*]] = llvm.mlir.addressof @__ember_err.scale.count : !llvm.ptr
// CHECK-NEXT:    %[[M1:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT:    llvm.cond_br %[[COUNT_OK]], ^arg0, ^fail(%[[MSG]], %[[M1]] : !llvm.ptr, i32)

// Type code 7 (DLTensor*) or 13 (NDArray handle), and a non-null handle:
// CHECK:       ^arg0:
// CHECK-NEXT:    %[[CODE:.*]] = llvm.load %[[CODES]] {alignment = 4 : i64} : !llvm.ptr -> i32
// CHECK-NEXT:    %[[T:.*]] = llvm.load %[[ARGS]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         llvm.icmp "eq" %[[CODE]], %{{.*}} : i32
// CHECK:         llvm.icmp "eq" %[[CODE]], %{{.*}} : i32
// CHECK:         llvm.ptrtoint %[[T]] : !llvm.ptr to i64
// CHECK:         llvm.mlir.addressof @__ember_err.scale.0.type
// CHECK-NEXT:    %[[M2:.*]] = llvm.mlir.constant(-2 : i32) : i32
// CHECK-NEXT:    llvm.cond_br %{{.*}}, ^arg0_device, ^fail(%{{.*}}, %[[M2]] : !llvm.ptr, i32)

// device_type (DLTensor field 1) is kDLCPU:
// CHECK:       ^arg0_device:
// CHECK-NEXT:    %[[DEV_AT:.*]] = llvm.getelementptr %[[T]][0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(!llvm.ptr, i32, i32, i32, i8, i8, i16, !llvm.ptr, !llvm.ptr, i64)>
// CHECK-NEXT:    %[[DEV:.*]] = llvm.load %[[DEV_AT]] {alignment = 4 : i64} : !llvm.ptr -> i32
// CHECK-NEXT:    %[[CPU:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    llvm.icmp "eq" %[[DEV]], %[[CPU]] : i32
// CHECK:         llvm.cond_br %{{.*}}, ^arg0_dtype, ^fail

// ndim (field 3), dtype code / bits / lanes (fields 4, 5, 6):
// CHECK:       ^arg0_dtype:
// CHECK:         llvm.getelementptr %[[T]][0, 3]
// CHECK:         llvm.mlir.constant(2 : i32) : i32
// CHECK:         llvm.getelementptr %[[T]][0, 4]
// CHECK:         llvm.mlir.constant(2 : i8) : i8
// CHECK:         llvm.getelementptr %[[T]][0, 5]
// CHECK:         llvm.mlir.constant(32 : i8) : i8
// CHECK:         llvm.getelementptr %[[T]][0, 6]
// CHECK:         llvm.mlir.constant(1 : i16) : i16
// CHECK:         llvm.mlir.addressof @__ember_err.scale.0.tensor
// CHECK:         llvm.cond_br %{{.*}}, ^arg0_shape, ^fail

// Every extent of shape (field 7), read only after ndim matched:
// CHECK:       ^arg0_shape:
// CHECK-NEXT:    %[[SHAPE_AT:.*]] = llvm.getelementptr %[[T]][0, 7]
// CHECK-NEXT:    %[[SHAPE:.*]] = llvm.load %[[SHAPE_AT]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.load %[[SHAPE]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK-NEXT:    llvm.mlir.constant(4) : i64
// CHECK:         %[[E1_AT:.*]] = llvm.getelementptr %[[SHAPE]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.load %[[E1_AT]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK-NEXT:    llvm.mlir.constant(8) : i64
// CHECK:         llvm.mlir.addressof @__ember_err.scale.0.tensor
// CHECK:         llvm.cond_br %{{.*}}, ^arg0_strides, ^fail

// Strides (field 8) are null or compact row-major:
// CHECK:       ^arg0_strides:
// CHECK-NEXT:    %[[STRIDES_AT:.*]] = llvm.getelementptr %[[T]][0, 8]
// CHECK-NEXT:    %[[STRIDES:.*]] = llvm.load %[[STRIDES_AT]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         llvm.cond_br %{{.*}}, ^call, ^arg0_strided
// CHECK:       ^arg0_strided:
// CHECK-NEXT:    llvm.load %[[STRIDES]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK-NEXT:    llvm.mlir.constant(8) : i64
// CHECK:         llvm.getelementptr %[[STRIDES]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         llvm.mlir.constant(1) : i64
// CHECK:         llvm.mlir.addressof @__ember_err.scale.0.strides
// CHECK:         llvm.cond_br %{{.*}}, ^call, ^fail

// The call: data (field 0) + byte_offset (field 9), as the buffer type of @f_impl:
// CHECK:       ^call:
// CHECK-NEXT:    %[[DATA_AT:.*]] = llvm.getelementptr %[[T]][0, 0]
// CHECK-NEXT:    %[[DATA:.*]] = llvm.load %[[DATA_AT]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[OFFSET_AT:.*]] = llvm.getelementptr %[[T]][0, 9]
// CHECK-NEXT:    %[[OFFSET:.*]] = llvm.load %[[OFFSET_AT]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK-NEXT:    %[[START:.*]] = llvm.getelementptr %[[DATA]][%[[OFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[BUF:.*]] = builtin.unrealized_conversion_cast %[[START]] : !llvm.ptr to memref<4x8xf32>
// CHECK-NEXT:    func.call @scale_impl(%[[BUF]]) : (memref<4x8xf32>) -> ()
// CHECK-NEXT:    %[[ZERO64:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    llvm.store %[[ZERO64]], %[[RET]] {alignment = 8 : i64} : i64, !llvm.ptr
// CHECK-NEXT:    %[[NULL_CODE:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT:    llvm.store %[[NULL_CODE]], %[[RET_CODE]] {alignment = 4 : i64} : i32, !llvm.ptr
// CHECK-NEXT:    %[[OK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    llvm.return %[[OK]] : i32

// On failure: ret->v_handle = message, *ret_code = 11 (string), return the code.
// CHECK:       ^fail(%[[MESSAGE:.*]]: !llvm.ptr, %[[FAIL_CODE:.*]]: i32):
// CHECK-NEXT:    llvm.store %[[MESSAGE]], %[[RET]] {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[STR:.*]] = llvm.mlir.constant(11 : i32) : i32
// CHECK-NEXT:    llvm.store %[[STR]], %[[RET_CODE]] {alignment = 4 : i64} : i32, !llvm.ptr
// CHECK-NEXT:    llvm.return %[[FAIL_CODE]] : i32

// The module describes itself:
// CHECK:       llvm.mlir.global internal constant @__ember_metadata.json("{\22entry\22: \22scale\22, \22functions\22: {\22scale\22: {\22args\22: [{\22name\22: \22X\22, \22shape\22: [4, 8], \22dtype\22: \22float32\22, \22output\22: false}]}}}\00")
// CHECK-LABEL: llvm.func @__ember_metadata(
// CHECK-SAME:      %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i32, %[[MRET:.*]]: !llvm.ptr, %[[MRET_CODE:.*]]: !llvm.ptr) -> i32 {
// CHECK-NEXT:    %[[JSON:.*]] = llvm.mlir.addressof @__ember_metadata.json : !llvm.ptr
// CHECK-NEXT:    llvm.store %[[JSON]], %[[MRET]]
// CHECK-NEXT:    %[[MSTR:.*]] = llvm.mlir.constant(11 : i32) : i32
// CHECK-NEXT:    llvm.store %[[MSTR]], %[[MRET_CODE]]

// -----

// Extent-1 dimensions have no stride to check; a 0-d buffer has no shape to read.
// Unnamed arguments are arg<i>; ember.dtype picks the dtype of integer buffers.
// Argument i fails with -2 - i.

func.func @misc(%S: memref<f64>, %R: memref<1x16x1xi8> {ember.dtype = "uint8"}, %B: memref<3xi1>) {
  func.return
}

// CHECK:       @__ember_err.misc.count("misc: expected 3 arguments (arg0, arg1, arg2)\00")
// CHECK:       @__ember_err.misc.0.tensor("misc: argument 0 (arg0): expected float64 tensor of shape ()\00")
// CHECK:       @__ember_err.misc.1.tensor("misc: argument 1 (arg1): expected uint8 tensor of shape (1, 16, 1)\00")
// CHECK:       @__ember_err.misc.2.tensor("misc: argument 2 (arg2): expected bool tensor of shape (3,)\00")
// CHECK-LABEL: llvm.func @misc(
// CHECK:       ^arg0_dtype:
// CHECK:         llvm.cond_br %{{.*}}, ^arg1, ^fail
// CHECK:       ^arg1:
// CHECK:         llvm.mlir.constant(-3 : i32) : i32
// CHECK:       ^arg1_dtype:
// CHECK:         llvm.mlir.constant(1 : i8) : i8
// CHECK:         llvm.mlir.constant(8 : i8) : i8
// CHECK:       ^arg1_strided:
// CHECK-NEXT:    %[[S1_AT:.*]] = llvm.getelementptr %{{.*}}[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.load %[[S1_AT]]
// CHECK-NEXT:    llvm.mlir.constant(1) : i64
// CHECK-NEXT:    llvm.icmp
// CHECK-NEXT:    llvm.mlir.addressof @__ember_err.misc.1.strides
// CHECK:       ^arg2_dtype:
// CHECK:         llvm.mlir.constant(6 : i8) : i8
// CHECK:         llvm.mlir.constant(8 : i8) : i8
// CHECK:         llvm.mlir.constant(-4 : i32) : i32
// CHECK:       ^call:
// CHECK:         func.call @misc_impl(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<f64>, memref<1x16x1xi8>, memref<3xi1>) -> ()
// CHECK:       @__ember_metadata.json("{\22entry\22: \22misc\22, \22functions\22: {\22misc\22: {\22args\22: [{\22name\22: \22arg0\22, \22shape\22: [], \22dtype\22: \22float64\22, \22output\22: false}, {\22name\22: \22arg1\22, \22shape\22: [1, 16, 1], \22dtype\22: \22uint8\22, \22output\22: false}, {\22name\22: \22arg2\22, \22shape\22: [3], \22dtype\22: \22bool\22, \22output\22: false}]}}}\00")

// -----

// Only public functions with a body, buffer arguments and no results get an entry;
// calls of a packed function inside the module go to its bare @f_impl. With two
// entries the metadata names no single "entry".

func.func @first(%A: memref<4xf32>) {
  func.call @second(%A) : (memref<4xf32>) -> ()
  func.return
}
func.func @second(%A: memref<4xf32>) {
  func.return
}
func.func @with_result(%A: memref<4xf32>) -> f32 {
  %x = "test.op"() : () -> f32
  func.return %x : f32
}
func.func @with_index(%A: memref<4xf32>, %n: index) {
  func.return
}
func.func private @helper(%A: memref<4xf32>) {
  func.return
}
func.func private @declared(memref<4xf32>)

// CHECK:       func.func private @first_impl(%[[A:.*]]: memref<4xf32>)
// CHECK-NEXT:    func.call @second_impl(%[[A]]) : (memref<4xf32>) -> ()
// CHECK:       llvm.func @first(
// CHECK:       func.func private @second_impl(
// CHECK:       llvm.func @second(
// CHECK:       func.func @with_result(
// CHECK:       func.func @with_index(
// CHECK:       func.func private @helper(
// CHECK:       func.func private @declared(
// CHECK:       @__ember_metadata.json("{\22entry\22: null, \22functions\22: {\22first\22: {{.*}}, \22second\22: {{.*}}}}\00")
// CHECK:       llvm.func @__ember_metadata(
// CHECK-NOT:   llvm.func @with_result
// CHECK-NOT:   @helper_impl

// -----

// A module without entries still describes itself.

func.func private @internal_only(%A: memref<4xf32>) {
  func.return
}

// CHECK:       @__ember_metadata.json("{\22entry\22: null, \22functions\22: {}}\00")
// CHECK:       llvm.func @__ember_metadata(

// -----

// Any string is an ember.name: messages hold its UTF-8 bytes, the metadata a JSON
// string, and an empty name is arg<i>. SSA names keep only what is valid of it.

func.func @names(%A: memref<2xf32> {ember.name = "x y"}, %B: memref<2xf32> {ember.name = "a\"b"},
                 %C: memref<2xf32> {ember.name = "é"}, %D: memref<2xf32> {ember.name = ""}) {
  func.return
}

// CHECK:       @__ember_err.names.count("names: expected 4 arguments (x y, a\22b, \C3\A9, arg3)\00") {addr_space = 0 : i32} : !llvm.array<49 x i8>
// CHECK:       @__ember_err.names.2.type("names: argument 2 (\C3\A9): expected a tensor\00") {addr_space = 0 : i32} : !llvm.array<42 x i8>
// CHECK-LABEL: llvm.func @names(
// CHECK:         %x_y = llvm.load
// CHECK:         %a_b = llvm.load
// CHECK:       @__ember_metadata.json("{{.*}}\22name\22: \22x y\22{{.*}}\22name\22: \22a\\\22b\22{{.*}}\22name\22: \22\\u00e9\22{{.*}}\22name\22: \22arg3\22{{.*}}")

// -----

// Outputs (ember.output) must not share a byte with any other argument: after the
// per-argument checks, each output is compared with every other argument (each
// pair of outputs once) on [data + byte_offset, + nbytes); an overlap fails with
// -2 - i for output i. Empty buffers overlap nothing. The metadata says which
// arguments are outputs.

func.func @two_out(%A: memref<4xf32> {ember.name = "A"}, %E: memref<0xf32> {ember.name = "E"},
                   %C: memref<2x2xi16> {ember.name = "C", ember.output},
                   %D: memref<f64> {ember.name = "D", ember.output}) {
  func.return
}

// Because the entry proves no output overlaps anything, the buffers of the
// implementation are noalias.
// CHECK:       func.func private @two_out_impl(%A: memref<4xf32> {ember.name = "A", llvm.noalias}, %E: memref<0xf32> {ember.name = "E", llvm.noalias}, %C: memref<2x2xi16> {ember.name = "C", ember.output, llvm.noalias}, %D: memref<f64> {ember.name = "D", ember.output, llvm.noalias})
// CHECK:       @__ember_err.two_out.2.overlaps.0("two_out: argument 2 (C): output overlaps argument 0 (A); in-place calls are not supported\00")
// CHECK-NEXT:  @__ember_err.two_out.2.overlaps.3("two_out: argument 2 (C): output overlaps argument 3 (D); in-place calls are not supported\00")
// CHECK-NEXT:  @__ember_err.two_out.3.overlaps.0("two_out: argument 3 (D): output overlaps argument 0 (A); in-place calls are not supported\00")
// CHECK-NOT:   overlaps
// CHECK-LABEL: llvm.func @two_out(
// CHECK:         llvm.cond_br %{{.*}}, ^arg2_vs0, ^fail
// CHECK:       ^arg2_vs0:
// CHECK:         %[[A_START:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[E_START:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[C_START:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[D_START:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[A_FIRST:.*]] = llvm.ptrtoint %[[A_START]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[A_BYTES:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[A_END:.*]] = llvm.add %[[A_FIRST]], %[[A_BYTES]] : i64
// CHECK-NEXT:    %[[C_FIRST:.*]] = llvm.ptrtoint %[[C_START]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[C_BYTES:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[C_END:.*]] = llvm.add %[[C_FIRST]], %[[C_BYTES]] : i64
// CHECK-NEXT:    %[[D_FIRST:.*]] = llvm.ptrtoint %[[D_START]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[D_BYTES:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[D_END:.*]] = llvm.add %[[D_FIRST]], %[[D_BYTES]] : i64
// CHECK-NEXT:    %[[BEFORE:.*]] = llvm.icmp "ule" %[[C_END]], %[[A_FIRST]] : i64
// CHECK-NEXT:    %[[AFTER:.*]] = llvm.icmp "ule" %[[A_END]], %[[C_FIRST]] : i64
// CHECK-NEXT:    %[[APART:.*]] = llvm.or %[[BEFORE]], %[[AFTER]] : i1
// CHECK-NEXT:    %[[MSG:.*]] = llvm.mlir.addressof @__ember_err.two_out.2.overlaps.0 : !llvm.ptr
// CHECK-NEXT:    %[[CODE:.*]] = llvm.mlir.constant(-4 : i32) : i32
// CHECK-NEXT:    llvm.cond_br %[[APART]], ^arg2_vs3, ^fail(%[[MSG]], %[[CODE]] : !llvm.ptr, i32)
// CHECK:       ^arg2_vs3:
// CHECK:         llvm.cond_br %{{.*}}, ^arg3_vs0, ^fail
// CHECK:       ^arg3_vs0:
// CHECK:         llvm.mlir.addressof @__ember_err.two_out.3.overlaps.0
// CHECK-NEXT:    %[[CODE3:.*]] = llvm.mlir.constant(-5 : i32) : i32
// CHECK-NEXT:    llvm.cond_br %{{.*}}, ^call, ^fail(%{{.*}}, %[[CODE3]] : !llvm.ptr, i32)
// CHECK:       ^call:
// CHECK-NEXT:    builtin.unrealized_conversion_cast %[[A_START]] : !llvm.ptr to memref<4xf32>
// CHECK:       @__ember_metadata.json("{{.*}}\22name\22: \22A\22{{.*}}\22output\22: false}, {{.*}}\22name\22: \22E\22{{.*}}\22output\22: false}, {{.*}}\22name\22: \22C\22{{.*}}\22output\22: true}, {{.*}}\22name\22: \22D\22{{.*}}\22output\22: true}]}}}\00")

// -----

// A function also called inside the module is reached without the entry's
// checks, so its buffers are not marked noalias.

func.func @inner(%A: memref<4xf32> {ember.name = "A"}, %B: memref<4xf32> {ember.name = "B", ember.output}) {
  func.return
}
func.func private @outer(%A: memref<4xf32>) {
  func.call @inner(%A, %A) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// CHECK:     func.func private @inner_impl(%A: memref<4xf32> {ember.name = "A"}, %B: memref<4xf32> {ember.name = "B", ember.output})
// CHECK-NOT: llvm.noalias

// -----

// A function that calls the host (ember.fallible, from convert-call-packed-to-llvm)
// returns a failure message, null on success: the entry returns -100 with it.

// CHECK-LABEL: func.func private @calls_host_impl(
// CHECK-SAME:      -> !llvm.ptr attributes {ember.fallible}
// CHECK-LABEL: llvm.func @calls_host(
// CHECK:       ^call:
// CHECK:         %[[MESSAGE:.*]] = func.call @calls_host_impl(%{{.*}}) : (memref<4xf32>) -> !llvm.ptr
// CHECK-NEXT:    %[[CODE:.*]] = llvm.mlir.constant(-100 : i32) : i32
// CHECK-NEXT:    %[[AS_INT:.*]] = llvm.ptrtoint %[[MESSAGE]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[OK:.*]] = llvm.icmp "eq" %[[AS_INT]], %[[ZERO]] : i64
// CHECK-NEXT:    llvm.cond_br %[[OK]], ^done, ^fail(%[[MESSAGE]], %[[CODE]] : !llvm.ptr, i32)
// CHECK-NEXT:  ^done:
// CHECK:         llvm.return %{{.*}} : i32
// CHECK:       ^fail(%{{.*}}: !llvm.ptr, %{{.*}}: i32):
func.func @calls_host(%A: memref<4xf32> {ember.name = "A", ember.output}) -> !llvm.ptr attributes {ember.fallible} {
  %0 = llvm.mlir.zero : !llvm.ptr
  func.return %0 : !llvm.ptr
}

// A result without ember.fallible still means no entry.
// CHECK-LABEL: func.func @returns_ptr(
// CHECK-NOT:   llvm.func @returns_ptr(
func.func @returns_ptr(%A: memref<4xf32>) -> !llvm.ptr {
  %0 = llvm.mlir.zero : !llvm.ptr
  func.return %0 : !llvm.ptr
}

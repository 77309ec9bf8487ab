/*
 * ember_runtime.h: the C ABI of libraries compiled by ember.
 *
 * Everything a C or C++ host needs to run an ember library without Python: the
 * DLPack tensor structs, the packed calling convention every compiled function
 * follows, its error protocol, and the symbols a library defines besides its
 * functions. The header is self-contained (libc's <stdint.h> only) and
 * describes a library; it declares nothing the host must link against.
 *
 * A library exported by ember (`mod.export_library("m.so")`) is used like
 * this (examples/deploy_c/main.c is the whole program):
 *
 *     void* lib = dlopen("./m.so", RTLD_NOW);
 *     EmberPackedFunc f = (EmberPackedFunc)dlsym(lib, "vecadd");
 *     EmberValue args[3];  int32_t codes[3];
 *     args[0].v_handle = &a;  codes[0] = EMBER_TYPE_DLTENSOR;  ...
 *     EmberValue ret;  int32_t ret_code;
 *     if (f(args, codes, 3, &ret, &ret_code) != EMBER_OK)
 *         fprintf(stderr, "%s\n", (const char*)ret.v_handle);
 *
 * (ISO C cannot convert `void*` to a function pointer; every POSIX system can,
 * and the example shows the portable spelling.) The ABI follows TVM's packed
 * functions; docs/architecture.md ("The packed ABI") is the longer story, and
 * passes/func_packed_abi.py, which emits the code, is the reference.
 */
#ifndef EMBER_RUNTIME_H_
#define EMBER_RUNTIME_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* DLPack tensors                                                           */
/* ------------------------------------------------------------------------ */

/*
 * The structs below have DLPack's layout, field for field, so a DLTensor made
 * by any DLPack producer (numpy, PyTorch, TVM) can be passed as it is. If a
 * translation unit also uses dlpack.h, include dlpack.h first: its
 * definitions are then used and these are skipped.
 */
#ifndef DLPACK_DLPACK_H_

/* DLDeviceType: where a tensor's memory is. Compiled CPU code accepts
 * kDLCPU only; any other device is refused with an argument error. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16
} DLDeviceType;

/* DLDevice: a device type and the index of one device of that type (8
 * bytes). Compiled code checks device_type and ignores device_id. */
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* DLDataTypeCode: the `code` of a DLDataType. */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U
} DLDataTypeCode;

/* DLDataType: one element is `lanes` lanes of `bits` bits of kind `code` (4
 * bytes). ember's dtypes: float16/32/64 = {kDLFloat, 16/32/64, 1},
 * bfloat16 = {kDLBfloat, 16, 1}, int8..int64 = {kDLInt, 8..64, 1},
 * uint8..uint64 = {kDLUInt, 8..64, 1}, bool = {kDLBool, 8, 1} (one byte per
 * element). Compiled code accepts lanes == 1 only. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* DLTensor: a borrowed view of an n-dimensional array (48 bytes on 64-bit
 * machines). The caller owns every pointer in it; compiled code only reads
 * the struct and reads or writes the elements.
 *   data        start of the allocation; data + byte_offset must be aligned
 *               to the element size (kernels load and store with the
 *               element's alignment; the entry does not check it)
 *   device      {kDLCPU, 0} for compiled CPU code
 *   ndim        number of dimensions; must equal the kernel's
 *   dtype       element type; must equal the kernel's exactly
 *   shape       ndim extents; each must equal the kernel's (static shapes)
 *   strides     NULL for compact row-major, or ndim strides in elements,
 *               which must then be the compact row-major ones (strides of
 *               extent-1 dimensions are not checked)
 *   byte_offset bytes from `data` to the first element */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

#endif /* DLPACK_DLPACK_H_ */

/* ------------------------------------------------------------------------ */
/* Packed values and type codes                                             */
/* ------------------------------------------------------------------------ */

/* EmberValue: one argument or return value, 8 bytes, read according to its
 * type code: integers (and booleans) as v_int64, floats as v_float64,
 * everything else (tensors, strings, handles) as v_handle. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
} EmberValue;

/* EmberTypeCode: what an EmberValue holds (TVM's numbering). */
typedef enum {
  EMBER_TYPE_INT = 0,         /* v_int64: a signed integer or a boolean */
  EMBER_TYPE_UINT = 1,        /* v_int64: an unsigned integer's bits */
  EMBER_TYPE_FLOAT = 2,       /* v_float64 */
  EMBER_TYPE_HANDLE = 3,      /* v_handle: an opaque pointer */
  EMBER_TYPE_NULL = 4,        /* nothing; also "no return value" */
  EMBER_TYPE_DLTENSOR = 7,    /* v_handle: a DLTensor* */
  EMBER_TYPE_MODULE = 9,      /* v_handle: an opaque module handle, which
                                 only the host that made it can read */
  EMBER_TYPE_PACKED_FUNC = 10, /* v_handle: a packed C function's address
                                  (an EmberPackedFunc) */
  EMBER_TYPE_STR = 11,        /* v_handle: a NUL-terminated UTF-8 string */
  EMBER_TYPE_NDARRAY = 13     /* v_handle: a DLTensor* (an NDArray's own) */
} EmberTypeCode;

/* ------------------------------------------------------------------------ */
/* The packed calling convention                                            */
/* ------------------------------------------------------------------------ */

/*
 * Every public function `f` of a library is exported under its own name as
 *
 *   int32_t f(EmberValue* args, int32_t* type_codes, int32_t num_args,
 *             EmberValue* ret, int32_t* ret_type_code);
 *
 * args[i] with type_codes[i] is argument i. Kernels take every tensor (inputs
 * first, then outputs) as EMBER_TYPE_DLTENSOR or EMBER_TYPE_NDARRAY. Before
 * touching any data the function checks, in order: num_args; then for each
 * argument its type code and non-null handle, device, ndim, dtype, shape and
 * strides; then that no output's bytes overlap another argument's (in-place
 * calls are not supported). On success it returns EMBER_OK with
 * *ret_type_code = EMBER_TYPE_NULL.
 *
 * A function is thread-safe: it keeps no state between calls (parallel loops
 * run on libgomp's thread pool).
 */
typedef int32_t (*EmberPackedFunc)(EmberValue* args, int32_t* type_codes,
                                   int32_t num_args, EmberValue* ret,
                                   int32_t* ret_type_code);

/*
 * Error protocol. A non-zero return code is an error, and then
 * *ret_type_code == EMBER_TYPE_STR and ret->v_handle points to a static,
 * NUL-terminated message naming the function, the argument and what was
 * expected, e.g. "matmul: argument 1 (B): expected float32 tensor of shape
 * (48, 32)". The message lives as long as the library is loaded; never free
 * it.
 */
#define EMBER_OK 0
/* Wrong number of arguments. */
#define EMBER_ERR_ARG_COUNT (-1)
/* Argument i is wrong: not a tensor, wrong device, ndim, dtype, shape or
 * strides, or an output overlapping another argument. */
#define EMBER_ERR_ARG(i) (-2 - (i))
/* The argument index of a return code rc <= -2 (and > EMBER_ERR_CALLBACK). */
#define EMBER_ERR_ARG_INDEX(rc) (-2 - (rc))
/* A host function called through __ember_call_packed failed (returned
 * non-zero), or no hook was installed. */
#define EMBER_ERR_CALLBACK (-100)

/* ------------------------------------------------------------------------ */
/* Symbols a library defines besides its functions                          */
/* ------------------------------------------------------------------------ */

/*
 * __ember_metadata: a packed function every library defines. Called with no
 * arguments it returns EMBER_OK, *ret_type_code == EMBER_TYPE_STR and in
 * ret->v_handle a static JSON document describing the library:
 *
 *   {"entry": "matmul" | null,
 *    "functions": {"matmul": {"args": [
 *        {"name": "A", "shape": [64, 48], "dtype": "float32", "output": false},
 *        ...]}},
 *    "triple": "x86_64-unknown-linux-gnu"}
 *
 * "entry" is the function a module called as a whole runs (its only one, or
 * the one built as its entry); "output" marks the arguments the function
 * writes; "triple" (written by export_library) is the target the code was
 * compiled for. Readers ignore keys they do not know. The text is ASCII.
 */
#define EMBER_METADATA_SYMBOL "__ember_metadata"

/*
 * __ember_num_threads: an int32_t global (weak, so several objects can share
 * it) that a library with parallel loops defines. Every parallel region asks
 * libgomp for this many threads; 0 (the default) leaves the choice to
 * libgomp (OMP_NUM_THREADS, else one per core). Set it once, before the first
 * call; the Python runtime sets it from EMBER_NUM_THREADS. Such a library
 * calls libgomp (GOMP_parallel), so it is linked with -lgomp or loaded into
 * a process that has libgomp. Once its parallel loops have run, do not
 * dlclose it: if it was what loaded libgomp, libgomp is unloaded with it
 * while libgomp's worker threads still wait in its code (they crash when
 * woken). Keep it open, or open it with RTLD_NODELETE.
 */
#define EMBER_NUM_THREADS_SYMBOL "__ember_num_threads"

/*
 * __ember_call_packed: a pointer-sized global of type EmberCallPackedHook
 * (weak, null by default) that a library calling host functions (TE's
 * call_packed, functions registered with register_func) defines. The host
 * installs its dispatcher by storing a function pointer in it after loading
 * the library:
 *
 *   *(EmberCallPackedHook*)dlsym(lib, EMBER_CALL_PACKED_SYMBOL) = my_hook;
 *
 * Compiled code calls hook(name, args, type_codes, num_args, ret,
 * ret_type_code) with the packed convention above plus the function's name.
 * The hook returns 0 on success, after setting *ret_type_code (and *ret);
 * any other value fails the call. A failure, or a null hook, makes the
 * compiled function return EMBER_ERR_CALLBACK with a message in ret (e.g.
 * "no host function table: cannot call 'NAME'").
 */
typedef int32_t (*EmberCallPackedHook)(const char* name, EmberValue* args,
                                       int32_t* type_codes, int32_t num_args,
                                       EmberValue* ret,
                                       int32_t* ret_type_code);
#define EMBER_CALL_PACKED_SYMBOL "__ember_call_packed"

/* ------------------------------------------------------------------------ */
/* Compiled models                                                          */
/* ------------------------------------------------------------------------ */

/*
 * A model compiled ahead of time (ember-compile, ember.compile_model) is one
 * packed function that runs the whole graph:
 *
 *   default_run(inputs..., outputs..., workspace, params)
 *
 * Inputs and outputs are DLTensors in the model's shapes and dtypes, in the
 * order the metadata's "model" object lists them. `workspace` is a 1-D uint8
 * DLTensor ({kDLUInt, 8, 1}) of __ember_model_workspace_bytes bytes that holds
 * every intermediate tensor at the offset the compiler's static memory plan
 * gave it: the caller allocates it (64-byte aligned), the model overwrites it
 * on every call, and two concurrent calls need two workspaces. `params` is a
 * 1-D uint8 DLTensor of __ember_model_params_bytes bytes holding every weight
 * (already in the layouts the kernels read) at 64-byte aligned offsets; it is
 * only read. Outputs and the workspace must not overlap any other argument.
 *
 * Symbols of a model library (all `const`, read them with dlsym):
 *   __ember_model_workspace_bytes  int64_t: the workspace size
 *   __ember_model_params_bytes     int64_t: the params blob size
 *   __ember_model_io               int64_t[]: num_inputs, num_outputs, then
 *                                  for each input and each output: DLPack
 *                                  dtype code, bits, ndim, ndim extents
 *   __ember_params                 the params blob (64-byte aligned,
 *                                  __ember_model_params_bytes long), only in
 *                                  libraries compiled with embedded params;
 *                                  otherwise the host loads the blob (as
 *                                  ember.runtime.pack_params writes it)
 * The metadata's "model" object says the same in JSON, with names and each
 * param's offset, shape and dtype. examples/deploy_c/run_model.c is a whole
 * host.
 */
#define EMBER_MODEL_RUN_SYMBOL "default_run"
#define EMBER_MODEL_WORKSPACE_BYTES_SYMBOL "__ember_model_workspace_bytes"
#define EMBER_MODEL_PARAMS_BYTES_SYMBOL "__ember_model_params_bytes"
#define EMBER_MODEL_IO_SYMBOL "__ember_model_io"
#define EMBER_PARAMS_SYMBOL "__ember_params"
/* Alignment of the workspace, the params blob and every offset in them. */
#define EMBER_MODEL_ALIGNMENT 64

/*
 * A host that links a library directly (cc host.c m.so) instead of opening
 * it with dlopen can have these symbols declared by defining
 * EMBER_DECLARE_LIBRARY_SYMBOLS before including this header. The last two
 * exist only in libraries with parallel loops or host calls respectively.
 */
#ifdef EMBER_DECLARE_LIBRARY_SYMBOLS
extern int32_t __ember_metadata(EmberValue* args, int32_t* type_codes,
                                int32_t num_args, EmberValue* ret,
                                int32_t* ret_type_code);
extern int32_t __ember_num_threads;
extern EmberCallPackedHook __ember_call_packed;
#endif

/* ------------------------------------------------------------------------ */
/* Layout checks (compile-time, C99 and C++)                                */
/* ------------------------------------------------------------------------ */

/* Compiled code reads these structs at fixed offsets: a host whose compiler
 * lays them out otherwise fails here, not at run time. */
typedef char ember_check_value_size[sizeof(EmberValue) == 8 ? 1 : -1];
typedef char ember_check_device_size[sizeof(DLDevice) == 8 ? 1 : -1];
typedef char ember_check_dtype_size[sizeof(DLDataType) == 4 ? 1 : -1];
typedef char ember_check_tensor_size
    [(sizeof(void*) != 8 || sizeof(DLTensor) == 48) ? 1 : -1];

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EMBER_RUNTIME_H_ */

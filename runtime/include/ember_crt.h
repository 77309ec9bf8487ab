/*
 * ember_crt.h: ember's C runtime, the Python runtime's core for hosts without
 * Python (C99 + POSIX: libc, libdl, libm).
 *
 * ember_runtime.h describes a library (the packed ABI, DLPack, the symbols);
 * this header is a library of its own, libember_runtime.a, built from
 * runtime/c/ (`make -C runtime/c`, or `ember build-runtime -o DIR`), that
 * does what ember.runtime does for a CPU library:
 *
 *   - EmberModuleLoad opens a `.so` exported by ember and reads its metadata
 *     (`__ember_metadata`: functions, argument names, shapes, dtypes);
 *     EmberModuleGetFunction looks a function up, EmberFuncCall calls it;
 *   - EmberArrayEmpty allocates a tensor (64-byte aligned, zeroed);
 *   - EmberParamDictLoad reads a param dict (ember.runtime.save_param_dict's
 *     format, CRC-32 checked);
 *   - EmberModel runs a compiled model's `default_run` by its metadata: input
 *     and output names, shapes and dtypes, its workspace, params embedded in
 *     the library or loaded from a param dict or a packed blob; a model
 *     compiled with symbolic shapes ("batch", "seq + 1") at the shapes its
 *     inputs are given (EmberModelSetInputShape).
 *
 * A model in a few lines (examples/deploy_c/run_model_crt.c is a whole host):
 *
 *     EmberModule* lib;  EmberModel* model;
 *     if (EmberModuleLoad("model.so", &lib) || EmberModelCreate(lib, &model))
 *       fprintf(stderr, "%s\n", EmberGetLastError());
 *     int32_t x = EmberModelInputIndex(model, "x");
 *     memcpy(EmberModelInput(model, x)->data, pixels, nbytes);
 *     if (EmberModelRun(model) != 0) fprintf(stderr, "%s\n", EmberGetLastError());
 *     const float* y = EmberModelOutput(model, 0)->data;
 *
 * Errors: every function returning int returns 0 on success and -1 on
 * failure, and EmberGetLastError() then says why in one line (the calling
 * thread's last message). Nothing here prints or exits.
 *
 * Not supported (refused with a message): `.tar` libraries (their objects
 * must be linked first: `cc -shared -o m.so` the objects, or export a
 * `.so`), GPU models (DeviceModules).
 * Sizes are in docs/architecture.md ("The C runtime and the runtime
 * package").
 */
#ifndef EMBER_CRT_H_
#define EMBER_CRT_H_

#include <stddef.h>
#include <stdint.h>

#include "ember_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The calling thread's last error message ("" if none): valid until the
 * thread's next failing call. */
const char* EmberGetLastError(void);

/* ------------------------------------------------------------------------ */
/* Modules                                                                  */
/* ------------------------------------------------------------------------ */

/* A loaded library: its dlopen handle and its parsed metadata. */
typedef struct EmberModule EmberModule;

/* Opens the shared library at `path` (RTLD_NOW) and reads its metadata. Sets
 * the library's __ember_num_threads from $EMBER_NUM_THREADS when set, as the
 * Python runtime does. Fails, naming the file, when it is missing, a `.tar`,
 * not an ELF shared object, cannot be opened (dlerror's reason: another
 * architecture, a missing libgomp, ...), or has no valid metadata. */
int EmberModuleLoad(const char* path, EmberModule** out);

/* The library's metadata, the JSON text its __ember_metadata returns. */
const char* EmberModuleMetadata(const EmberModule* mod);

/* The function the module as a whole runs ("entry" in the metadata:
 * "default_run" for a model), or NULL. */
const char* EmberModuleEntry(const EmberModule* mod);

/* The number of functions the metadata lists, and the i-th one's name. */
int32_t EmberModuleNumFunctions(const EmberModule* mod);
const char* EmberModuleFunctionName(const EmberModule* mod, int32_t i);

/* The function `name`, which the metadata must list (helpers the library
 * also exports, as `name_impl`, are not functions of the module). */
int EmberModuleGetFunction(const EmberModule* mod, const char* name,
                           EmberPackedFunc* out);

/* Frees what EmberModuleLoad allocated, and the heap blocks the library's
 * kernels keep between calls (its __ember_scratch_release, if it has one:
 * a function of the library called after this allocates them again). The
 * library itself stays mapped: closing one whose parallel loops have run
 * would unload libgomp under its own threads (ember_runtime.h). */
void EmberModuleFree(EmberModule* mod);

/* Calls a packed function; on a non-zero return code the function's own
 * message becomes the last error. Returns 0 or -1. */
int EmberFuncCall(EmberPackedFunc f, EmberValue* args, int32_t* type_codes,
                  int32_t num_args, EmberValue* ret, int32_t* ret_type_code);

/* ------------------------------------------------------------------------ */
/* Arrays                                                                   */
/* ------------------------------------------------------------------------ */

/* A new compact row-major CPU tensor (device {kDLCPU, 0}, NULL strides),
 * its data 64-byte aligned and zeroed; free it with EmberArrayFree. */
int EmberArrayEmpty(const int64_t* shape, int32_t ndim, DLDataType dtype,
                    DLTensor** out);
void EmberArrayFree(DLTensor* array);

/* Bytes of a compact tensor's elements: product of the shape times the
 * element size. */
size_t EmberArrayNumBytes(const DLTensor* array);

/* dtype names as numpy writes them ("float32", "int64", "uint8", "bool",
 * "float16", "bfloat16"): name -> DLDataType (0, or -1 if unknown), and
 * DLDataType -> name (NULL if it has none). */
int EmberDataTypeFromString(const char* name, DLDataType* out);
const char* EmberDataTypeName(DLDataType dtype);

/* ------------------------------------------------------------------------ */
/* Param dicts                                                              */
/* ------------------------------------------------------------------------ */

/* A param dict document (runtime/params.py: magic "EMBERPRM", version 1 or
 * 2, entries, CRC-32), read into tensors that view one aligned copy. */
typedef struct EmberParamDict EmberParamDict;

/* Reads a document from memory; the CRC-32 is checked first (version 2), and
 * every field against what is left, so damage is an error naming the entry
 * and field, never a crash. */
int EmberParamDictLoad(const void* data, size_t nbytes, EmberParamDict** out);
int32_t EmberParamDictSize(const EmberParamDict* params);
const char* EmberParamDictName(const EmberParamDict* params, int32_t i);
const DLTensor* EmberParamDictGet(const EmberParamDict* params, int32_t i);
void EmberParamDictFree(EmberParamDict* params);

/* Reads a whole file into malloc'd memory (free it with free()). */
int EmberReadFile(const char* path, void** data, size_t* nbytes);

/* ------------------------------------------------------------------------ */
/* Models                                                                   */
/* ------------------------------------------------------------------------ */

/* A compiled model ready to run: its own inputs, outputs and workspace, and
 * its params (the library's embedded blob, read in place, until a load
 * copies it). One thread at a time; make one EmberModel per thread. */
typedef struct EmberModel EmberModel;

/* What the metadata says of one input or output. A symbolic dim (one known
 * only from the inputs' shapes) is -1 in `shape`, as TVM writes it, and its
 * expression's text ("batch", "seq + 1", "(seq + 1) // 2") is in `dims`:
 * `dims` is NULL where every dim is an int (always, for a static model),
 * else it has `ndim` entries, NULL at the ints. */
typedef struct {
  const char* name;
  int32_t ndim;
  const int64_t* shape;
  DLDataType dtype;
  const char* const* dims;
} EmberTensorInfo;

/* An executor for the model library `mod` (which must outlive it): fails
 * when the metadata has no "model", or one this runtime cannot run (an
 * expression that does not parse is named with the input or output, the dim
 * and its text).
 *
 * Symbolic shapes (runtime/model_dims.py is the specification): a dim may be
 * an expression over symbols (ints, names, + - * // %, parentheses, min,
 * max; // and % floor, as Python's). An input's dim that is one symbol alone
 * binds it; the inputs' other dims must equal their expressions' values;
 * "bounds" caps symbols; the outputs' shapes and the workspace size are
 * evaluated from the symbols at each run. Such a model's symbolic inputs
 * start empty (their symbolic dims 0): give each one's shape
 * (EmberModelSetInputShape, or EmberModelSetInput with a tensor of the
 * shape) before the first run. Refusals name the input, the dim, the
 * symbol and the values in the Python runtime's words, after "set_input: "
 * or "run: ": "input 'mask': dim 1 is 'seq' = 8, but input 'ids' gave seq =
 * 7", "input 'ids': seq = 17 is above its bound 16". */
int EmberModelCreate(const EmberModule* mod, EmberModel** out);
int32_t EmberModelNumInputs(const EmberModel* model);
int32_t EmberModelNumOutputs(const EmberModel* model);
int EmberModelInputInfo(const EmberModel* model, int32_t i,
                        EmberTensorInfo* out);
int EmberModelOutputInfo(const EmberModel* model, int32_t i,
                         EmberTensorInfo* out);
/* The index of the input `name`, or -1 (with an error listing the names). */
int32_t EmberModelInputIndex(const EmberModel* model, const char* name);

/* The model's own input and output tensors (NULL for a bad index): write an
 * input's data in place, read an output's after a run. The pointers stay the
 * model's; with symbolic shapes, `shape` is the current one (an output's the
 * last run's) and `data` may move when a new shape outgrows the memory. */
DLTensor* EmberModelInput(EmberModel* model, int32_t i);
DLTensor* EmberModelOutput(EmberModel* model, int32_t i);

/* Copies `value` into input i; its dtype and shape must be the input's
 * exactly (no casts), and it must be compact. With symbolic shapes, any
 * shape EmberModelSetInputShape takes: it sets the shape, then copies. */
int EmberModelSetInput(EmberModel* model, int32_t i, const DLTensor* value);

/* Gives input i the shape `shape` (the input's ndim extents), for the caller
 * to write its data in place then (EmberModelInput(model, i)->data, which may
 * have moved; its contents are stale). With symbolic shapes: its int dims
 * must be theirs, its own symbols consistent and within their bounds; new
 * memory is taken only when the shape needs more than the input has, a
 * smaller one reuses it. A static model takes its inputs' own shapes only
 * (another is refused naming the fixed one). */
int EmberModelSetInputShape(EmberModel* model, int32_t i, const int64_t* shape);

/* Loads params: a param dict document (each name the model's, each shape
 * and dtype the packed one; partial loads add up), or the packed blob of
 * exactly the model's params bytes. The embedded blob is copied first, never
 * written. */
int EmberModelLoadParams(EmberModel* model, const void* data, size_t nbytes);

/* Runs default_run. Fails naming the params still missing, or with the
 * entry's own message. With symbolic shapes it first binds the symbols from
 * the inputs' shapes (refusing an input not set, inconsistent shapes and
 * sizes above their bounds) and gives the outputs and the workspace the
 * shapes they evaluate to, taking memory only when they outgrow theirs. */
int EmberModelRun(EmberModel* model);
void EmberModelFree(EmberModel* model);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EMBER_CRT_H_ */

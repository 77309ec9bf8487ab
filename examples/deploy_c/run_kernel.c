/*
 * run_kernel: run one function of an ember library on tensors read from files.
 *
 *   run_kernel LIBRARY FUNCTION TENSOR...
 *
 *   TENSOR  in:DTYPE:SHAPE:FILE    an argument read from FILE
 *           out:DTYPE:SHAPE:FILE   an argument written to FILE after the call
 *   DTYPE   float32, float64, int8, int32, uint8, bfloat16, ... (float, int,
 *           uint or bfloat, then the bits)
 *   SHAPE   the extents joined by 'x' (16x3x3), empty for a 0-d tensor
 *
 * Files hold a tensor's bytes, row-major, as numpy's x.tofile() writes them.
 * The tensors are passed in the order given, each a compact DLTensor on the
 * CPU; outputs start filled with 0xff bytes (NaN as floats), so an element
 * the function never writes shows in the file. Nothing but libc and libdl:
 * the program cross-compiles with the target's gcc and runs under qemu-user.
 *
 * Exit status: 0 on success, 1 when the function refuses its arguments (its
 * message is printed), 2 on bad arguments, unreadable or wrong-sized files,
 * or a library or function that cannot be opened. C99 + POSIX.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember_runtime.h"

#define MAX_TENSORS 32
#define MAX_NDIM 8
#define ALIGNMENT 64

typedef struct {
  DLTensor tensor;
  int64_t shape[MAX_NDIM];
  size_t nbytes;
  int output;
  const char* path;
} Tensor;

static void fail(const char* message, const char* detail) {
  fprintf(stderr, "run_kernel: %s%s\n", message, detail);
  exit(2);
}

static int parse_dtype(const char* text, size_t length, DLDataType* dtype) {
  static const struct {
    const char* name;
    uint8_t code;
  } kinds[] = {{"bfloat", kDLBfloat}, {"float", kDLFloat},
               {"uint", kDLUInt},     {"int", kDLInt}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
    size_t n = strlen(kinds[k].name);
    char* end;
    long bits;
    if (length <= n || strncmp(text, kinds[k].name, n) != 0) continue;
    bits = strtol(text + n, &end, 10);
    if (end != text + length || bits <= 0 || bits > 64 || bits % 8) return 0;
    dtype->code = kinds[k].code;
    dtype->bits = (uint8_t)bits;
    dtype->lanes = 1;
    return 1;
  }
  return 0;
}

/* Fills t from "in:float32:4x8:a.bin"; exits 2 when the text is malformed. */
static void parse_tensor(const char* text, Tensor* t) {
  const char *dtype_at, *shape_at, *path_at;
  size_t count = 1;
  memset(t, 0, sizeof *t);
  if (strncmp(text, "in:", 3) == 0) {
    dtype_at = text + 3;
  } else if (strncmp(text, "out:", 4) == 0) {
    dtype_at = text + 4;
    t->output = 1;
  } else {
    fail("expected in:DTYPE:SHAPE:FILE or out:DTYPE:SHAPE:FILE, got ", text);
  }
  shape_at = strchr(dtype_at, ':');
  path_at = shape_at ? strchr(shape_at + 1, ':') : NULL;
  if (path_at == NULL || path_at[1] == '\0')
    fail("expected in:DTYPE:SHAPE:FILE or out:DTYPE:SHAPE:FILE, got ", text);
  if (!parse_dtype(dtype_at, (size_t)(shape_at - dtype_at), &t->tensor.dtype))
    fail("expected a dtype such as float32 or int64 in ", text);
  for (const char* p = shape_at + 1; p < path_at;) {
    char* end;
    long extent;
    errno = 0;
    extent = strtol(p, &end, 10);
    if (errno || end == p || extent < 0 || t->tensor.ndim == MAX_NDIM ||
        (*end != 'x' && end != path_at) || (*end == 'x' && end + 1 == path_at))
      fail("expected a shape such as 4x8 (at most 8 extents) in ", text);
    t->shape[t->tensor.ndim++] = extent;
    count *= (size_t)extent;
    p = *end == 'x' ? end + 1 : end;
  }
  t->nbytes = count * (t->tensor.dtype.bits / 8);
  t->path = path_at + 1;
  t->tensor.device.device_type = kDLCPU;
  t->tensor.shape = t->shape;
  if (posix_memalign(&t->tensor.data, ALIGNMENT, t->nbytes ? t->nbytes : 1))
    fail("out of memory for ", text);
  memset(t->tensor.data, 0xff, t->nbytes);
}

static void read_file(const Tensor* t) {
  FILE* f = fopen(t->path, "rb");
  long size;
  if (f == NULL) fail("cannot open ", t->path);
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0)
    fail("cannot read ", t->path);
  if ((size_t)size != t->nbytes) {
    fprintf(stderr, "run_kernel: %s has %ld bytes, expected %zu\n", t->path,
            size, t->nbytes);
    exit(2);
  }
  if (t->nbytes && fread(t->tensor.data, 1, t->nbytes, f) != t->nbytes)
    fail("cannot read ", t->path);
  fclose(f);
}

static void write_file(const Tensor* t) {
  FILE* f = fopen(t->path, "wb");
  if (f == NULL || (t->nbytes && fwrite(t->tensor.data, 1, t->nbytes, f) !=
                                     t->nbytes) ||
      fclose(f) != 0)
    fail("cannot write ", t->path);
}

int main(int argc, char** argv) {
  Tensor tensors[MAX_TENSORS];
  EmberValue args[MAX_TENSORS], ret;
  int32_t codes[MAX_TENSORS], ret_code = EMBER_TYPE_NULL, rc;
  int count = argc - 3;
  EmberPackedFunc function;
  void* lib;

  if (argc < 3) {
    fprintf(stderr,
            "usage: run_kernel LIBRARY FUNCTION in|out:DTYPE:SHAPE:FILE ...\n");
    return 2;
  }
  if (count > MAX_TENSORS) fail("too many tensors: at most 32", "");
  for (int i = 0; i < count; ++i) {
    parse_tensor(argv[3 + i], &tensors[i]);
    if (!tensors[i].output) read_file(&tensors[i]);
    args[i].v_handle = &tensors[i].tensor;
    codes[i] = EMBER_TYPE_DLTENSOR;
  }

  /* Kept open until exit: see ember_runtime.h on libgomp. */
  lib = dlopen(argv[1], RTLD_NOW);
  if (lib == NULL) fail("cannot open the library: ", dlerror());
  *(void**)&function = dlsym(lib, argv[2]);
  if (function == NULL) fail("the library defines no function ", argv[2]);
  {
    int32_t* threads = (int32_t*)dlsym(lib, EMBER_NUM_THREADS_SYMBOL);
    const char* env = getenv("EMBER_NUM_THREADS");
    if (threads != NULL && env != NULL && *env) *threads = atoi(env);
  }

  rc = function(args, codes, count, &ret, &ret_code);
  if (rc != EMBER_OK) {
    fprintf(stderr, "run_kernel: %s failed (code %d): %s\n", argv[2], (int)rc,
            ret_code == EMBER_TYPE_STR ? (const char*)ret.v_handle : "?");
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    if (tensors[i].output) write_file(&tensors[i]);
    free(tensors[i].tensor.data);
  }
  printf("ok\n");
  return 0;
}

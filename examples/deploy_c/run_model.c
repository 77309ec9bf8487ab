/*
 * run_model: run an ember model library from C, without Python.
 *
 *   run_model [--params PARAMS.bin] [--repeat N] LIBRARY IN_0.bin ... OUT_0.bin ...
 *
 * Opens the library, reads its model description from the int64 globals
 * ember_runtime.h documents (no JSON parsing), reads each input from a raw
 * file (the tensor's bytes, row-major, as numpy's x.tofile() writes them),
 * allocates the workspace, takes the params from the library (__ember_params)
 * or from PARAMS.bin (the packed blob, as ember.runtime.pack_params writes
 * it), calls default_run once, writes each output's raw bytes, and with
 * --repeat N times N more calls and prints their median.
 *
 * Exit status: 0 on success, 1 when the model refuses the call, 2 on bad
 * arguments, unreadable or wrong-sized files, or a library that is not a
 * model. C99 + POSIX (dlopen, posix_memalign, clock_gettime).
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember_runtime.h"

#define MAX_TENSORS 64
#define MAX_NDIM 16

typedef struct {
  DLTensor tensor;
  int64_t shape[MAX_NDIM];
  size_t nbytes;
} Tensor;

static void* aligned_buffer(size_t nbytes) {
  void* p = NULL;
  size_t size = nbytes ? nbytes : 1;
  size = (size + EMBER_MODEL_ALIGNMENT - 1) / EMBER_MODEL_ALIGNMENT *
         EMBER_MODEL_ALIGNMENT;
  if (posix_memalign(&p, EMBER_MODEL_ALIGNMENT, size) != 0) {
    fprintf(stderr, "run_model: cannot allocate %zu bytes\n", nbytes);
    exit(2);
  }
  memset(p, 0, size);
  return p;
}

static void byte_tensor(Tensor* t, void* data, int64_t nbytes) {
  t->shape[0] = nbytes;
  t->nbytes = (size_t)nbytes;
  t->tensor.data = data;
  t->tensor.device.device_type = kDLCPU;
  t->tensor.device.device_id = 0;
  t->tensor.ndim = 1;
  t->tensor.dtype.code = kDLUInt;
  t->tensor.dtype.bits = 8;
  t->tensor.dtype.lanes = 1;
  t->tensor.shape = t->shape;
  t->tensor.strides = NULL;
  t->tensor.byte_offset = 0;
}

/* Reads the description of one tensor from the io table at *at. */
static int read_tensor(const int64_t* io, size_t* at, Tensor* t) {
  int64_t code = io[(*at)++], bits = io[(*at)++], ndim = io[(*at)++];
  size_t count = 1;
  if (ndim < 0 || ndim > MAX_NDIM || bits <= 0 || bits % 8) return 0;
  memset(t, 0, sizeof *t);
  for (int64_t k = 0; k < ndim; ++k) {
    t->shape[k] = io[(*at)++];
    count *= (size_t)t->shape[k];
  }
  t->nbytes = count * (size_t)(bits / 8);
  t->tensor.data = aligned_buffer(t->nbytes);
  t->tensor.device.device_type = kDLCPU;
  t->tensor.ndim = (int32_t)ndim;
  t->tensor.dtype.code = (uint8_t)code;
  t->tensor.dtype.bits = (uint8_t)bits;
  t->tensor.dtype.lanes = 1;
  t->tensor.shape = t->shape;
  return 1;
}

static void describe(const char* what, int index, const Tensor* t) {
  printf("%s %d: dtype (%d, %d), shape (", what, index, t->tensor.dtype.code,
         t->tensor.dtype.bits);
  for (int k = 0; k < t->tensor.ndim; ++k)
    printf("%s%lld", k ? ", " : "", (long long)t->shape[k]);
  printf("%s), %zu bytes\n", t->tensor.ndim == 1 ? "," : "", t->nbytes);
}

/* Reads exactly nbytes from path into data; exits 2 otherwise. */
static void read_file(const char* path, void* data, size_t nbytes) {
  FILE* f = fopen(path, "rb");
  long size;
  if (f == NULL) {
    fprintf(stderr, "run_model: cannot open %s: %s\n", path, strerror(errno));
    exit(2);
  }
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "run_model: cannot read %s\n", path);
    exit(2);
  }
  if ((size_t)size != nbytes) {
    fprintf(stderr, "run_model: %s has %ld bytes, expected %zu\n", path, size,
            nbytes);
    exit(2);
  }
  if (nbytes && fread(data, 1, nbytes, f) != nbytes) {
    fprintf(stderr, "run_model: cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
}

static void write_file(const char* path, const void* data, size_t nbytes) {
  FILE* f = fopen(path, "wb");
  if (f == NULL || (nbytes && fwrite(data, 1, nbytes, f) != nbytes) ||
      fclose(f) != 0) {
    fprintf(stderr, "run_model: cannot write %s\n", path);
    exit(2);
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static const void* symbol(void* lib, const char* name, int required) {
  const void* p = dlsym(lib, name);
  if (p == NULL && required) {
    fprintf(stderr, "run_model: the library defines no %s: not an ember model\n",
            name);
    exit(2);
  }
  return p;
}

static long positive(const char* text, const char* what) {
  char* end;
  long value;
  errno = 0;
  value = strtol(text, &end, 10);
  if (errno || *end || end == text || value < 0) {
    fprintf(stderr, "run_model: %s must be a non-negative integer, got '%s'\n",
            what, text);
    exit(2);
  }
  return value;
}

int main(int argc, char** argv) {
  const char* params_path = NULL;
  long repeat = 0;
  int first = 1;
  while (first < argc && strncmp(argv[first], "--", 2) == 0) {
    if (strcmp(argv[first], "--params") == 0 && first + 1 < argc) {
      params_path = argv[first + 1];
    } else if (strcmp(argv[first], "--repeat") == 0 && first + 1 < argc) {
      repeat = positive(argv[first + 1], "--repeat");
    } else {
      fprintf(stderr, "run_model: unknown option %s\n", argv[first]);
      return 2;
    }
    first += 2;
  }
  if (first >= argc) {
    fprintf(stderr,
            "usage: run_model [--params PARAMS.bin] [--repeat N] LIBRARY "
            "IN_0.bin ... OUT_0.bin ...\n");
    return 2;
  }

  void* lib = dlopen(argv[first], RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "run_model: cannot open %s: %s\n", argv[first], dlerror());
    return 2;
  }
  /* Keep the library open until exit: see ember_runtime.h on libgomp. */
  EmberPackedFunc run;
  *(void**)&run = (void*)symbol(lib, EMBER_MODEL_RUN_SYMBOL, 1);
  int64_t workspace_bytes =
      *(const int64_t*)symbol(lib, EMBER_MODEL_WORKSPACE_BYTES_SYMBOL, 1);
  int64_t params_bytes =
      *(const int64_t*)symbol(lib, EMBER_MODEL_PARAMS_BYTES_SYMBOL, 1);
  const int64_t* io = (const int64_t*)symbol(lib, EMBER_MODEL_IO_SYMBOL, 1);
  const void* embedded = symbol(lib, EMBER_PARAMS_SYMBOL, 0);
  int32_t* threads = (int32_t*)symbol(lib, EMBER_NUM_THREADS_SYMBOL, 0);
  const char* env = getenv("EMBER_NUM_THREADS");
  if (threads != NULL && env != NULL && *env)
    *threads = (int32_t)positive(env, "EMBER_NUM_THREADS");

  int num_inputs = (int)io[0], num_outputs = (int)io[1];
  if (num_inputs < 0 || num_outputs < 0 ||
      num_inputs + num_outputs + 2 > MAX_TENSORS) {
    fprintf(stderr, "run_model: %s has a malformed %s\n", argv[first],
            EMBER_MODEL_IO_SYMBOL);
    return 2;
  }
  if (argc - first - 1 != num_inputs + num_outputs) {
    fprintf(stderr,
            "run_model: the model has %d input(s) and %d output(s): give %d "
            "file(s) after the library, got %d\n",
            num_inputs, num_outputs, num_inputs + num_outputs,
            argc - first - 1);
    return 2;
  }
  printf("model: %s (workspace %lld bytes, params %lld bytes, %s)\n",
         argv[first], (long long)workspace_bytes, (long long)params_bytes,
         embedded ? "embedded" : "separate");

  Tensor tensors[MAX_TENSORS];
  size_t at = 2;
  int count = num_inputs + num_outputs;
  for (int i = 0; i < count; ++i) {
    if (!read_tensor(io, &at, &tensors[i])) {
      fprintf(stderr, "run_model: %s has a malformed %s\n", argv[first],
              EMBER_MODEL_IO_SYMBOL);
      return 2;
    }
    describe(i < num_inputs ? "input" : "output",
             i < num_inputs ? i : i - num_inputs, &tensors[i]);
  }
  for (int i = 0; i < num_inputs; ++i)
    read_file(argv[first + 1 + i], tensors[i].tensor.data, tensors[i].nbytes);

  byte_tensor(&tensors[count], aligned_buffer((size_t)workspace_bytes),
              workspace_bytes);
  void* params = (void*)embedded;
  if (params_path != NULL) {
    params = aligned_buffer((size_t)params_bytes);
    read_file(params_path, params, (size_t)params_bytes);
  } else if (params == NULL) {
    if (params_bytes > 0) {
      fprintf(stderr,
              "run_model: %s keeps its params separate: pass --params "
              "PARAMS.bin (the packed blob)\n",
              argv[first]);
      return 2;
    }
    params = aligned_buffer(0);
  }
  byte_tensor(&tensors[count + 1], params, params_bytes);

  EmberValue args[MAX_TENSORS];
  int32_t codes[MAX_TENSORS];
  for (int i = 0; i < count + 2; ++i) {
    args[i].v_handle = &tensors[i].tensor;
    codes[i] = EMBER_TYPE_DLTENSOR;
  }
  EmberValue ret;
  int32_t ret_code;
  int32_t rc = run(args, codes, count + 2, &ret, &ret_code);
  if (rc != EMBER_OK) {
    fprintf(stderr, "run_model: default_run failed (code %d): %s\n", (int)rc,
            ret_code == EMBER_TYPE_STR ? (const char*)ret.v_handle : "?");
    return 1;
  }
  for (int i = 0; i < num_outputs; ++i) {
    Tensor* t = &tensors[num_inputs + i];
    write_file(argv[first + 1 + num_inputs + i], t->tensor.data, t->nbytes);
  }
  if (repeat > 0) {
    double* times = malloc((size_t)repeat * sizeof *times);
    if (times == NULL) return 2;
    for (long r = 0; r < repeat; ++r) {
      double start = now_ms();
      run(args, codes, count + 2, &ret, &ret_code);
      times[r] = now_ms() - start;
    }
    qsort(times, (size_t)repeat, sizeof *times, compare);
    printf("latency: median %.4f ms over %ld run(s)\n", times[repeat / 2],
           repeat);
    free(times);
  }
  for (int i = 0; i <= count; ++i) free(tensors[i].tensor.data);
  if (params != embedded) free(params);
  printf("ok\n");
  return 0;
}

/*
 * Run an ember-compiled matmul from C, without Python.
 *
 *   deploy_c LIBRARY [FUNCTION [M K N]]
 *
 * Opens LIBRARY (a shared library exported by ember, see build_kernel.py),
 * prints its metadata, calls FUNCTION (default "matmul", C = A @ B with A of
 * shape M x K, B of K x N and C of M x N, float32; default 64 48 32) on
 * tensors built here, checks the result against a plain C matmul, and then
 * shows the error path: calls with a wrong-shape tensor and with a missing
 * argument, which the kernel must refuse with a message.
 *
 * Exit status: 0 if everything behaved; 1 on a wrong result, a refused good
 * call or a wrong call that did not fail; 2 on bad command-line arguments or
 * EMBER_NUM_THREADS, or a library or function that cannot be opened.
 *
 * C99, libc and libdl only:
 *   cc -std=c99 -I../../runtime/include main.c -o deploy_c -ldl
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember_runtime.h"

/* The function `name` of `lib`, or NULL. ISO C has no conversion from the
 * void* dlsym returns to a function pointer; copying the bytes is the
 * portable spelling of what POSIX guarantees works. */
static EmberPackedFunc lookup(void* lib, const char* name) {
  void* symbol = dlsym(lib, name);
  EmberPackedFunc f = NULL;
  if (symbol != NULL) memcpy(&f, &symbol, sizeof f);
  return f;
}

/* A CPU float32 tensor over `data`; `shape` (and `strides`) must outlive it. */
static DLTensor tensor(float* data, int32_t ndim, int64_t* shape,
                       int64_t* strides) {
  DLTensor t;
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return t;
}

/* Calls f with `n` tensors; returns f's code, and its message in *message
 * (NULL on success). */
static int32_t call(EmberPackedFunc f, DLTensor** tensors, int32_t n,
                    const char** message) {
  EmberValue args[8];
  int32_t codes[8];
  EmberValue ret;
  int32_t ret_code = EMBER_TYPE_NULL;
  int32_t i, rc;
  for (i = 0; i < n; i++) {
    args[i].v_handle = tensors[i];
    codes[i] = EMBER_TYPE_DLTENSOR;
  }
  ret.v_handle = NULL;
  rc = f(args, codes, n, &ret, &ret_code);
  *message = NULL;
  if (rc != EMBER_OK)
    *message = ret_code == EMBER_TYPE_STR && ret.v_handle != NULL
                   ? (const char*)ret.v_handle
                   : "(no message)";
  return rc;
}

/* Pseudo-random multiples of 1/8 in [-1, 1): every product and partial sum
 * is exact in float32, so any summation order gives the reference's result. */
static void fill(float* a, int64_t n, uint32_t seed) {
  int64_t i;
  for (i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    a[i] = (float)((int)(seed >> 28) - 8) * 0.125f;
  }
}

/* `text` as an integer in [1, max]; exits with status 2 naming `what` if it
 * is not one. */
static long parse_positive(const char* text, long max, const char* what) {
  char* end;
  long v = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < 1 || v > max) {
    fprintf(stderr, "deploy_c: %s must be an integer in 1..%ld, got '%s'\n",
            what, max, text);
    exit(2);
  }
  return v;
}

int main(int argc, char** argv) {
  const char* path;
  const char* name = "matmul";
  int64_t M = 64, K = 48, N = 32, i, j, k;
  void* lib;
  EmberPackedFunc metadata, f;
  int32_t* num_threads;
  const char* threads_env;
  const char* message;
  int32_t rc;
  float *a, *b, *c, *ref, *wrong;
  double max_error = 0.0;
  int64_t mismatches = 0;
  int status = 0;

  if (argc != 2 && argc != 3 && argc != 6) {
    fprintf(stderr, "usage: %s LIBRARY [FUNCTION [M K N]]\n", argv[0]);
    return 2;
  }
  path = argv[1];
  if (argc >= 3) name = argv[2];
  if (argc == 6) {
    M = parse_positive(argv[3], 4096, "M");
    K = parse_positive(argv[4], 4096, "K");
    N = parse_positive(argv[5], 4096, "N");
  }

  /* 1. Open the library. One with parallel loops depends on libgomp, which
   * the dynamic loader finds like any other library. */
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "deploy_c: cannot open %s: %s\n", path, dlerror());
    return 2;
  }

  /* 2. Threads: a library with parallel loops has __ember_num_threads;
   * 0 means libgomp's default. Honour EMBER_NUM_THREADS like Python does. */
  num_threads = (int32_t*)dlsym(lib, EMBER_NUM_THREADS_SYMBOL);
  threads_env = getenv("EMBER_NUM_THREADS");
  if (num_threads != NULL && threads_env != NULL && *threads_env != '\0')
    *num_threads = (int32_t)parse_positive(threads_env, 1L << 30,
                                           "EMBER_NUM_THREADS");
  if (num_threads != NULL)
    printf("threads per parallel region: %d (0: libgomp's default)\n",
           (int)*num_threads);

  /* 3. The library describes itself: a JSON string from __ember_metadata. */
  metadata = lookup(lib, EMBER_METADATA_SYMBOL);
  if (metadata == NULL) {
    fprintf(stderr, "deploy_c: %s is not an ember library (no %s)\n", path,
            EMBER_METADATA_SYMBOL);
    return 2;
  } else {
    EmberValue ret;
    int32_t ret_code;
    rc = metadata(NULL, NULL, 0, &ret, &ret_code);
    if (rc != EMBER_OK || ret_code != EMBER_TYPE_STR) {
      fprintf(stderr, "deploy_c: %s failed (code %d)\n", EMBER_METADATA_SYMBOL,
              (int)rc);
      return 2;
    }
    printf("metadata: %s\n", (const char*)ret.v_handle);
  }

  /* 4. The kernel, by name. */
  f = lookup(lib, name);
  if (f == NULL) {
    fprintf(stderr, "deploy_c: %s has no function '%s'\n", path, name);
    return 2;
  }

  /* 5. Inputs and output: plain malloc'd memory wrapped in DLTensors. A and
   * B are compact without strides (NULL); C spells its strides out. */
  a = malloc(sizeof(float) * (size_t)(M * K));
  b = malloc(sizeof(float) * (size_t)(K * N));
  c = malloc(sizeof(float) * (size_t)(M * N));
  ref = malloc(sizeof(float) * (size_t)(M * N));
  wrong = malloc(sizeof(float) * (size_t)((K + 1) * N));
  if (!a || !b || !c || !ref || !wrong) {
    fprintf(stderr, "deploy_c: out of memory\n");
    return 2;
  }
  fill(a, M * K, 1);
  fill(b, K * N, 2);
  fill(wrong, (K + 1) * N, 3);
  /* A value no matmul of these inputs gives: an element the kernel skips shows. */
  for (i = 0; i < M * N; i++) c[i] = -12345.0f;
  {
    int64_t shape_a[2], shape_b[2], shape_c[2], strides_c[2], shape_wrong[2];
    DLTensor ta, tb, tc, twrong;
    DLTensor* args[3];
    shape_a[0] = M, shape_a[1] = K;
    shape_b[0] = K, shape_b[1] = N;
    shape_c[0] = M, shape_c[1] = N;
    strides_c[0] = N, strides_c[1] = 1;
    shape_wrong[0] = K + 1, shape_wrong[1] = N;
    ta = tensor(a, 2, shape_a, NULL);
    tb = tensor(b, 2, shape_b, NULL);
    tc = tensor(c, 2, shape_c, strides_c);
    twrong = tensor(wrong, 2, shape_wrong, NULL);

    /* 6. Run it and check it against C. */
    args[0] = &ta, args[1] = &tb, args[2] = &tc;
    rc = call(f, args, 3, &message);
    if (rc != EMBER_OK) {
      fprintf(stderr, "deploy_c: %s failed with code %d: %s\n", name, (int)rc,
              message);
      return 1;
    }
    for (i = 0; i < M; i++)
      for (j = 0; j < N; j++) {
        float sum = 0.0f;
        double error;
        for (k = 0; k < K; k++) sum += a[i * K + k] * b[k * N + j];
        ref[i * N + j] = sum;
        error = (double)c[i * N + j] - (double)sum;
        if (error < 0) error = -error;
        if (error > max_error) max_error = error;
        if (!(error <= 1e-4)) mismatches++; /* NaN counts */
      }
    printf("%s(A[%ld x %ld], B[%ld x %ld]) -> C[%ld x %ld]\n", name, (long)M,
           (long)K, (long)K, (long)N, (long)M, (long)N);
    printf("C[0][:%ld] =", (long)(N < 4 ? N : 4));
    for (j = 0; j < N && j < 4; j++) printf(" %g", c[j]);
    printf("\n");
    printf("C[%ld][%ld] = %g (reference %g)\n", (long)(M - 1), (long)(N - 1),
           c[M * N - 1], ref[M * N - 1]);
    if (mismatches == 0) {
      printf("result: ok (max abs error %g)\n", max_error);
    } else {
      printf("result: MISMATCH in %ld of %ld elements (max abs error %g)\n",
             (long)mismatches, (long)(M * N), max_error);
      status = 1;
    }

    /* 7. The error path: the kernel checks its arguments and says what is
     * wrong instead of reading out of bounds. */
    args[1] = &twrong;
    rc = call(f, args, 3, &message);
    if (rc == EMBER_OK) {
      printf("wrong shape: MISSED (the kernel accepted B of %ld x %ld)\n",
             (long)(K + 1), (long)N);
      status = 1;
    } else {
      printf("wrong shape: code %d (argument %d): %s\n", (int)rc,
             (int)EMBER_ERR_ARG_INDEX(rc), message);
      if (rc != EMBER_ERR_ARG(1)) status = 1;
    }
    args[1] = &tb;
    rc = call(f, args, 2, &message);
    if (rc == EMBER_OK) {
      printf("wrong count: MISSED (the kernel accepted 2 arguments)\n");
      status = 1;
    } else {
      printf("wrong count: code %d: %s\n", (int)rc, message);
      if (rc != EMBER_ERR_ARG_COUNT) status = 1;
    }
  }

  free(a);
  free(b);
  free(c);
  free(ref);
  free(wrong);
  /* No dlclose: the kernel has run parallel loops, so libgomp, which the
   * library brought in, has a pool of worker threads; unloading the library
   * would unload libgomp under them. A library stays open until exit. */
  return status;
}

/*
 * run_model_crt: run an ember model library through the C runtime
 * (runtime/include/ember_crt.h, libember_runtime.a), without Python.
 *
 *   run_model_crt [--params FILE] [--repeat N] [--shape NAME=D0,D1...]...
 *                 LIBRARY NAME=FILE ...
 *
 * Where run_model.c reads the model's int64 tables, this host goes by the
 * metadata: it prints every input and output with its name, dtype and shape
 * (a symbolic dim as its expression: "(batch, seq + 1)"), reads each input
 * NAME=FILE (raw bytes, as numpy's x.tofile() writes them) at the shape
 * --shape gives it (which an input with symbolic dims needs), loads --params
 * (a param dict, as ember.runtime.save_param_dict writes it, or the packed
 * blob), runs the model, and writes each output NAME=FILE (an output's shape
 * is the one its inputs give). With --repeat N it prints the median of N
 * more runs.
 *
 * Exit status: 0 on success, 1 when the runtime or the model refuses (its
 * message is printed), 2 on bad arguments or files.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember_crt.h"

/* Kept here so that what they hold stays reachable when an error ends the
 * program (LeakSanitizer reports only lost memory). */
static EmberModule* lib;
static EmberModel* model;
static void* data;

static int fail(int status) {
  free(data);
  data = NULL;
  fprintf(stderr, "run_model_crt: %s\n", EmberGetLastError());
  return status;
}

static void describe(const char* kind, const EmberTensorInfo* t) {
  printf("%s %s: %s (", kind, t->name, EmberDataTypeName(t->dtype));
  for (int32_t k = 0; k < t->ndim; ++k) {
    if (t->dims && t->dims[k]) printf("%s%s", k ? ", " : "", t->dims[k]);
    else printf("%s%lld", k ? ", " : "", (long long)t->shape[k]);
  }
  printf("%s)\n", t->ndim == 1 ? "," : "");
}

/* Input i's shape from --shape NAME=D0,D1... (`shapes`, `count` of them):
 * 1 if given, 0 if not, -1 (with a message) if it is not i's ndim extents. */
static int given_shape(const EmberModel* model, int32_t i, char** shapes,
                       int count, int64_t* shape) {
  EmberTensorInfo t;
  EmberModelInputInfo(model, i, &t);
  for (int s = 0; s < count; ++s) {
    char* eq = strrchr(shapes[s], '=');
    if (eq == NULL || (size_t)(eq - shapes[s]) != strlen(t.name) ||
        strncmp(shapes[s], t.name, strlen(t.name)) != 0)
      continue;
    char *at = eq + 1, *end = at;
    int32_t k = 0;
    for (; k < t.ndim; ++k, at = end + 1) {
      shape[k] = strtoll(at, &end, 10);
      if (end == at || *end != (k + 1 < t.ndim ? ',' : '\0')) break;
    }
    if (k == t.ndim && *end == 0) return 1;
    fprintf(stderr, "run_model_crt: --shape %s: input %s has %d dims\n",
            shapes[s], t.name, (int)t.ndim);
    return -1;
  }
  if (t.dims == NULL) return 0;
  fprintf(stderr, "run_model_crt: input %s has symbolic dims: give its shape "
                  "(--shape %s=D0,D1...)\n", t.name, t.name);
  return -1;
}

/* The output index of `name`, or -1. */
static int32_t output_index(const EmberModel* model, const char* name) {
  EmberTensorInfo t;
  for (int32_t i = 0; i < EmberModelNumOutputs(model); ++i)
    if (EmberModelOutputInfo(model, i, &t) == 0 && strcmp(t.name, name) == 0)
      return i;
  return -1;
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

int main(int argc, char** argv) {
  const char* params = NULL;
  long repeat = 0;
  int first = 1, num_shapes = 0;
  char* shapes[64];
  int64_t shape[32];
  for (; first + 1 < argc && strncmp(argv[first], "--", 2) == 0; first += 2) {
    if (strcmp(argv[first], "--params") == 0) params = argv[first + 1];
    else if (strcmp(argv[first], "--repeat") == 0) repeat = atol(argv[first + 1]);
    else if (strcmp(argv[first], "--shape") == 0 && num_shapes < 64)
      shapes[num_shapes++] = argv[first + 1];
    else break;
  }
  if (first >= argc || strncmp(argv[first], "--", 2) == 0) {
    fprintf(stderr, "usage: run_model_crt [--params FILE] [--repeat N] "
                    "[--shape NAME=D0,D1...]... LIBRARY NAME=FILE ...\n");
    return 2;
  }
  if (EmberModuleLoad(argv[first], &lib) || EmberModelCreate(lib, &model))
    return fail(1);
  EmberTensorInfo t;
  for (int32_t i = 0; EmberModelInputInfo(model, i, &t) == 0; ++i)
    describe("input", &t);
  for (int32_t i = 0; EmberModelOutputInfo(model, i, &t) == 0; ++i)
    describe("output", &t);

  size_t nbytes;
  if (params != NULL) {
    if (EmberReadFile(params, &data, &nbytes)) return fail(2);
    if (EmberModelLoadParams(model, data, nbytes)) return fail(1);
    free(data);
    data = NULL;
  }
  int given = 0;
  for (int a = first + 1; a < argc; ++a) {
    char* eq = strchr(argv[a], '=');
    if (eq == NULL) {
      fprintf(stderr, "run_model_crt: expected NAME=FILE, got '%s'\n", argv[a]);
      return 2;
    }
    *eq = 0;
    if (output_index(model, argv[a]) >= 0) continue;
    int32_t i = EmberModelInputIndex(model, argv[a]);
    if (i < 0) return fail(2);
    int shaped = given_shape(model, i, shapes, num_shapes, shape);
    if (shaped < 0) return 2;
    if (shaped && EmberModelSetInputShape(model, i, shape)) return fail(1);
    DLTensor* input = EmberModelInput(model, i);
    if (EmberReadFile(eq + 1, &data, &nbytes)) return fail(2);
    if (nbytes != EmberArrayNumBytes(input)) {
      fprintf(stderr, "run_model_crt: %s has %zu bytes, input %s takes %zu\n",
              eq + 1, nbytes, argv[a], EmberArrayNumBytes(input));
      free(data);
      return 2;
    }
    memcpy(input->data, data, nbytes);
    free(data);
    data = NULL;
    ++given;
  }
  if (given != EmberModelNumInputs(model)) {
    fprintf(stderr, "run_model_crt: the model has %d input(s), %d given\n",
            (int)EmberModelNumInputs(model), given);
    return 2;
  }
  if (EmberModelRun(model)) return fail(1);
  for (int a = first + 1; a < argc; ++a) {
    int32_t i = output_index(model, argv[a]);
    const char* path = argv[a] + strlen(argv[a]) + 1;
    if (i < 0) continue;
    DLTensor* out = EmberModelOutput(model, i);
    FILE* f = fopen(path, "wb");
    size_t size = EmberArrayNumBytes(out);
    if (f == NULL || fwrite(out->data, 1, size, f) != size || fclose(f)) {
      fprintf(stderr, "run_model_crt: cannot write %s\n", path);
      return 2;
    }
  }
  if (repeat > 0) {
    double* times = malloc((size_t)repeat * sizeof *times);
    for (long r = 0; times != NULL && r < repeat; ++r) {
      double start = now_ms();
      EmberModelRun(model);
      times[r] = now_ms() - start;
    }
    if (times == NULL) return 2;
    qsort(times, (size_t)repeat, sizeof *times, compare);
    printf("latency: median %.4f ms over %ld run(s)\n", times[repeat / 2],
           repeat);
    free(times);
  }
  EmberModelFree(model);
  EmberModuleFree(lib);
  printf("ok\n");
  return 0;
}

/* Tensors the runtime owns, and dtype names. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const struct {
  const char* name;
  uint8_t code, bits;
} DTYPES[] = {
    {"float32", kDLFloat, 32}, {"float64", kDLFloat, 64},
    {"float16", kDLFloat, 16}, {"bfloat16", kDLBfloat, 16},
    {"int8", kDLInt, 8},       {"int16", kDLInt, 16},
    {"int32", kDLInt, 32},     {"int64", kDLInt, 64},
    {"uint8", kDLUInt, 8},     {"uint16", kDLUInt, 16},
    {"uint32", kDLUInt, 32},   {"uint64", kDLUInt, 64},
    {"bool", kDLBool, 8},
};
#define NUM_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

int EmberDataTypeFromString(const char* name, DLDataType* out) {
  for (size_t k = 0; k < NUM_DTYPES; ++k) {
    if (strcmp(DTYPES[k].name, name) == 0) {
      out->code = DTYPES[k].code;
      out->bits = DTYPES[k].bits;
      out->lanes = 1;
      return 0;
    }
  }
  return ember_error("unknown dtype '%s'", name);
}

const char* EmberDataTypeName(DLDataType dtype) {
  for (size_t k = 0; k < NUM_DTYPES; ++k)
    if (DTYPES[k].code == dtype.code && DTYPES[k].bits == dtype.bits &&
        dtype.lanes == 1)
      return DTYPES[k].name;
  return NULL;
}

size_t ember_dtype_bytes(DLDataType dtype) {
  return ((size_t)dtype.bits * dtype.lanes + 7) / 8;
}

void* ember_aligned_zeros(size_t nbytes) {
  void* p = NULL;
  size_t size = (nbytes + EMBER_MODEL_ALIGNMENT - 1) / EMBER_MODEL_ALIGNMENT *
                EMBER_MODEL_ALIGNMENT;
  if (size < nbytes ||
      posix_memalign(&p, EMBER_MODEL_ALIGNMENT, size ? size : 1) != 0)
    return NULL;
  memset(p, 0, size);
  return p;
}

size_t EmberArrayNumBytes(const DLTensor* t) {
  size_t n = ember_dtype_bytes(t->dtype);
  for (int32_t k = 0; k < t->ndim; ++k) n *= (size_t)t->shape[k];
  return n;
}

/* The tensor and its shape in one allocation. */
typedef struct {
  DLTensor tensor;
  int64_t shape[];
} Owned;

int EmberArrayEmpty(const int64_t* shape, int32_t ndim, DLDataType dtype,
                    DLTensor** out) {
  size_t count = 1;
  if (ndim < 0 || ndim > 32)
    return ember_error("an array has 0 to 32 dimensions, got %d", (int)ndim);
  if (EmberDataTypeName(dtype) == NULL)
    return ember_error("unsupported dtype (code %d, bits %d, lanes %d)",
                       dtype.code, dtype.bits, dtype.lanes);
  for (int32_t k = 0; k < ndim; ++k) {
    if (shape[k] < 0 || (shape[k] && count > SIZE_MAX / 16 / (size_t)shape[k]))
      return ember_error("bad extent %lld in dimension %d",
                         (long long)shape[k], (int)k);
    count *= (size_t)shape[k];
  }
  Owned* a = calloc(1, sizeof(Owned) + (size_t)ndim * sizeof(int64_t));
  void* data = ember_aligned_zeros(count * ember_dtype_bytes(dtype));
  if (a == NULL || data == NULL) {
    free(a);
    free(data);
    return ember_error("cannot allocate an array of %zu elements", count);
  }
  memcpy(a->shape, shape, (size_t)ndim * sizeof(int64_t));
  a->tensor.data = data;
  a->tensor.device.device_type = kDLCPU;
  a->tensor.ndim = ndim;
  a->tensor.dtype = dtype;
  a->tensor.shape = a->shape;
  *out = &a->tensor;
  return 0;
}

void EmberArrayFree(DLTensor* array) {
  if (array == NULL) return;
  free(array->data);
  free(array); /* the tensor is the first member of its Owned */
}

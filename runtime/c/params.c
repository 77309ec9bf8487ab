/* Param dicts (runtime/params.py's format) and whole files. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  char* name;
  DLTensor tensor;
  int64_t shape[32];
} Entry;

struct EmberParamDict {
  void* copy; /* the document, 64-byte aligned: entries view its data */
  int32_t count;
  Entry* entries;
};

/* zlib's CRC-32, a byte at a time from a table made on first use. */
static uint32_t crc32(const unsigned char* p, size_t n) {
  static uint32_t table[256];
  uint32_t crc = 0xffffffffu;
  if (table[1] == 0) {
    for (uint32_t k = 0; k < 256; ++k) {
      uint32_t c = k;
      for (int b = 0; b < 8; ++b) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[k] = c;
    }
  }
  while (n--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

static uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  while (bytes--) v = v << 8 | p[bytes];
  return v;
}

typedef struct {
  const unsigned char* data;
  size_t at, end;
} Reader;

/* The next n bytes, or NULL (and an error naming what) past the end. */
static const unsigned char* take(Reader* r, size_t n, int32_t entry,
                                 const char* what) {
  if (n > r->end - r->at) {
    ember_error(
        "truncated param dict: entry %d: %s needs %zu bytes at offset %zu, "
        "only %zu left",
        (int)entry, what, n, r->at, r->end - r->at);
    return NULL;
  }
  r->at += n;
  return r->data + r->at - n;
}

static int read_entry(Reader* r, int32_t i, Entry* e) {
  const unsigned char* p;
  char dtype[32];
  if (!(p = take(r, 4, i, "the name length"))) return -1;
  size_t length = (size_t)le(p, 4);
  if (!(p = take(r, length, i, "the name"))) return -1;
  if (length == 0 || memchr(p, 0, length))
    return ember_error("corrupt param dict: entry %d has a bad name", (int)i);
  if ((e->name = malloc(length + 1)) == NULL) return ember_error("out of memory");
  memcpy(e->name, p, length);
  e->name[length] = 0;
  if (!(p = take(r, 2, i, "the dtype length"))) return -1;
  length = (size_t)le(p, 2);
  if (!(p = take(r, length, i, "the dtype"))) return -1;
  if (length >= sizeof dtype)
    return ember_error("corrupt param dict: param '%s': bad dtype", e->name);
  memcpy(dtype, p, length);
  dtype[length] = 0;
  if (EmberDataTypeFromString(dtype, &e->tensor.dtype))
    return ember_error("corrupt param dict: param '%s': unknown dtype '%s'",
                       e->name, dtype);
  if (!(p = take(r, 4, i, "ndim"))) return -1;
  e->tensor.ndim = (int32_t)le(p, 4);
  if (le(p, 4) > 32)
    return ember_error("corrupt param dict: param '%s': ndim exceeds 32",
                       e->name);
  uint64_t expected = ember_dtype_bytes(e->tensor.dtype);
  for (int32_t k = 0; k < e->tensor.ndim; ++k) {
    if (!(p = take(r, 8, i, "shape"))) return -1;
    e->shape[k] = (int64_t)le(p, 8);
    if (e->shape[k] < 0 || (e->shape[k] && expected > UINT64_MAX / (uint64_t)e->shape[k]))
      return ember_error("corrupt param dict: param '%s': bad extent",
                         e->name);
    expected *= (uint64_t)e->shape[k];
  }
  if (!(p = take(r, 8, i, "nbytes"))) return -1;
  if (le(p, 8) != expected)
    return ember_error(
        "corrupt param dict: param '%s': %llu bytes of data for its shape, "
        "expected %llu",
        e->name, (unsigned long long)le(p, 8), (unsigned long long)expected);
  if (!take(r, (EMBER_MODEL_ALIGNMENT - r->at % EMBER_MODEL_ALIGNMENT) %
                   EMBER_MODEL_ALIGNMENT, i, "padding") ||
      !(p = take(r, (size_t)expected, i, "data")))
    return -1;
  e->tensor.data = (void*)p;
  e->tensor.device.device_type = kDLCPU;
  e->tensor.shape = e->shape;
  return 0;
}

int EmberParamDictLoad(const void* data, size_t nbytes, EmberParamDict** out) {
  const unsigned char* bytes = data;
  if (nbytes < 16 || memcmp(bytes, "EMBERPRM", 8) != 0)
    return ember_error("not an ember param dict (no EMBERPRM magic)");
  uint32_t version = (uint32_t)le(bytes + 8, 4);
  if (version != 1 && version != 2)
    return ember_error("param dict version %u is not supported (1 and 2 are)",
                       (unsigned)version);
  if (version == 2) {
    if (nbytes < 20) return ember_error("truncated param dict");
    nbytes -= 4;
    uint32_t actual = crc32(bytes, nbytes);
    if (actual != (uint32_t)le(bytes + nbytes, 4))
      return ember_error(
          "damaged param dict: the CRC-32 of its %zu bytes is 0x%08x, its "
          "last 4 bytes record 0x%08x",
          nbytes, (unsigned)actual, (unsigned)le(bytes + nbytes, 4));
  }
  uint64_t count = le(bytes + 12, 4);
  if (count > (nbytes - 16) / 16) /* an entry takes at least 16 bytes */
    return ember_error("corrupt param dict: %llu entries in %zu bytes",
                       (unsigned long long)count, nbytes);
  EmberParamDict* d = calloc(1, sizeof *d);
  if (d != NULL) {
    d->count = (int32_t)count;
    d->copy = ember_aligned_zeros(nbytes);
    d->entries = calloc(count ? (size_t)count : 1, sizeof(Entry));
  }
  if (d == NULL || d->copy == NULL || d->entries == NULL) {
    EmberParamDictFree(d);
    return ember_error("out of memory reading a param dict of %zu bytes",
                       nbytes);
  }
  memcpy(d->copy, bytes, nbytes);
  Reader r = {d->copy, 16, nbytes};
  for (int32_t i = 0; i < d->count; ++i) {
    if (read_entry(&r, i, &d->entries[i])) {
      EmberParamDictFree(d);
      return -1;
    }
    for (int32_t j = 0; j < i; ++j)
      if (strcmp(d->entries[j].name, d->entries[i].name) == 0) {
        ember_error("corrupt param dict: param '%s' appears twice",
                    d->entries[i].name);
        EmberParamDictFree(d);
        return -1;
      }
  }
  if (r.at != nbytes) {
    EmberParamDictFree(d);
    return ember_error("corrupt param dict: %zu bytes after the last entry",
                       nbytes - r.at);
  }
  *out = d;
  return 0;
}

int32_t EmberParamDictSize(const EmberParamDict* d) { return d->count; }

const char* EmberParamDictName(const EmberParamDict* d, int32_t i) {
  return i >= 0 && i < d->count ? d->entries[i].name : NULL;
}

const DLTensor* EmberParamDictGet(const EmberParamDict* d, int32_t i) {
  return i >= 0 && i < d->count ? &d->entries[i].tensor : NULL;
}

void EmberParamDictFree(EmberParamDict* d) {
  if (d == NULL) return;
  for (int32_t i = 0; d->entries != NULL && i < d->count; ++i)
    free(d->entries[i].name);
  free(d->entries);
  free(d->copy);
  free(d);
}

int EmberReadFile(const char* path, void** data, size_t* nbytes) {
  FILE* f = fopen(path, "rb");
  Buf b = {0};
  char chunk[1 << 14];
  size_t n;
  if (f == NULL)
    return ember_error("cannot open %s: %s", path, strerror(errno));
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_put(&b, chunk, n);
  int bad = ferror(f) || b.failed;
  fclose(f);
  if (bad) {
    free(b.data);
    return ember_error("cannot read %s", path);
  }
  *data = b.data ? b.data : malloc(1);
  *nbytes = b.len;
  return 0;
}

/* What the C runtime's files share: errors, a JSON reader and writer. */
#ifndef EMBER_CRT_INTERNAL_H_
#define EMBER_CRT_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "ember_crt.h"

/* Sets the calling thread's last error (printf format); returns -1. */
int ember_error(const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* A parsed JSON value. Objects and arrays list their members through
 * `child` and `next`; an object member's key is `key`. */
enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };
typedef struct Json {
  int kind;
  int is_int;     /* a number written as an integer that fits int64 */
  int64_t i;      /* bools and integers */
  double d;       /* numbers */
  char* str;      /* strings, decoded, NUL-terminated */
  char* key;      /* object members */
  size_t len;     /* string bytes, or members */
  struct Json* child;
  struct Json* next;
} Json;

/* Parses `len` bytes of JSON text; NULL (and the last error) if it is not
 * one JSON value or nests deeper than 64. */
Json* json_parse(const char* text, size_t len);
/* 1 if `len` bytes are well-formed UTF-8 (no surrogates), as Python decodes. */
int json_utf8_valid(const char* s, size_t len);
void json_free(Json* value);
/* The member `key` of an object (NULL if absent or not an object). */
const Json* json_get(const Json* object, const char* key);
/* An integer member, or `fallback`. */
int64_t json_int(const Json* object, const char* key, int64_t fallback);
/* A string member, or NULL. */
const char* json_str(const Json* object, const char* key);

/* A growable byte buffer (JSON replies, file contents). */
typedef struct {
  char* data;
  size_t len, cap;
  int failed; /* an allocation failed: the contents are incomplete */
} Buf;
void buf_put(Buf* b, const void* data, size_t n);
void buf_printf(Buf* b, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A JSON string literal with its quotes, escaped. */
void buf_json_string(Buf* b, const char* s);

/* The shape and dtype of a metadata tensor ({"shape": [...], "dtype": "..."});
 * 0 or -1 naming `what`. `shape` holds up to 32 extents; an expression's
 * text (a symbolic dim, dims.c) reads as 0 if `symbolic`, else is refused. */
int json_tensor_type(const Json* tensor, const char* what, int symbolic,
                     int32_t* ndim, int64_t* shape, DLDataType* dtype);

/* The element size in bytes of a dtype (bits rounded up to bytes). */
size_t ember_dtype_bytes(DLDataType dtype);

/* A module's parsed metadata, and a symbol of its library (NULL if none). */
const Json* ember_module_json(const EmberModule* mod);
void* ember_module_symbol(const EmberModule* mod, const char* name);

/* A model's symbolic dims (dims.c): its inputs', outputs' and workspace's
 * sizes as ints and expressions over symbols, which the inputs' shapes bind.
 * Tensor k is input k, output k - num_inputs, or the workspace (1-D) last. */
typedef struct EmberDims EmberDims;
/* Parses the "model" object's dims and "bounds" (its "inputs" and "outputs"
 * must be arrays); *out is NULL where every size is an int. */
int ember_dims_create(const Json* desc, EmberDims** out);
void ember_dims_free(EmberDims* dims);
/* Tensor k's dims for EmberTensorInfo: the ints, -1 where symbolic; the
 * expressions' texts, NULL at the ints (NULL altogether where all are). */
const int64_t* ember_dims_shape(const EmberDims* dims, int32_t k);
const char* const* ember_dims_texts(const EmberDims* dims, int32_t k);
/* Binds the symbols from the shapes of `count` inputs from `first` (the
 * others' dims are skipped: every input at a run, one as it is set) and
 * checks every other dim whose symbols they bind; the messages start with
 * `prefix` and name the input, dim and values. */
int ember_dims_bind(EmberDims* dims, int32_t first, int32_t count,
                    const int64_t* const* shapes, const char* prefix);
/* Tensor k's shape (an output or the workspace) with the symbols bound:
 * fails on a negative dim, a division by zero or an overflow, naming it. */
int ember_dims_eval(const EmberDims* dims, int32_t k, int64_t* shape);

/* 64-byte aligned, zeroed memory (at least one byte); NULL on failure. */
void* ember_aligned_zeros(size_t nbytes);

#endif /* EMBER_CRT_INTERNAL_H_ */

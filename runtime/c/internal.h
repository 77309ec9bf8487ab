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
 * 0 or -1 naming `what`. `shape` holds up to 32 extents. */
int json_tensor_type(const Json* tensor, const char* what, int32_t* ndim,
                     int64_t* shape, DLDataType* dtype);

/* The element size in bytes of a dtype (bits rounded up to bytes). */
size_t ember_dtype_bytes(DLDataType dtype);

/* A module's parsed metadata, and a symbol of its library (NULL if none). */
const Json* ember_module_json(const EmberModule* mod);
void* ember_module_symbol(const EmberModule* mod, const char* name);

/* 64-byte aligned, zeroed memory (at least one byte); NULL on failure. */
void* ember_aligned_zeros(size_t nbytes);

#endif /* EMBER_CRT_INTERNAL_H_ */

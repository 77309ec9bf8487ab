/* The JSON the runtime reads (library metadata, RPC headers) and writes (RPC
 * replies), and the thread's last error. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if defined(__GNUC__) || defined(__clang__)
#define THREAD_LOCAL __thread
#else
#define THREAD_LOCAL /* one error buffer for the process */
#endif

static THREAD_LOCAL char last_error[512];

const char* EmberGetLastError(void) { return last_error; }

int ember_error(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  vsnprintf(last_error, sizeof last_error, format, ap);
  va_end(ap);
  return -1;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct {
  const char* at;
  const char* end;
  int depth;
} Parser;

static int fail(Parser* p, const char* what) {
  (void)p;
  ember_error("invalid JSON: %s", what);
  return -1;
}

static void skip_space(Parser* p) {
  while (p->at < p->end &&
         (*p->at == ' ' || *p->at == '\n' || *p->at == '\r' || *p->at == '\t'))
    ++p->at;
}

static int literal(Parser* p, const char* word) {
  size_t n = strlen(word);
  if ((size_t)(p->end - p->at) < n || memcmp(p->at, word, n) != 0) return 0;
  p->at += n;
  return 1;
}

static int hex4(Parser* p, unsigned* out) {
  unsigned v = 0;
  for (int k = 0; k < 4; ++k, ++p->at) {
    char c = p->at < p->end ? *p->at : 0;
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return fail(p, "bad \\u escape");
  }
  *out = v;
  return 0;
}

static void put_utf8(char** o, unsigned c) {
  char* s = *o;
  if (c < 0x80) {
    *s++ = (char)c;
  } else if (c < 0x800) {
    *s++ = (char)(0xc0 | c >> 6);
    *s++ = (char)(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    *s++ = (char)(0xe0 | c >> 12);
    *s++ = (char)(0x80 | (c >> 6 & 0x3f));
    *s++ = (char)(0x80 | (c & 0x3f));
  } else {
    *s++ = (char)(0xf0 | c >> 18);
    *s++ = (char)(0x80 | (c >> 12 & 0x3f));
    *s++ = (char)(0x80 | (c >> 6 & 0x3f));
    *s++ = (char)(0x80 | (c & 0x3f));
  }
  *o = s;
}

/* A string at p->at (after its opening quote), decoded into new memory. An
 * escape never decodes to more bytes than it takes, so the text's length
 * bounds the result. */
static int string(Parser* p, char** out, size_t* len) {
  const char* start = p->at;
  while (p->at < p->end && *p->at != '"') {
    if (*p->at == '\\' && p->at + 1 < p->end) ++p->at;
    ++p->at;
  }
  if (p->at >= p->end) return fail(p, "unterminated string");
  char* s = malloc((size_t)(p->at - start) + 1);
  char* o = s;
  const char* stop = p->at;
  if (s == NULL) return ember_error("out of memory");
  for (p->at = start; p->at < stop;) {
    char c = *p->at++;
    if ((unsigned char)c < 0x20) break;
    if (c != '\\') {
      *o++ = c;
      continue;
    }
    c = *p->at++;
    const char* plain = strchr("\"\\/bfnrt", c);
    if (c && plain) {
      *o++ = "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"];
      continue;
    }
    unsigned u, low;
    if (c != 'u' || hex4(p, &u)) break;
    if (u >= 0xd800 && u < 0xdc00 && p->at + 1 < stop && p->at[0] == '\\' &&
        p->at[1] == 'u') {
      const char* back = p->at;
      p->at += 2;
      if (hex4(p, &low)) break;
      if (low >= 0xdc00 && low <= 0xdfff) u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
      else p->at = back; /* a lone surrogate, as Python's json keeps it */
    }
    put_utf8(&o, u);
  }
  if (p->at != stop) {
    free(s);
    return fail(p, "bad character or escape in a string");
  }
  ++p->at;
  *o = 0;
  *out = s;
  *len = (size_t)(o - s);
  return 0;
}

/* 1 if the `len` bytes at `s` are well-formed UTF-8 (no surrogates, no
 * overlong forms), as Python's decoder demands. */
int json_utf8_valid(const char* s, size_t len) {
  const unsigned char* u = (const unsigned char*)s;
  for (size_t i = 0; i < len;) {
    unsigned c = u[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    unsigned n = c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2
               : c >= 0xf0 && c < 0xf5 ? 3 : 0;
    if (n == 0 || len - i <= n) return 0;
    for (unsigned k = 1; k <= n; ++k)
      if ((u[i + k] & 0xc0) != 0x80) return 0;
    if ((c == 0xe0 && u[i + 1] < 0xa0) || (c == 0xed && u[i + 1] >= 0xa0) ||
        (c == 0xf0 && u[i + 1] < 0x90) || (c == 0xf4 && u[i + 1] >= 0x90))
      return 0;
    i += n + 1;
  }
  return 1;
}

static int number(Parser* p, Json* v) {
  const char* start = p->at;
  int integer = 1;
  if (p->at < p->end && *p->at == '-') ++p->at;
  while (p->at < p->end && *p->at && strchr("0123456789.eE+-", *p->at)) {
    if (!(*p->at >= '0' && *p->at <= '9') && *p->at != '-') integer = 0;
    ++p->at;
  }
  char text[64];
  size_t n = (size_t)(p->at - start);
  if (n == 0 || n >= sizeof text) return fail(p, "bad number");
  memcpy(text, start, n);
  text[n] = 0;
  char* stop;
  v->kind = JSON_NUMBER;
  v->d = strtod(text, &stop);
  if (*stop) return fail(p, "bad number");
  if (integer) {
    errno = 0;
    v->i = strtoll(text, &stop, 10);
    v->is_int = errno == 0 && *stop == 0;
  }
  return 0;
}

static Json* value(Parser* p);

static int members(Parser* p, Json* v, char close) {
  Json** tail = &v->child;
  skip_space(p);
  if (p->at < p->end && *p->at == close) {
    ++p->at;
    return 0;
  }
  for (;;) {
    char* key = NULL;
    size_t key_len;
    skip_space(p);
    if (close == '}') {
      if (p->at >= p->end || *p->at++ != '"') return fail(p, "expected a key");
      if (string(p, &key, &key_len)) return -1;
      skip_space(p);
      if (p->at >= p->end || *p->at++ != ':') {
        free(key);
        return fail(p, "expected ':'");
      }
    }
    Json* item = value(p);
    if (item == NULL) {
      free(key);
      return -1;
    }
    item->key = key;
    *tail = item;
    tail = &item->next;
    ++v->len;
    skip_space(p);
    if (p->at < p->end && *p->at == ',') {
      ++p->at;
      continue;
    }
    if (p->at < p->end && *p->at++ == close) return 0;
    return fail(p, "expected ',' or a closing bracket");
  }
}

static Json* value(Parser* p) {
  Json* v = calloc(1, sizeof *v);
  int rc = 0;
  if (v == NULL) {
    ember_error("out of memory");
    return NULL;
  }
  skip_space(p);
  if (p->at >= p->end) {
    rc = fail(p, "unexpected end");
  } else if (*p->at == '{' || *p->at == '[') {
    char close = *p->at == '{' ? '}' : ']';
    v->kind = close == '}' ? JSON_OBJECT : JSON_ARRAY;
    ++p->at;
    rc = ++p->depth > 64 ? fail(p, "nested deeper than 64") : members(p, v, close);
    --p->depth;
  } else if (*p->at == '"') {
    ++p->at;
    v->kind = JSON_STRING;
    rc = string(p, &v->str, &v->len);
  } else if (literal(p, "true") || literal(p, "false")) {
    v->kind = JSON_BOOL;
    v->i = p->at[-1] == 'e' && p->at[-2] == 'u';
  } else if (literal(p, "null")) {
    v->kind = JSON_NULL;
  } else {
    rc = number(p, v);
  }
  if (rc) {
    json_free(v);
    return NULL;
  }
  return v;
}

Json* json_parse(const char* text, size_t len) {
  Parser p = {text, text + len, 0};
  Json* v = value(&p);
  skip_space(&p);
  if (v != NULL && p.at != p.end) {
    json_free(v);
    fail(&p, "text after the value");
    return NULL;
  }
  return v;
}

void json_free(Json* v) {
  while (v != NULL) {
    Json* next = v->next;
    json_free(v->child);
    free(v->str);
    free(v->key);
    free(v);
    v = next;
  }
}

const Json* json_get(const Json* object, const char* key) {
  if (object == NULL || object->kind != JSON_OBJECT) return NULL;
  for (const Json* m = object->child; m != NULL; m = m->next)
    if (strcmp(m->key, key) == 0) return m;
  return NULL;
}

int64_t json_int(const Json* object, const char* key, int64_t fallback) {
  const Json* v = json_get(object, key);
  return v != NULL && v->kind == JSON_NUMBER && v->is_int ? v->i : fallback;
}

const char* json_str(const Json* object, const char* key) {
  const Json* v = json_get(object, key);
  return v != NULL && v->kind == JSON_STRING ? v->str : NULL;
}

int json_tensor_type(const Json* tensor, const char* what, int symbolic,
                     int32_t* ndim, int64_t* shape, DLDataType* dtype) {
  const Json* dims = json_get(tensor, "shape");
  const char* name = json_str(tensor, "dtype");
  if (dims == NULL || dims->kind != JSON_ARRAY || dims->len > 32)
    return ember_error("%s: expected a \"shape\" of at most 32 extents", what);
  *ndim = 0;
  for (const Json* d = dims->child; d != NULL; d = d->next) {
    if (d->kind == JSON_STRING && symbolic) {
      shape[(*ndim)++] = 0;
      continue;
    }
    if (d->kind == JSON_STRING)
      return ember_error("%s: dimension %d is an expression (%s), not an int",
                         what, (int)*ndim, d->str);
    if (d->kind != JSON_NUMBER || !d->is_int || d->i < 0)
      return ember_error("%s: dimension %d is not an extent", what, (int)*ndim);
    shape[(*ndim)++] = d->i;
  }
  if (name == NULL || EmberDataTypeFromString(name, dtype))
    return ember_error("%s: unknown dtype %s", what, name ? name : "(none)");
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                  */
/* ------------------------------------------------------------------------ */

static int grow(Buf* b, size_t n) {
  if (b->failed) return -1;
  if (b->len + n + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n + 1) cap *= 2;
  char* data = realloc(b->data, cap);
  if (data == NULL) {
    b->failed = 1;
    return -1;
  }
  b->data = data;
  b->cap = cap;
  return 0;
}

void buf_put(Buf* b, const void* data, size_t n) {
  if (grow(b, n)) return;
  memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = 0;
}

void buf_printf(Buf* b, const char* format, ...) {
  char small[256];
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(small, sizeof small, format, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    buf_put(b, small, (size_t)n);
    return;
  }
  if (grow(b, (size_t)n)) return;
  va_start(ap, format);
  vsnprintf(b->data + b->len, (size_t)n + 1, format, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void buf_json_string(Buf* b, const char* s) {
  buf_put(b, "\"", 1);
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      buf_put(b, "\\", 1);
      buf_put(b, s, 1);
    } else if (c < 0x20) {
      buf_printf(b, "\\u%04x", c);
    } else {
      buf_put(b, s, 1);
    }
  }
  buf_put(b, "\"", 1);
}

/* A model's symbolic dims, as runtime/model_dims.py reads them (the
 * specification): each dim of the inputs and outputs, and "workspace_bytes",
 * is an int or an expression's text (runtime/shape_expr.py's grammar: ints,
 * symbols, + - * // %, parentheses, min(a, b), max(a, b)). The texts are
 * parsed once into the steps of a small stack machine; an input's dim that is
 * one symbol alone binds the symbol, and the other dims are evaluated with
 * the symbols bound: floor division and modulo as Python's, every step
 * checked for overflow, so hostile metadata gives an error, never a wrong
 * size. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* How deep parentheses, min/max and unary minus may nest. Each level holds
 * at most three values on the stack while its operand is parsed (a sum's
 * left side, a product's, min's first argument), so 3 * MAX_DEPTH + 1 values
 * always fit. */
#define MAX_DEPTH 32

enum { NUM, SYM, NEG, ADD, SUB, MUL, DIV, MOD, MIN, MAX };
enum { OK, DIVIDES_BY_ZERO, OVERFLOWS };

/* A step: push a number or a symbol's value, or apply an operation to the
 * top of the stack. */
typedef struct {
  int op;
  int64_t arg; /* NUM: the number; SYM: the symbol's index */
} Step;

typedef struct {
  const char* text; /* the metadata's text; NULL for an int */
  int64_t value;    /* an int's value (a text without symbols is one) */
  size_t first, count; /* an expression's steps */
  int64_t symbol;   /* >= 0: the dim is this symbol alone */
} Dim;

typedef struct {
  const char* name; /* inside a dim's text: `len` bytes, no NUL */
  size_t len;
  int64_t bound;    /* inclusive; INT64_MAX if none */
  int64_t value;
  int32_t origin;   /* the input that bound it; -1 while unbound */
  int binds;        /* an input's dim is this symbol alone */
} Symbol;

/* Tensors are the inputs, the outputs, then the workspace (1-D). */
struct EmberDims {
  int32_t num_inputs, num_tensors;
  const char** names; /* the inputs', then the outputs' */
  int32_t* ndim;
  size_t* start;      /* a tensor's first dim in the arrays below */
  Dim* dims;
  int64_t* shapes;    /* the ints, -1 where symbolic (EmberTensorInfo) */
  const char** texts; /* the expressions, NULL at the ints */
  Step* steps;        /* never more than the texts have bytes */
  Symbol* symbols;
  size_t num_steps, num_symbols;
};

/* ------------------------------------------------------------------------ */
/* Arithmetic                                                               */
/* ------------------------------------------------------------------------ */

#if (defined(__GNUC__) && __GNUC__ >= 5) || defined(__clang__)
#define add_overflows __builtin_add_overflow /* less code than C's checks */
#define sub_overflows __builtin_sub_overflow
#define mul_overflows __builtin_mul_overflow
#else
static int add_overflows(int64_t a, int64_t b, int64_t* r) {
  if (b > 0 ? a > INT64_MAX - b : a < INT64_MIN - b) return 1;
  *r = a + b;
  return 0;
}
static int sub_overflows(int64_t a, int64_t b, int64_t* r) {
  if (b < 0 ? a > INT64_MAX + b : a < INT64_MIN + b) return 1;
  *r = a - b;
  return 0;
}
static int mul_overflows(int64_t a, int64_t b, int64_t* r) {
  if (a != 0 && b != 0 &&
      (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
             : (b > 0 ? a < INT64_MIN / b : b < INT64_MAX / a)))
    return 1;
  *r = a * b;
  return 0;
}
#endif

static int apply(int op, int64_t a, int64_t b, int64_t* out) {
  if ((op == DIV || op == MOD) && (b == 0 || (a == INT64_MIN && b == -1)))
    return b == 0 ? DIVIDES_BY_ZERO : OVERFLOWS;
  switch (op) {
    case ADD: return add_overflows(a, b, out) ? OVERFLOWS : OK;
    case SUB: return sub_overflows(a, b, out) ? OVERFLOWS : OK;
    case MUL: return mul_overflows(a, b, out) ? OVERFLOWS : OK;
    case DIV: /* floor, as Python's // */
      *out = a / b - (a % b != 0 && (a < 0) != (b < 0));
      break;
    case MOD: /* the divisor's sign, as Python's % */
      *out = a % b + (a % b != 0 && (a < 0) != (b < 0) ? b : 0);
      break;
    case MIN: *out = a < b ? a : b; break;
    default: *out = a > b ? a : b; break;
  }
  return OK;
}

/* An expression's value with the symbols' current values. */
static int evaluate(const EmberDims* d, const Dim* dim, int64_t* out) {
  int64_t stack[3 * MAX_DEPTH + 1];
  int top = 0, rc;
  for (size_t k = dim->first; k < dim->first + dim->count; ++k) {
    const Step* s = &d->steps[k];
    if (s->op == NUM || s->op == SYM) {
      stack[top++] = s->op == NUM ? s->arg : d->symbols[s->arg].value;
    } else if (s->op == NEG) {
      if (stack[top - 1] == INT64_MIN) return OVERFLOWS;
      stack[top - 1] = -stack[top - 1];
    } else if ((rc = apply(s->op, stack[top - 2], stack[top - 1],
                           &stack[top - 2])) != OK) {
      return rc;
    } else {
      --top;
    }
  }
  *out = stack[0];
  return OK;
}

/* ------------------------------------------------------------------------ */
/* Parsing                                                                  */
/* ------------------------------------------------------------------------ */

/* Where tensor k's dim j is, for messages: model: inputs[0] ('x'): dim 1. */
static void where(const EmberDims* d, int32_t k, int32_t j, char* out,
                  size_t size) {
  int input = k < d->num_inputs;
  if (k == d->num_tensors - 1)
    snprintf(out, size, "model: \"workspace_bytes\"");
  else
    snprintf(out, size, "model: %s[%d] ('%.100s'): dim %d",
             input ? "inputs" : "outputs", (int)(input ? k : k - d->num_inputs),
             d->names[k], (int)j);
}

typedef struct {
  EmberDims* d;
  int32_t k, j; /* the dim's tensor and index, for messages */
  const char* text;
  const char* at;
  int depth;
} Parser;

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* The length of the token at p->at, after skipping spaces: 0 at the end,
 * -1 where nothing of the grammar starts. */
static int token(Parser* p) {
  const char* s;
  int n = 1;
  while (*p->at == ' ' || (*p->at >= '\t' && *p->at <= '\r')) ++p->at;
  s = p->at;
  if (*s == 0) return 0;
  if (is_digit(*s))
    while (is_digit(s[n])) ++n;
  else if (is_name_start(*s))
    while (is_name_start(s[n]) || is_digit(s[n]) || s[n] == '.') ++n;
  else if (s[0] == '/' && s[1] == '/')
    n = 2;
  else if (strchr("-+*%(),", *s) == NULL)
    return -1;
  return n;
}

/* "WHERE: dimension expression 'TEXT': expected X, got 'Y'" (or "the end"). */
static int fail(Parser* p, const char* expected) {
  char at[192];
  int n = token(p);
  where(p->d, p->k, p->j, at, sizeof at);
  return ember_error(
      "%s: dimension expression '%.200s': expected %s, got %s%.*s%s", at,
      p->text, expected, n ? "'" : "the end", n < 0 || n > 40 ? 10 : n, p->at,
      n ? "'" : "");
}

static int is(const char* s, int n, const char* word) {
  return (size_t)n == strlen(word) && memcmp(s, word, (size_t)n) == 0;
}

/* Takes the next token if it is `word`. */
static int take(Parser* p, const char* word) {
  int n = token(p);
  if (n <= 0 || !is(p->at, n, word)) return 0;
  p->at += n;
  return 1;
}

static int expect(Parser* p, const char* word, const char* quoted) {
  return take(p, word) ? 0 : fail(p, quoted);
}

static int emit(Parser* p, int op, int64_t arg) {
  p->d->steps[p->d->num_steps].op = op;
  p->d->steps[p->d->num_steps++].arg = arg;
  return 0;
}

/* The symbol `name` (n bytes), added at its first use. */
static int symbol(Parser* p, const char* name, int n) {
  EmberDims* d = p->d;
  size_t k = 0;
  while (k < d->num_symbols &&
         !(d->symbols[k].len == (size_t)n &&
           memcmp(d->symbols[k].name, name, (size_t)n) == 0))
    ++k;
  if (k == d->num_symbols) {
    Symbol* s = &d->symbols[d->num_symbols++];
    s->name = name;
    s->len = (size_t)n;
    s->bound = INT64_MAX;
    s->origin = -1;
  }
  return emit(p, SYM, (int64_t)k);
}

static int sum(Parser* p);

static int atom(Parser* p) {
  int n = token(p), fn;
  const char* s = p->at;
  int64_t v = 0;
  if (n > 0 && *s == '(') {
    ++p->at;
    return sum(p) || expect(p, ")", "')'");
  }
  if (n > 0 && is_digit(*s)) {
    for (const char* c = s; c < s + n; ++c) {
      if (v > (INT64_MAX - (*c - '0')) / 10)
        return fail(p, "a number below 2**63");
      v = v * 10 + (*c - '0');
    }
    p->at += n;
    return emit(p, NUM, v);
  }
  if (n <= 0 || !is_name_start(*s)) return fail(p, "an operand");
  fn = is(s, n, "min") ? MIN : is(s, n, "max") ? MAX : 0;
  p->at += n;
  if (fn && take(p, "("))
    return sum(p) || expect(p, ",", "','") || sum(p) ||
           expect(p, ")", "')'") || emit(p, fn, 0);
  if (fn || is(s, n, "floordiv") || is(s, n, "mod")) {
    p->at = s; /* named in the message */
    return fail(p, "an operand");
  }
  return symbol(p, s, n);
}

static int unary(Parser* p) {
  int rc;
  if (++p->depth > MAX_DEPTH) return fail(p, "at most 32 levels of nesting");
  rc = take(p, "-") ? unary(p) || emit(p, NEG, 0) : atom(p);
  --p->depth;
  return rc;
}

static int product(Parser* p) {
  int op;
  if (unary(p)) return -1;
  while ((op = take(p, "*") ? MUL : take(p, "//") ? DIV : take(p, "%") ? MOD : 0))
    if (unary(p) || emit(p, op, 0)) return -1;
  return 0;
}

static int sum(Parser* p) {
  int op;
  if (product(p)) return -1;
  while ((op = take(p, "+") ? ADD : take(p, "-") ? SUB : 0))
    if (product(p) || emit(p, op, 0)) return -1;
  return 0;
}

/* Tensor k's dim j in the metadata: an int, or a text parsed into steps; a
 * text without symbols is evaluated into an int. */
static int read_dim(EmberDims* d, const Json* v, int32_t k, int32_t j) {
  Dim* out = &d->dims[d->start[k] + (size_t)j];
  char at[192];
  out->symbol = -1;
  if (v && v->kind == JSON_NUMBER && v->is_int && v->i >= 0) {
    out->value = v->i;
    return 0;
  }
  where(d, k, j, at, sizeof at);
  if (v == NULL || v->kind != JSON_STRING || strlen(v->str) != v->len)
    return ember_error("%s: expected a non-negative int or an expression text",
                       at);
  Parser p = {d, k, j, v->str, v->str, 0};
  out->first = d->num_steps;
  if (sum(&p) || (token(&p) != 0 && fail(&p, "an operator"))) return -1;
  out->text = v->str;
  out->count = d->num_steps - out->first;
  for (size_t s = out->first; s < d->num_steps; ++s)
    if (d->steps[s].op == SYM) {
      if (out->count == 1) out->symbol = d->steps[s].arg;
      return 0;
    }
  int rc = evaluate(d, out, &out->value);
  d->num_steps = out->first;
  out->text = NULL;
  out->count = 0;
  if (rc != OK || out->value < 0)
    return ember_error("%s: '%.200s' %s", at, v->str,
                       rc == OVERFLOWS         ? "overflows int64"
                       : rc == DIVIDES_BY_ZERO ? "divides by zero"
                                               : "is negative");
  return 0;
}

/* ------------------------------------------------------------------------ */
/* The model's dims                                                         */
/* ------------------------------------------------------------------------ */

/* Counts the metadata's dims and their texts' bytes; whether a dim or the
 * workspace size is a text. */
static int survey(const Json* desc, size_t* dims, size_t* bytes) {
  const Json* lists[2] = {json_get(desc, "inputs"), json_get(desc, "outputs")};
  const Json* workspace = json_get(desc, "workspace_bytes");
  int found = workspace && workspace->kind == JSON_STRING;
  *dims = 1;
  *bytes = found ? workspace->len : 0;
  for (int l = 0; l < 2; ++l)
    for (const Json* t = lists[l]->child; t; t = t->next) {
      const Json* shape = json_get(t, "shape");
      for (const Json* v = shape ? shape->child : NULL; v; v = v->next) {
        ++*dims;
        if (v->kind == JSON_STRING) found = 1, *bytes += v->len;
      }
    }
  return found;
}

static int read_dims(EmberDims* d, const Json* desc) {
  const Json* lists[2] = {json_get(desc, "inputs"), json_get(desc, "outputs")};
  int32_t k = 0;
  size_t at = 0;
  for (int l = 0; l < 2; ++l)
    for (const Json* t = lists[l]->child; t; t = t->next, ++k) {
      const Json* shape = json_get(t, "shape");
      if (shape == NULL || shape->kind != JSON_ARRAY || shape->len > 32)
        return ember_error("%s %d: expected a \"shape\" of at most 32 extents",
                           l ? "output" : "input",
                           (int)(l ? k - d->num_inputs : k));
      d->names[k] = json_str(t, "name") ? json_str(t, "name") : "";
      d->start[k] = at;
      d->ndim[k] = (int32_t)shape->len;
      at += shape->len;
      int32_t j = 0;
      for (const Json* v = shape->child; v; v = v->next, ++j) {
        const Dim* dim = &d->dims[d->start[k] + (size_t)j];
        if (read_dim(d, v, k, j)) return -1;
        if (l == 0 && dim->symbol >= 0) d->symbols[dim->symbol].binds = 1;
      }
    }
  d->start[k] = at;
  d->ndim[k] = 1;
  return read_dim(d, json_get(desc, "workspace_bytes"), k, 0);
}

/* Every symbol a dim reads is bound by an input's dim that is it alone. */
static int check_symbols(EmberDims* d) {
  char at[192];
  for (int32_t k = 0; k < d->num_tensors; ++k)
    for (int32_t j = 0; j < d->ndim[k]; ++j) {
      const Dim* dim = &d->dims[d->start[k] + (size_t)j];
      for (size_t s = dim->first; s < dim->first + dim->count; ++s) {
        const Symbol* sym = d->steps[s].op == SYM ? &d->symbols[d->steps[s].arg]
                                                 : NULL;
        if (sym == NULL || sym->binds) continue;
        where(d, k, j, at, sizeof at);
        return ember_error(
            "%s is '%.200s', which uses symbol '%.*s'; no input binds it (an "
            "input's dim that is '%.*s' alone)",
            at, dim->text, (int)sym->len, sym->name, (int)sym->len, sym->name);
      }
    }
  return 0;
}

/* With `dim`, its symbols and their values ("a = 1, b = 2"); without, the
 * symbols the inputs bind ("'a', 'b'"); each once, in the order of use. */
static void list_symbols(const EmberDims* d, const Dim* dim, Buf* b) {
  const Step* steps = dim ? &d->steps[dim->first] : NULL;
  size_t n = dim ? dim->count : d->num_symbols, e;
  for (size_t k = 0; k < n; ++k) {
    if (steps && steps[k].op != SYM) continue;
    const Symbol* s = &d->symbols[steps ? (size_t)steps[k].arg : k];
    for (e = 0; steps && e < k; ++e) /* listed already? */
      if (steps[e].op == SYM && steps[e].arg == steps[k].arg) break;
    if (e < k || (dim ? s->origin < 0 : !s->binds)) continue;
    if (dim)
      buf_printf(b, "%s%.*s = %lld", b->len ? ", " : "", (int)s->len, s->name,
                 (long long)s->value);
    else
      buf_printf(b, "%s'%.*s'", b->len ? ", " : "", (int)s->len, s->name);
  }
}

static int read_bounds(EmberDims* d, const Json* bounds) {
  if (bounds == NULL) return 0;
  if (bounds->kind != JSON_OBJECT)
    return ember_error("model: \"bounds\" must be an object");
  for (const Json* e = bounds->child; e != NULL; e = e->next) {
    Symbol* s = d->symbols;
    while (s < d->symbols + d->num_symbols &&
           !(s->binds && strlen(e->key) == s->len &&
             memcmp(e->key, s->name, s->len) == 0))
      ++s;
    if (s == d->symbols + d->num_symbols) {
      Buf known = {0};
      list_symbols(d, NULL, &known);
      ember_error(
          "model: bounds: '%.100s' is not a symbol of the model's inputs; its "
          "symbols are %.300s",
          e->key, known.len ? known.data : "none");
      free(known.data);
      return -1;
    }
    if (e->kind != JSON_NUMBER || !e->is_int || e->i <= 0)
      return ember_error("model: bounds: '%.100s' must be a positive int",
                         e->key);
    s->bound = e->i;
  }
  return 0;
}

int ember_dims_create(const Json* desc, EmberDims** out) {
  size_t dims, bytes;
  *out = NULL;
  if (!survey(desc, &dims, &bytes)) return 0;
  EmberDims* d = calloc(1, sizeof *d);
  if (d == NULL) return ember_error("out of memory");
  d->num_inputs = (int32_t)json_get(desc, "inputs")->len;
  d->num_tensors = d->num_inputs + (int32_t)json_get(desc, "outputs")->len + 1;
  d->names = calloc((size_t)d->num_tensors, sizeof *d->names);
  d->ndim = calloc((size_t)d->num_tensors, sizeof *d->ndim);
  d->start = calloc((size_t)d->num_tensors, sizeof *d->start);
  d->dims = calloc(dims, sizeof *d->dims);
  d->shapes = calloc(dims, sizeof *d->shapes);
  d->texts = calloc(dims, sizeof *d->texts);
  /* a step is a token, and a token at least a byte */
  d->steps = calloc(bytes + 1, sizeof *d->steps);
  d->symbols = calloc(bytes + 1, sizeof *d->symbols);
  if (!d->names || !d->ndim || !d->start || !d->dims || !d->shapes || !d->texts ||
      !d->steps || !d->symbols) {
    ember_dims_free(d);
    return ember_error("out of memory");
  }
  if (read_dims(d, desc) || check_symbols(d) ||
      read_bounds(d, json_get(desc, "bounds"))) {
    ember_dims_free(d);
    return -1;
  }
  for (size_t i = 0; i < dims; ++i) {
    d->texts[i] = d->dims[i].text;
    d->shapes[i] = d->texts[i] ? -1 : d->dims[i].value;
  }
  *out = d;
  return 0;
}

void ember_dims_free(EmberDims* d) {
  if (d == NULL) return;
  free(d->names);
  free(d->ndim);
  free(d->start);
  free(d->dims);
  free(d->shapes);
  free(d->texts);
  free(d->steps);
  free(d->symbols);
  free(d);
}

const int64_t* ember_dims_shape(const EmberDims* d, int32_t k) {
  return &d->shapes[d->start[k]];
}

const char* const* ember_dims_texts(const EmberDims* d, int32_t k) {
  for (int32_t j = 0; j < d->ndim[k]; ++j)
    if (d->texts[d->start[k] + (size_t)j]) return &d->texts[d->start[k]];
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Binding and evaluating                                                   */
/* ------------------------------------------------------------------------ */

/* Why `dim` has no value ("WHERE: 'TEXT' divides by zero (a = 1)"), is
 * not an input's `size` ("WHERE is 'TEXT' = 3 (a = 1), got 4"), or, where
 * `size` is -1, is negative. */
static int explain(const EmberDims* d, const Dim* dim, const char* where,
                   int rc, int64_t v, int64_t size) {
  Buf known = {0};
  list_symbols(d, dim, &known);
  const char* values = known.len ? known.data : "";
  if (rc != OK)
    ember_error("%s: '%.200s' %s (%.200s)", where, dim->text,
                rc == OVERFLOWS ? "overflows int64" : "divides by zero", values);
  else if (size < 0)
    ember_error("%s is '%.200s' = %lld (%.200s), which is negative", where,
                dim->text, (long long)v, values);
  else
    ember_error("%s is '%.200s' = %lld (%.200s), got %lld", where, dim->text,
                (long long)v, values, (long long)size);
  free(known.data);
  return -1;
}

static int binding(EmberDims* d, int32_t i, int32_t j, int64_t size,
                   const char* prefix) {
  Symbol* s = &d->symbols[d->dims[d->start[i] + (size_t)j].symbol];
  if (s->origin < 0) {
    if (size > s->bound)
      return ember_error("%sinput '%s': %.*s = %lld is above its bound %lld",
                         prefix, d->names[i], (int)s->len, s->name,
                         (long long)size, (long long)s->bound);
    s->value = size;
    s->origin = i;
    return 0;
  }
  if (size == s->value) return 0;
  return ember_error(
      "%sinput '%s': dim %d is '%.*s' = %lld, but input '%s' gave %.*s = %lld",
      prefix, d->names[i], (int)j, (int)s->len, s->name, (long long)size,
      d->names[s->origin], (int)s->len, s->name, (long long)s->value);
}

static int check(EmberDims* d, int32_t i, int32_t j, int64_t size,
                 const char* prefix) {
  const Dim* dim = &d->dims[d->start[i] + (size_t)j];
  char at[160];
  int64_t want = dim->value;
  int rc = OK;
  if (dim->text == NULL) {
    if (size == want) return 0;
    return ember_error("%sinput '%s': dim %d must be %lld, got %lld", prefix,
                       d->names[i], (int)j, (long long)want, (long long)size);
  }
  for (size_t s = dim->first; s < dim->first + dim->count; ++s)
    if (d->steps[s].op == SYM && d->symbols[d->steps[s].arg].origin < 0)
      return 0; /* the input binding it is not given */
  if ((rc = evaluate(d, dim, &want)) == OK && want == size) return 0;
  snprintf(at, sizeof at, "%sinput '%.100s': dim %d", prefix, d->names[i],
           (int)j);
  return explain(d, dim, at, rc, want, size);
}

int ember_dims_bind(EmberDims* d, int32_t first, int32_t count,
                    const int64_t* const* shapes, const char* prefix) {
  for (size_t k = 0; k < d->num_symbols; ++k) d->symbols[k].origin = -1;
  for (int pass = 0; pass < 2; ++pass) /* bind every symbol, then check */
    for (int32_t i = first; i < first + count; ++i)
      for (int32_t j = 0; j < d->ndim[i]; ++j)
        if ((d->dims[d->start[i] + (size_t)j].symbol >= 0) == !pass &&
            (pass ? check : binding)(d, i, j, shapes[i - first][j], prefix))
          return -1;
  return 0;
}

int ember_dims_eval(const EmberDims* d, int32_t k, int64_t* shape) {
  char at[160];
  for (int32_t j = 0; j < d->ndim[k]; ++j) {
    const Dim* dim = &d->dims[d->start[k] + (size_t)j];
    int rc = OK;
    shape[j] = dim->value;
    if (dim->text == NULL ||
        ((rc = evaluate(d, dim, &shape[j])) == OK && shape[j] >= 0))
      continue;
    if (k == d->num_tensors - 1)
      snprintf(at, sizeof at, "the workspace size");
    else
      snprintf(at, sizeof at, "output '%.100s': dim %d", d->names[k], (int)j);
    return explain(d, dim, at, rc, shape[j], -1);
  }
  return 0;
}

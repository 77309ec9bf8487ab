/* One RPC session: the requests of runtime/rpc/session.py, answered with the C
 * runtime (its files' requests are in rpc_files.c). */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rpc.h"

int rpc_fail(Session* s, const char* type, const char* format, ...) {
  char text[400];
  va_list ap;
  va_start(ap, format);
  vsnprintf(text, sizeof text, format, ap);
  va_end(ap);
  s->etype = type;
  return ember_error("%s", text);
}

/* A failure the runtime described: the last error stands. */
int rpc_failed(Session* s, const char* type) {
  s->etype = type;
  return -1;
}

static const char* py_type(const Json* v) {
  static const char* const names[] = {"NoneType", "bool", "float", "str", "list", "dict"};
  return v->kind == JSON_NUMBER && v->is_int ? "int" : names[v->kind];
}

void rpc_repr(Buf* b, const Json* v) {
  const unsigned char* u;
  switch (v->kind) {
    case JSON_NULL: buf_printf(b, "None"); return;
    case JSON_BOOL: buf_printf(b, v->i ? "True" : "False"); return;
    case JSON_NUMBER:
      if (v->is_int) buf_printf(b, "%lld", (long long)v->i);
      else buf_printf(b, "%.17g", v->d);
      return;
    case JSON_STRING:
      buf_printf(b, "'");
      for (u = (const unsigned char*)v->str; u < (const unsigned char*)v->str + v->len; ++u) {
        if (*u == 0xed && u[1] >= 0xa0) { /* a lone surrogate, as \ud800 */
          buf_printf(b, "\\u%04x", 0xd000 | (u[1] & 0x3f) << 6 | (u[2] & 0x3f));
          u += 2;
        } else if (*u == '\\' || *u == '\'') buf_printf(b, "\\%c", *u);
        else if (*u < 0x20 || *u == 0x7f) buf_printf(b, "\\x%02x", *u);
        else buf_printf(b, "%c", *u);
      }
      buf_printf(b, "'");
      return;
    case JSON_ARRAY:
      buf_printf(b, "[");
      for (const Json* c = v->child; c != NULL; c = c->next) {
        rpc_repr(b, c);
        if (c->next) buf_printf(b, ", ");
      }
      buf_printf(b, "]");
      return;
    default: buf_printf(b, "{...}");
  }
}

const Json* rpc_need(Session* s, const Json* h, const char* name, int kind) {
  static const char* const names[] = {"NoneType", "bool", "int", "str", "list", "dict"};
  const Json* v = json_get(h, name);
  int number = kind == JSON_NUMBER || kind == MILLISECONDS;
  if (v == NULL) {
    rpc_fail(s, "MessageError", "the message lacks the field '%s'", name);
  } else if (number ? v->kind != JSON_NUMBER || (kind == JSON_NUMBER && !v->is_int)
                    : v->kind != kind) {
    rpc_fail(s, "MessageError", "field '%s': expected %s, got %s", name,
             kind == MILLISECONDS ? "int or float" : names[kind], py_type(v));
    return NULL;
  } else if (number && v->d < 0) {
    Buf got = {0};
    rpc_repr(&got, v);
    rpc_fail(s, "MessageError", "field '%s': expected a non-negative %s, got %s", name,
             kind == JSON_NUMBER ? "integer" : "number", got.failed ? "?" : got.data);
    free(got.data);
    return NULL;
  }
  return v;
}

static int bad_shape(Session* s, const Json* dims) {
  Buf got = {0};
  rpc_repr(&got, dims);
  rpc_fail(s, "MessageError", "field 'shape': expected a list of extents, got %s",
           got.failed ? "?" : got.data);
  free(got.data);
  return -1;
}

static int64_t add(Session* s, int kind, void* ptr, size_t owned) {
  if (s->count == s->cap) {
    int64_t cap = s->cap ? 2 * s->cap : 64;
    Obj* objs = realloc(s->objs, (size_t)cap * sizeof *objs);
    if (objs == NULL) return rpc_fail(s, "MemoryError", "out of memory");
    s->objs = objs;
    s->cap = cap;
  }
  if (s->count == 0) s->objs[s->count++].kind = OBJ_FREE;
  s->objs[s->count] = (Obj){kind, ptr, owned};
  return s->count++;
}

static void* lookup(Session* s, const Json* handle, int kind) {
  if (handle != NULL && handle->kind == JSON_NUMBER && handle->is_int &&
      handle->i > 0 && handle->i < s->count && s->objs[handle->i].kind == kind)
    return s->objs[handle->i].ptr;
  rpc_fail(s, "MessageError", "handle %lld is not %s of this session",
       handle ? (long long)handle->i : -1LL,
       kind == OBJ_ARRAY ? "an array" : "a module");
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Modules, executors and calls                                             */
/* ------------------------------------------------------------------------ */

static const char* const EXECUTOR_FUNCTIONS[] = {
    "set_input",      "run",            "get_output",  "get_input",
    "get_num_outputs", "get_num_inputs", "load_params", "get_input_index",
    "get_io_info",    NULL};

static int is_model(const EmberModule* mod) {
  return json_get(ember_module_json(mod), "model") != NULL;
}

static void encode_module(Session* s, int64_t h, int kind, void* ptr) {
  Buf* b = &s->reply;
  buf_printf(b, "{\"module\":%lld,\"type_key\":\"%s\",\"entry\":", (long long)h,
             kind == OBJ_MODULE ? "dso" : "graph_executor");
  const char* entry = kind == OBJ_MODULE ? EmberModuleEntry(ptr) : NULL;
  if (entry) buf_json_string(b, entry);
  else buf_printf(b, "null");
  buf_printf(b, ",\"functions\":[");
  for (int32_t i = 0;; ++i) {
    const char* name = kind == OBJ_MODULE ? EmberModuleFunctionName(ptr, i)
                                          : EXECUTOR_FUNCTIONS[i];
    if (name == NULL) break;
    buf_printf(b, i ? "," : "");
    buf_json_string(b, name);
  }
  buf_printf(b, "]}");
}

static void encode_array(Session* s, int64_t h, const DLTensor* t) {
  buf_printf(&s->reply, "{\"array\":%lld,\"shape\":[", (long long)h);
  for (int32_t k = 0; k < t->ndim; ++k)
    buf_printf(&s->reply, "%s%lld", k ? "," : "", (long long)t->shape[k]);
  buf_printf(&s->reply, "],\"dtype\":\"%s\"}", EmberDataTypeName(t->dtype));
}

static int load_module(Session* s, const Msg* m) {
  struct stat st;
  EmberModule* mod;
  const char* name = rpc_existing(s, m->header, &st);
  if (name == NULL) return -1;
  if (EmberModuleLoad(name, &mod)) return rpc_failed(s, "LibraryLoadError");
  int64_t h = add(s, OBJ_MODULE, mod, 0);
  if (h < 0) return -1;
  encode_module(s, h, OBJ_MODULE, mod);
  return 0;
}

/* A function found by module handle and name, and its arguments decoded. */
typedef struct {
  int kind;         /* OBJ_MODULE or OBJ_EXECUTOR */
  void* module;
  const char* name;
  EmberPackedFunc f;
  EmberValue* values;
  int32_t* codes;
  int32_t n;
  const Json* args;
} Call;

static int find(Session* s, const Json* h, Call* c) {
  const Json* handle = json_get(h, "module");
  c->name = json_str(h, "name");
  if (c->name == NULL)
    return rpc_fail(s, "MessageError", "the message lacks the field 'name'");
  if ((c->module = lookup(s, handle, OBJ_MODULE)) != NULL) {
    c->kind = OBJ_MODULE;
    if (strcmp(c->name, "default") == 0 && is_model(c->module)) return 0;
    if (EmberModuleGetFunction(c->module, c->name, &c->f) == 0) return 0;
    return rpc_failed(s, "FunctionNotFoundError");
  }
  if ((c->module = lookup(s, handle, OBJ_EXECUTOR)) == NULL) return -1;
  c->kind = OBJ_EXECUTOR;
  for (int i = 0; EXECUTOR_FUNCTIONS[i] != NULL; ++i)
    if (strcmp(EXECUTOR_FUNCTIONS[i], c->name) == 0) return 0;
  return rpc_fail(s, "FunctionNotFoundError",
              "graph_executor module has no function '%s'", c->name);
}

static int get_function(Session* s, const Msg* m) {
  Call c;
  if (find(s, m->header, &c)) return -1;
  buf_printf(&s->reply, "{}");
  return 0;
}

/* The packed arguments of a library function. */
static int decode(Session* s, Call* c) {
  int32_t i = 0;
  c->values = calloc(c->args->len + 1, sizeof *c->values);
  c->codes = calloc(c->args->len + 1, sizeof *c->codes);
  if (c->values == NULL || c->codes == NULL)
    return rpc_fail(s, "MemoryError", "out of memory");
  for (const Json* a = c->args->child; a != NULL; a = a->next, ++i) {
    EmberValue* v = &c->values[i];
    int32_t* code = &c->codes[i];
    if (a->kind == JSON_NULL) {
      *code = EMBER_TYPE_NULL;
    } else if (a->kind == JSON_BOOL || (a->kind == JSON_NUMBER && a->is_int)) {
      *code = EMBER_TYPE_INT;
      v->v_int64 = a->i;
    } else if (a->kind == JSON_NUMBER) {
      *code = EMBER_TYPE_FLOAT;
      v->v_float64 = a->d;
    } else if (a->kind == JSON_STRING) {
      *code = EMBER_TYPE_STR;
      v->v_handle = a->str;
    } else if ((v->v_handle = lookup(s, json_get(a, "array"), OBJ_ARRAY))) {
      *code = EMBER_TYPE_DLTENSOR;
    } else {
      return rpc_fail(s, "MessageError", "argument %d: cannot decode it", (int)i);
    }
  }
  c->n = i;
  return 0;
}

static void encode_value(Session* s, EmberValue v, int32_t code) {
  if (code == EMBER_TYPE_INT) buf_printf(&s->reply, "%lld", (long long)v.v_int64);
  else if (code == EMBER_TYPE_FLOAT) buf_printf(&s->reply, "%.17g", v.v_float64);
  else if (code == EMBER_TYPE_STR) buf_json_string(&s->reply, v.v_handle);
  else buf_printf(&s->reply, "null");
}

/* Input or output `key` (an index or a name) of an executor. */
static int io_index(Session* s, EmberModel* model, const Json* key, int output) {
  int32_t count = output ? EmberModelNumOutputs(model) : EmberModelNumInputs(model);
  EmberTensorInfo t;
  if (key != NULL && key->kind == JSON_NUMBER && key->is_int && key->i >= 0 &&
      key->i < count)
    return (int)key->i;
  for (int32_t i = 0; key != NULL && key->kind == JSON_STRING && i < count; ++i) {
    (output ? EmberModelOutputInfo : EmberModelInputInfo)(model, i, &t);
    if (strcmp(t.name, key->str) == 0) return i;
  }
  return rpc_fail(s, "EmberError", "the model has no %s %s", output ? "output" : "input",
              key && key->kind == JSON_STRING ? key->str : "of that index");
}

static void io_info(Session* s, EmberModel* model, Buf* b) {
  for (int output = 0; output < 2; ++output) {
    buf_printf(b, output ? "],\"outputs\":[" : "{\"inputs\":[");
    EmberTensorInfo t;
    for (int32_t i = 0; (output ? EmberModelOutputInfo : EmberModelInputInfo)(
                            model, i, &t) == 0; ++i) {
      buf_printf(b, "%s{\"name\":", i ? "," : "");
      buf_json_string(b, t.name);
      buf_printf(b, ",\"shape\":[");
      for (int32_t k = 0; k < t.ndim; ++k) { /* symbolic dims as their text */
        buf_printf(b, "%s", k ? "," : "");
        if (t.dims && t.dims[k]) buf_json_string(b, t.dims[k]);
        else buf_printf(b, "%lld", (long long)t.shape[k]);
      }
      buf_printf(b, "],\"dtype\":\"%s\"}", EmberDataTypeName(t.dtype));
    }
  }
  buf_printf(b, "]}");
  (void)s;
}

static const Json* nth(const Json* list, int i) {
  const Json* a = list->child;
  while (a != NULL && i-- > 0) a = a->next;
  return a;
}

/* Runs an executor's function; its value goes into the reply. */
static int executor_call(Session* s, EmberModel* model, const Call* c,
                         const Msg* m) {
  const char* f = c->name;
  const Json *a0 = nth(c->args, 0), *a1 = nth(c->args, 1);
  int i;
  if (strcmp(f, "run") == 0) {
    if (EmberModelRun(model)) return rpc_failed(s, "EmberError");
    buf_printf(&s->reply, "null");
  } else if (strcmp(f, "set_input") == 0) {
    DLTensor* value = lookup(s, a1 ? json_get(a1, "array") : NULL, OBJ_ARRAY);
    if ((i = io_index(s, model, a0, 0)) < 0 || value == NULL) return -1;
    if (EmberModelSetInput(model, i, value)) return rpc_failed(s, "EmberError");
    buf_printf(&s->reply, "null");
  } else if (strcmp(f, "get_output") == 0 || strcmp(f, "get_input") == 0) {
    int output = f[4] == 'o';
    if ((i = io_index(s, model, a0, output)) < 0) return -1;
    DLTensor* t = output ? EmberModelOutput(model, i) : EmberModelInput(model, i);
    int64_t h = add(s, OBJ_ARRAY, t, 0);
    if (h < 0) return -1;
    encode_array(s, h, t);
  } else if (strcmp(f, "get_num_inputs") == 0 || strcmp(f, "get_num_outputs") == 0) {
    buf_printf(&s->reply, "%d", (int)(f[8] == 'i' ? EmberModelNumInputs(model)
                                                   : EmberModelNumOutputs(model)));
  } else if (strcmp(f, "get_input_index") == 0) {
    if (a0 == NULL || a0->kind != JSON_STRING)
      return rpc_fail(s, "TypeError", "get_input_index takes a name");
    if ((i = io_index(s, model, a0, 0)) < 0) return -1;
    buf_printf(&s->reply, "%d", i);
  } else if (strcmp(f, "get_io_info") == 0) {
    Buf info = {0};
    io_info(s, model, &info);
    buf_json_string(&s->reply, info.data ? info.data : "");
    free(info.data);
  } else { /* load_params: {"bytes": [offset, size]} of the frame's data */
    const Json* span = a0 ? json_get(a0, "bytes") : NULL;
    const Json *at = span && span->len == 2 ? nth(span, 0) : NULL, *n = at ? at->next : NULL;
    if (n == NULL || !at->is_int || !n->is_int || at->i < 0 || n->i < 0 ||
        (uint64_t)at->i + (uint64_t)n->i > m->size)
      return rpc_fail(s, "TypeError", "load_params takes the bytes of a param dict");
    if (EmberModelLoadParams(model, m->data + at->i, (size_t)n->i))
      return rpc_failed(s, "EmberError");
    buf_printf(&s->reply, "null");
  }
  return 0;
}

static int call(Session* s, const Msg* m) {
  Call c = {0};
  int rc = -1;
  if (find(s, m->header, &c)) return -1;
  if ((c.args = rpc_need(s, m->header, "args", JSON_ARRAY)) == NULL) return -1;
  buf_printf(&s->reply, "{\"value\":");
  if (c.kind == OBJ_EXECUTOR) {
    rc = executor_call(s, c.module, &c, m);
  } else if (c.f == NULL) { /* "default": an executor of the model */
    EmberModel* model;
    const Json* device = c.args->len ? json_get(c.args->child, "device") : NULL;
    if (device != NULL && (device->kind != JSON_ARRAY || !device->child ||
                           device->child->i != kDLCPU))
      return rpc_fail(s, "RPCError", "this server runs on the cpu");
    if (EmberModelCreate(c.module, &model)) return rpc_failed(s, "EmberError");
    int64_t h = add(s, OBJ_EXECUTOR, model, 0);
    if (h < 0) return -1;
    encode_module(s, h, OBJ_EXECUTOR, model);
    rc = 0;
  } else if (decode(s, &c) == 0) {
    EmberValue ret;
    int32_t code;
    rc = EmberFuncCall(c.f, c.values, c.codes, c.n, &ret, &code);
    if (rc) s->etype = "EmberError";
    else encode_value(s, ret, code);
  }
  free(c.values);
  free(c.codes);
  buf_printf(&s->reply, "}");
  return rc;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int invoke(const Call* c) {
  EmberValue ret;
  int32_t code;
  return c->kind == OBJ_EXECUTOR ? EmberModelRun(c->module)
                                 : EmberFuncCall(c->f, c->values, c->codes, c->n,
                                                 &ret, &code);
}

/* Module.time_evaluator's loop (runtime/profiling.py), timed here. */
static int time_evaluator(Session* s, const Msg* m) {
  const Json* h = m->header;
  Call c = {0};
  int rc = -1;
  NEED(number, h, "number", JSON_NUMBER);
  NEED(repeat, h, "repeat", JSON_NUMBER);
  NEED(every, h, "repeats_to_cooldown", JSON_NUMBER);
  NEED(min_ms, h, "min_repeat_ms", MILLISECONDS);
  NEED(cool_ms, h, "cooldown_interval_ms", MILLISECONDS);
  if (find(s, h, &c)) return -1;
  if ((c.args = rpc_need(s, h, "args", JSON_ARRAY)) == NULL) return -1;
  if ((c.kind == OBJ_EXECUTOR && strcmp(c.name, "run")) ||
      (c.kind == OBJ_MODULE && c.f == NULL))
    return rpc_fail(s, "EmberError", "time_evaluator times library functions and "
                                 "an executor's run, not %s", c.name);
  if (c.kind == OBJ_MODULE && decode(s, &c)) goto done;
  if (invoke(&c)) { /* a warm-up; a bad argument fails here */
    s->etype = "EmberError";
    goto done;
  }
  double calls = number->i ? (double)number->i : 1, min_s = min_ms->d / 1e3;
  buf_printf(&s->reply, "{\"results\":[");
  for (int64_t r = 0; r < (repeat->i ? repeat->i : 1); ++r) {
    double elapsed;
    for (;;) {
      double start = now();
      for (double k = 0; k < calls; ++k) invoke(&c);
      elapsed = now() - start;
      if (elapsed >= min_s) break;
      double grown = elapsed > 0 ? (double)(int64_t)(min_s / (elapsed / calls)) + 1 : 0;
      calls = grown > calls * 1.618 ? grown : (double)(int64_t)(calls * 1.618 + 1);
    }
    buf_printf(&s->reply, "%s%.17g", r ? "," : "", elapsed / calls);
    if (cool_ms->d > 0 && (r + 1) % (every->i ? every->i : 1) == 0) {
      struct timespec pause = {(time_t)(cool_ms->d / 1e3),
                               (long)(cool_ms->d * 1e6) % 1000000000L};
      nanosleep(&pause, NULL);
    }
  }
  buf_printf(&s->reply, "]}");
  rc = 0;
done:
  free(c.values);
  free(c.codes);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                   */
/* ------------------------------------------------------------------------ */

static int alloc(Session* s, const Msg* m) {
  int64_t shape[32];
  int32_t ndim = 0;
  DLDataType dtype;
  DLTensor* t;
  NEED(dims, m->header, "shape", JSON_ARRAY);
  NEED(device, m->header, "device", JSON_ARRAY);
  const char* name = json_str(m->header, "dtype");
  if (name == NULL || EmberDataTypeFromString(name, &dtype) || dtype.code == kDLBfloat)
    return rpc_fail(s, "MessageError", "unknown dtype '%s'", name ? name : "");
  if (device->len != 2 || device->child->i != kDLCPU)
    return rpc_fail(s, "RPCError", "this server runs on the cpu; got device type %lld",
                (long long)device->child->i);
  for (const Json* d = dims->child; d != NULL; d = d->next) {
    if (ndim == 32 || d->kind != JSON_NUMBER || !d->is_int || d->i < 0)
      return bad_shape(s, dims);
    shape[ndim++] = d->i;
  }
  if (EmberArrayEmpty(shape, ndim, dtype, &t)) return rpc_failed(s, "MemoryError");
  size_t nbytes = EmberArrayNumBytes(t);
  if (s->memory + nbytes > s->limits->max_memory_bytes) {
    EmberArrayFree(t);
    return rpc_fail(s, "RPCError",
                "an array of %zu bytes would exceed the session's memory limit "
                "of %llu bytes (%llu in use)",
                nbytes, (unsigned long long)s->limits->max_memory_bytes,
                (unsigned long long)s->memory);
  }
  int64_t h = add(s, OBJ_ARRAY, t, nbytes);
  if (h < 0) {
    EmberArrayFree(t);
    return -1;
  }
  s->memory += nbytes;
  buf_printf(&s->reply, "{\"array\":%lld}", (long long)h);
  return 0;
}

static int copy(Session* s, const Msg* m, int in) {
  DLTensor* t = lookup(s, json_get(m->header, "array"), OBJ_ARRAY);
  if (t == NULL) return -1;
  NEED(offset, m->header, "offset", JSON_NUMBER);
  size_t total = EmberArrayNumBytes(t), at = (size_t)offset->i;
  char* bytes = (char*)t->data + t->byte_offset;
  if (in) {
    if (at > total || m->size > total - at)
      return rpc_fail(s, "MessageError",
                  "copy of %zu bytes at offset %zu overruns an array of %zu bytes",
                  m->size, at, total);
    memcpy(bytes + at, m->data, m->size);
    buf_printf(&s->reply, "{}");
    return 0;
  }
  NEED(size, m->header, "size", JSON_NUMBER);
  size_t n = (size_t)size->i < s->chunk ? (size_t)size->i : s->chunk;
  at = at < total ? at : total;
  s->data = bytes + at;
  s->size = n < total - at ? n : total - at;
  buf_printf(&s->reply, "{\"nbytes\":%zu}", total);
  return 0;
}

/* FREE: arrays ALLOC made are freed; modules and executors only lose their
 * handle (a library is never unloaded, and arrays an executor handed out
 * may still be named by other handles). */
static void free_handles(Session* s, const Msg* m) {
  const Json* handles = json_get(m->header, "handles");
  for (const Json* h = handles ? handles->child : NULL; h != NULL; h = h->next) {
    if (h->kind != JSON_NUMBER || !h->is_int || h->i <= 0 || h->i >= s->count)
      continue;
    Obj* o = &s->objs[h->i];
    if (o->kind == OBJ_ARRAY && o->owned) {
      EmberArrayFree(o->ptr);
      s->memory -= o->owned;
    }
    o->kind = OBJ_FREE;
  }
}

static int dispatch(Session* s, const Msg* m) {
  switch (m->type) {
    case MSG_UPLOAD: return rpc_upload(s, m);
    case MSG_DOWNLOAD: return rpc_download(s, m);
    case MSG_LISTDIR: return rpc_listdir(s);
    case MSG_REMOVE: return rpc_remove_file(s, m);
    case MSG_LOAD_MODULE: return load_module(s, m);
    case MSG_GET_FUNCTION: return get_function(s, m);
    case MSG_CALL: return call(s, m);
    case MSG_TIME_EVALUATOR: return time_evaluator(s, m);
    case MSG_ALLOC: return alloc(s, m);
    case MSG_COPY_IN: return copy(s, m, 1);
    case MSG_COPY_OUT: return copy(s, m, 0);
    default: return rpc_fail(s, "MessageError", "unknown message type %d", m->type);
  }
}

void rpc_session(int fd, const char* files, const RpcLimits* limits) {
  Session s = {0};
  s.fd = fd;
  s.limits = limits;
  s.chunk = limits->max_frame_bytes > (1u << 17) ? limits->max_frame_bytes - 65536
                                                 : (size_t)limits->max_frame_bytes;
  if (s.chunk > (4u << 20)) s.chunk = 4u << 20;
  if (chdir(files) || rpc_send(fd, MSG_OK, NULL, NULL, 0)) return;
  for (;;) {
    Msg m;
    int got = rpc_receive(fd, limits->max_frame_bytes, &m);
    if (got == RPC_CLOSED) return;
    if (got == RPC_BAD_FRAME) {
      rpc_send_error(fd, "FrameError");
      return;
    }
    if (got == RPC_BAD_MESSAGE) {
      rpc_send_error(fd, "MessageError");
      continue;
    }
    if (m.type == MSG_FREE) {
      free_handles(&s, &m);
      rpc_msg_free(&m);
      continue;
    }
    s.reply.len = 0;
    s.reply.failed = 0;
    s.data = NULL;
    s.size = 0;
    int rc = dispatch(&s, &m);
    int sent = rc ? rpc_send_error(fd, s.etype)
                  : rpc_send(fd, s.reply.failed ? MSG_ERROR : MSG_OK,
                             s.reply.data, s.data, s.size);
    if (m.type == MSG_DOWNLOAD && rc == 0) free((void*)s.data);
    rpc_msg_free(&m);
    if (sent) return;
  }
}

/* A compiled model run by its metadata (the "model" object that
 * func-packed-abi merges into __ember_metadata): default_run(inputs...,
 * outputs..., workspace, params). A model with symbolic dims (dims.c) takes
 * inputs of any consistent shape; each run gives its outputs and workspace
 * the shapes the inputs' bind, with new memory only when they outgrow it. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  const char* name;
  int64_t offset;
  int32_t ndim;
  int64_t shape[32];
  DLDataType dtype;
  size_t nbytes;
  int loaded;
} Param;

struct EmberModel {
  EmberPackedFunc run;
  int32_t num_inputs, num_outputs, num_params;
  const char** names;  /* inputs, then outputs (the module's strings) */
  DLTensor** tensors;  /* inputs, outputs, then the workspace */
  Param* layout;
  DLTensor params;     /* a 1-D uint8 view of the blob */
  int64_t params_bytes;
  void* own_params;    /* the blob once loaded; NULL while embedded or none */
  EmberValue* args;    /* default_run's arguments */
  int32_t* codes;
  /* a symbolic model's; NULL where every size is an int */
  EmberDims* dims;
  size_t* capacity;      /* bytes allocated, per tensor */
  const int64_t** given; /* the inputs' shapes, NULL until set */
};

static const DLDataType BYTES = {kDLUInt, 8, 1};

static int read_layout(EmberModel* m, const Json* layout) {
  if (layout == NULL || layout->kind != JSON_OBJECT)
    return ember_error("the model's metadata has no \"params\" object");
  m->layout = calloc(layout->len ? layout->len : 1, sizeof(Param));
  if (m->layout == NULL) return ember_error("out of memory");
  for (const Json* e = layout->child; e != NULL; e = e->next) {
    Param* p = &m->layout[m->num_params++];
    p->name = e->key;
    p->offset = json_int(e, "offset", -1);
    if (json_tensor_type(e, p->name, 0, &p->ndim, p->shape, &p->dtype))
      return -1;
    p->nbytes = ember_dtype_bytes(p->dtype);
    for (int32_t k = 0; k < p->ndim; ++k) p->nbytes *= (size_t)p->shape[k];
    if (p->offset < 0 || p->offset % EMBER_MODEL_ALIGNMENT ||
        (uint64_t)p->offset + p->nbytes > (uint64_t)m->params_bytes)
      return ember_error("param '%s': its offset is not inside the params blob",
                         p->name);
  }
  return 0;
}

/* A symbolic model's dim j of tensor k before any run: its int, or 0 where
 * it is an expression (until a shape is given or derived). */
static int64_t known_size(const EmberModel* m, int32_t k, int32_t j) {
  int64_t size = ember_dims_shape(m->dims, k)[j];
  return size < 0 ? 0 : size;
}

static int read_tensors(EmberModel* m, const Json* list, int32_t first,
                        const char* kind) {
  int32_t i = first, ndim;
  int64_t shape[32];
  DLDataType dtype;
  char what[64];
  for (const Json* t = list->child; t != NULL; t = t->next, ++i) {
    snprintf(what, sizeof what, "%s %d", kind, (int)(i - first));
    m->names[i] = json_str(t, "name");
    if (m->names[i] == NULL) return ember_error("%s has no name", what);
    if (json_tensor_type(t, what, m->dims != NULL, &ndim, shape, &dtype))
      return -1;
    for (int32_t j = 0; m->dims && j < ndim; ++j) /* "768" is an int too */
      shape[j] = known_size(m, i, j);
    if (EmberArrayEmpty(shape, ndim, dtype, &m->tensors[i])) return -1;
    if (m->dims == NULL) continue;
    m->capacity[i] = EmberArrayNumBytes(m->tensors[i]);
    if (i < m->num_inputs && ember_dims_texts(m->dims, i) == NULL)
      m->given[i] = m->tensors[i]->shape; /* all ints: known from the start */
  }
  return 0;
}

static int create(const EmberModule* mod, const Json* desc, EmberModel* m) {
  const Json* inputs = json_get(desc, "inputs");
  const Json* outputs = json_get(desc, "outputs");
  const Json* workspace = json_get(desc, "workspace_bytes");
  int64_t workspace_bytes = json_int(desc, "workspace_bytes", -1);
  m->params_bytes = json_int(desc, "params_bytes", -1);
  if (inputs == NULL || inputs->kind != JSON_ARRAY || outputs == NULL ||
      outputs->kind != JSON_ARRAY || m->params_bytes < 0 ||
      (workspace_bytes < 0 && !(workspace && workspace->kind == JSON_STRING)))
    return ember_error(
        "the model's metadata lacks inputs, outputs or its buffer sizes");
  if (EmberModuleGetFunction(mod, EMBER_MODEL_RUN_SYMBOL, &m->run)) return -1;
  m->num_inputs = (int32_t)inputs->len;
  m->num_outputs = (int32_t)outputs->len;
  size_t count = inputs->len + outputs->len;
  m->names = calloc(count + 1, sizeof *m->names);
  m->tensors = calloc(count + 1, sizeof *m->tensors);
  m->args = calloc(count + 2, sizeof *m->args);
  m->codes = calloc(count + 2, sizeof *m->codes);
  if (!m->names || !m->tensors || !m->args || !m->codes)
    return ember_error("out of memory");
  if (ember_dims_create(desc, &m->dims)) return -1;
  if (m->dims) {
    workspace_bytes = known_size(m, (int32_t)count, 0);
    m->capacity = calloc(count + 1, sizeof *m->capacity);
    m->given = calloc(count + 1, sizeof *m->given);
    if (!m->capacity || !m->given) return ember_error("out of memory");
  }
  if (read_tensors(m, inputs, 0, "input") ||
      read_tensors(m, outputs, m->num_inputs, "output") ||
      EmberArrayEmpty(&workspace_bytes, 1, BYTES, &m->tensors[count]) ||
      read_layout(m, json_get(desc, "params")))
    return -1;
  if (m->dims) m->capacity[count] = (size_t)workspace_bytes;
  void* blob = NULL;
  if (json_get(desc, "params_embedded") && json_get(desc, "params_embedded")->i) {
    blob = ember_module_symbol(mod, EMBER_PARAMS_SYMBOL);
    if (blob == NULL || (uintptr_t)blob % EMBER_MODEL_ALIGNMENT)
      return ember_error("the library's %s is missing or misaligned",
                         EMBER_PARAMS_SYMBOL);
    for (int32_t k = 0; k < m->num_params; ++k) m->layout[k].loaded = 1;
  } else if ((blob = m->own_params =
                  ember_aligned_zeros((size_t)m->params_bytes)) == NULL) {
    return ember_error("cannot allocate %lld bytes of params",
                       (long long)m->params_bytes);
  }
  m->params.data = blob;
  m->params.device.device_type = kDLCPU;
  m->params.ndim = 1;
  m->params.dtype = BYTES;
  m->params.shape = &m->params_bytes;
  for (size_t i = 0; i <= count + 1; ++i) {
    m->args[i].v_handle = i <= count ? m->tensors[i] : &m->params;
    m->codes[i] = EMBER_TYPE_DLTENSOR;
  }
  return 0;
}

int EmberModelCreate(const EmberModule* mod, EmberModel** out) {
  const Json* desc = json_get(ember_module_json(mod), "model");
  if (desc == NULL)
    return ember_error("not a model library: its metadata has no \"model\"");
  EmberModel* m = calloc(1, sizeof *m);
  if (m == NULL) return ember_error("out of memory");
  if (create(mod, desc, m)) {
    EmberModelFree(m);
    return -1;
  }
  *out = m;
  return 0;
}

int32_t EmberModelNumInputs(const EmberModel* m) { return m->num_inputs; }
int32_t EmberModelNumOutputs(const EmberModel* m) { return m->num_outputs; }

static int info(const EmberModel* m, int32_t i, int32_t count, int32_t first,
                EmberTensorInfo* out) {
  if (i < 0 || i >= count)
    return ember_error("index %d out of range: the model has %d", (int)i,
                       (int)count);
  const DLTensor* t = m->tensors[first + i];
  out->name = m->names[first + i];
  out->ndim = t->ndim;
  out->shape = m->dims ? ember_dims_shape(m->dims, first + i) : t->shape;
  out->dtype = t->dtype;
  out->dims = m->dims ? ember_dims_texts(m->dims, first + i) : NULL;
  return 0;
}

int EmberModelInputInfo(const EmberModel* m, int32_t i, EmberTensorInfo* out) {
  return info(m, i, m->num_inputs, 0, out);
}

int EmberModelOutputInfo(const EmberModel* m, int32_t i, EmberTensorInfo* out) {
  return info(m, i, m->num_outputs, m->num_inputs, out);
}

int32_t EmberModelInputIndex(const EmberModel* m, const char* name) {
  Buf known = {0};
  for (int32_t i = 0; i < m->num_inputs; ++i)
    if (strcmp(m->names[i], name) == 0) return i;
  for (int32_t i = 0; i < m->num_inputs; ++i)
    buf_printf(&known, "%s'%s'", i ? ", " : "", m->names[i]);
  ember_error("the model has no input named '%s'; its inputs: %s", name,
              known.data ? known.data : "none");
  free(known.data);
  return -1;
}

DLTensor* EmberModelInput(EmberModel* m, int32_t i) {
  return i >= 0 && i < m->num_inputs ? m->tensors[i] : NULL;
}

DLTensor* EmberModelOutput(EmberModel* m, int32_t i) {
  return i >= 0 && i < m->num_outputs ? m->tensors[m->num_inputs + i] : NULL;
}

static int same_type(const DLTensor* a, int32_t ndim, const int64_t* shape,
                     DLDataType dtype) {
  if (a->ndim != ndim || a->dtype.code != dtype.code ||
      a->dtype.bits != dtype.bits || a->dtype.lanes != dtype.lanes)
    return 0;
  for (int32_t k = 0; k < ndim; ++k)
    if (a->shape[k] != shape[k]) return 0;
  return 1;
}

static int is_compact(const DLTensor* t) {
  int64_t expected = 1;
  for (int32_t k = t->ndim - 1; t->strides != NULL && k >= 0; --k) {
    if (t->shape[k] != 1 && t->strides[k] != expected) return 0;
    expected *= t->shape[k];
  }
  return 1;
}

/* "(1, 3, 8, 8)", as Python writes a shape. */
static void shape_text(Buf* b, int32_t ndim, const int64_t* shape) {
  buf_printf(b, "(");
  for (int32_t k = 0; k < ndim; ++k)
    buf_printf(b, "%s%lld", k ? ", " : "", (long long)shape[k]);
  buf_printf(b, "%s)", ndim == 1 ? "," : "");
}

/* The bytes of tensor k at `shape` (never negative); -1 if size_t cannot
 * hold them. */
static int num_bytes(const DLTensor* t, const int64_t* shape, size_t* out) {
  size_t bytes = ember_dtype_bytes(t->dtype);
  int32_t j = 0;
  while (j < t->ndim && shape[j] != 0) ++j;
  if (j < t->ndim) bytes = 0; /* empty, whatever the other dims */
  for (j = 0; bytes && j < t->ndim; ++j) {
    if ((uint64_t)shape[j] > SIZE_MAX / bytes) return -1;
    bytes *= (size_t)shape[j];
  }
  *out = bytes;
  return 0;
}

/* Tensor k at `shape` refused: more bytes than size_t holds or malloc has. */
static int cannot_allocate(const EmberModel* m, int32_t k,
                           const int64_t* shape) {
  Buf text = {0};
  shape_text(&text, m->tensors[k]->ndim, shape);
  if (k == m->num_inputs + m->num_outputs)
    ember_error("cannot allocate a workspace of %lld bytes", (long long)shape[0]);
  else
    ember_error("cannot allocate %s '%s' of shape %.300s",
                k < m->num_inputs ? "input" : "output", m->names[k],
                text.data ? text.data : "");
  free(text.data);
  return -1;
}

/* A symbolic model's tensor k at `shape`: new memory only when it outgrows
 * the memory it has (the data is then gone), else the same, reused. */
static int reshape(EmberModel* m, int32_t k, const int64_t* shape) {
  DLTensor* t = m->tensors[k];
  size_t bytes;
  if (num_bytes(t, shape, &bytes)) return cannot_allocate(m, k, shape);
  if (bytes > m->capacity[k]) {
    void* data = ember_aligned_zeros(bytes);
    if (data == NULL) return cannot_allocate(m, k, shape);
    free(t->data);
    t->data = data;
    m->capacity[k] = bytes;
  }
  if (t->ndim > 0) memcpy(t->shape, shape, (size_t)t->ndim * sizeof *shape);
  return 0;
}

/* A static model takes its inputs' own shapes only. */
static int fixed_shape(const EmberModel* m, int32_t i, const int64_t* shape) {
  const DLTensor* input = m->tensors[i];
  int32_t j = 0;
  while (j < input->ndim && shape[j] == input->shape[j]) ++j;
  if (j == input->ndim) return 0;
  Buf want = {0}, got = {0};
  shape_text(&want, input->ndim, input->shape);
  shape_text(&got, input->ndim, shape);
  ember_error("set_input: input '%s' has the fixed shape %.200s, got %.200s",
              m->names[i], want.data ? want.data : "",
              got.data ? got.data : "");
  free(want.data);
  free(got.data);
  return -1;
}

int EmberModelSetInputShape(EmberModel* m, int32_t i, const int64_t* shape) {
  DLTensor* input = EmberModelInput(m, i);
  if (input == NULL)
    return ember_error("input index %d out of range: the model has %d",
                       (int)i, (int)m->num_inputs);
  if (m->dims == NULL) return fixed_shape(m, i, shape);
  for (int32_t j = 0; j < input->ndim; ++j)
    if (shape[j] < 0)
      return ember_error("set_input: input '%s': dim %d is %lld, not a size",
                         m->names[i], (int)j, (long long)shape[j]);
  /* this input alone: its own dims agree and its symbols are in bounds */
  if (ember_dims_bind(m->dims, i, 1, &shape, "set_input: ") ||
      reshape(m, i, shape))
    return -1;
  m->given[i] = input->shape;
  return 0;
}

int EmberModelSetInput(EmberModel* m, int32_t i, const DLTensor* value) {
  DLTensor* input = EmberModelInput(m, i);
  if (input == NULL)
    return ember_error("input index %d out of range: the model has %d",
                       (int)i, (int)m->num_inputs);
  /* a symbolic model's shape is checked by EmberModelSetInputShape */
  if (value->device.device_type != kDLCPU || !is_compact(value) ||
      !same_type(value, input->ndim, m->dims ? value->shape : input->shape,
                 input->dtype))
    return ember_error(
        "input %d (%s): expected a compact CPU %s tensor of the model's "
        "shape",
        (int)i, m->names[i], EmberDataTypeName(input->dtype));
  if (m->dims && EmberModelSetInputShape(m, i, value->shape)) return -1;
  memcpy(input->data, (const char*)value->data + value->byte_offset,
         EmberArrayNumBytes(input));
  return 0;
}

/* The blob, made the model's own (a copy of the embedded one) before a
 * load writes it. */
static int writable(EmberModel* m) {
  if (m->own_params != NULL) return 0;
  m->own_params = ember_aligned_zeros((size_t)m->params_bytes);
  if (m->own_params == NULL) return ember_error("cannot copy the params");
  memcpy(m->own_params, m->params.data, (size_t)m->params_bytes);
  m->params.data = m->own_params;
  return 0;
}

static Param* find(EmberModel* m, const char* name) {
  for (int32_t k = 0; k < m->num_params; ++k)
    if (strcmp(m->layout[k].name, name) == 0) return &m->layout[k];
  return NULL;
}

static int load_dict(EmberModel* m, const EmberParamDict* d) {
  int32_t n = EmberParamDictSize(d);
  for (int32_t i = 0; i < n; ++i) { /* all checked before any is written */
    const char* name = EmberParamDictName(d, i);
    const DLTensor* t = EmberParamDictGet(d, i);
    Param* p = find(m, name);
    if (p == NULL)
      return ember_error("load_params: '%s' is not a param of the model", name);
    if (!same_type(t, p->ndim, p->shape, p->dtype))
      return ember_error(
          "load_params: param '%s': expected %s of the packed shape "
          "(%d dimensions), got %s with %d",
          name, EmberDataTypeName(p->dtype), (int)p->ndim,
          EmberDataTypeName(t->dtype), (int)t->ndim);
  }
  if (writable(m)) return -1;
  for (int32_t i = 0; i < n; ++i) {
    Param* p = find(m, EmberParamDictName(d, i));
    memcpy((char*)m->own_params + p->offset, EmberParamDictGet(d, i)->data,
           p->nbytes);
    p->loaded = 1;
  }
  return 0;
}

int EmberModelLoadParams(EmberModel* m, const void* data, size_t nbytes) {
  if (nbytes >= 8 && memcmp(data, "EMBERPRM", 8) == 0) {
    EmberParamDict* d;
    if (EmberParamDictLoad(data, nbytes, &d)) return -1;
    int rc = load_dict(m, d);
    EmberParamDictFree(d);
    return rc;
  }
  if (nbytes != (size_t)m->params_bytes)
    return ember_error(
        "load_params: expected a param dict or the packed blob of %lld "
        "bytes, got %zu bytes",
        (long long)m->params_bytes, nbytes);
  if (writable(m)) return -1;
  memcpy(m->own_params, data, nbytes);
  for (int32_t k = 0; k < m->num_params; ++k) m->layout[k].loaded = 1;
  return 0;
}

/* A symbolic model's outputs and workspace at the shapes its inputs' give
 * (after a refusal, some may have their new shape). */
static int derive(EmberModel* m) {
  int32_t count = m->num_inputs + m->num_outputs;
  int64_t shape[32];
  for (int32_t i = 0; i < m->num_inputs; ++i)
    if (m->given[i] == NULL)
      return ember_error(
          "run: input '%s' has a symbolic shape and is not set: "
          "EmberModelSetInputShape or EmberModelSetInput it first",
          m->names[i]);
  if (ember_dims_bind(m->dims, 0, m->num_inputs, m->given, "run: ")) return -1;
  for (int32_t k = m->num_inputs; k <= count; ++k)
    if (ember_dims_eval(m->dims, k, shape) || reshape(m, k, shape)) return -1;
  return 0;
}

int EmberModelRun(EmberModel* m) {
  EmberValue ret;
  int32_t ret_code;
  Buf missing = {0};
  for (int32_t k = 0; k < m->num_params; ++k)
    if (!m->layout[k].loaded)
      buf_printf(&missing, "%s'%s'", missing.len ? ", " : "", m->layout[k].name);
  if (missing.len) {
    ember_error("params not loaded: %.400s (load_params first)", missing.data);
    free(missing.data);
    return -1;
  }
  if (m->dims != NULL && derive(m)) return -1;
  return EmberFuncCall(m->run, m->args, m->codes,
                       m->num_inputs + m->num_outputs + 2, &ret, &ret_code);
}

void EmberModelFree(EmberModel* m) {
  if (m == NULL) return;
  int32_t count = m->num_inputs + m->num_outputs + 1;
  for (int32_t i = 0; m->tensors != NULL && i < count; ++i)
    EmberArrayFree(m->tensors[i]);
  free(m->tensors);
  free(m->names);
  free(m->layout);
  free(m->own_params);
  free(m->args);
  free(m->codes);
  ember_dims_free(m->dims);
  free(m->capacity);
  free(m->given);
  free(m);
}

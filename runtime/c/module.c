/* Libraries: open, describe, look functions up, call them. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

struct EmberModule {
  void* handle;
  char* metadata_text;
  Json* metadata;
  const Json* functions; /* the metadata's "functions" object */
};

/* Refuses, before dlopen, what dlopen would refuse less clearly or map
 * wrongly: a missing file, a .tar, anything that is not an ELF shared
 * object. */
static int check_file(const char* path) {
  unsigned char head[512];
  FILE* f = fopen(path, "rb");
  if (f == NULL)
    return ember_error("cannot open %s: %s", path, strerror(errno));
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  if (n >= 262 && memcmp(head + 257, "ustar", 5) == 0)
    return ember_error(
        "%s is a .tar library: its objects must be linked before they can "
        "be loaded, which the C runtime does not do; link them (tar xf, "
        "then cc -shared -o m.so *.o [-lgomp]) or export a .so",
        path);
  if (n < 18 || memcmp(head, "\177ELF", 4) != 0)
    return ember_error("%s is not a library (not an ELF file)", path);
  unsigned type = head[5] == 2 ? (unsigned)head[16] << 8 | head[17]
                               : (unsigned)head[17] << 8 | head[16];
  if (type != 3) /* ET_DYN */
    return ember_error("%s is an ELF %s, not a shared library", path,
                       type == 1 ? "object file" : "executable");
  return 0;
}

static int read_metadata(EmberModule* m, const char* path) {
  EmberPackedFunc describe;
  EmberValue ret;
  int32_t code = EMBER_TYPE_NULL;
  *(void**)&describe = dlsym(m->handle, EMBER_METADATA_SYMBOL);
  if (describe == NULL)
    return ember_error("%s defines no %s: not an ember library", path,
                       EMBER_METADATA_SYMBOL);
  if (describe(NULL, NULL, 0, &ret, &code) != 0 || code != EMBER_TYPE_STR)
    return ember_error("%s: %s failed", path, EMBER_METADATA_SYMBOL);
  m->metadata_text = strdup((const char*)ret.v_handle);
  if (m->metadata_text == NULL) return ember_error("out of memory");
  m->metadata = json_parse(m->metadata_text, strlen(m->metadata_text));
  if (m->metadata == NULL)
    return ember_error("%s: its metadata is not JSON", path);
  m->functions = json_get(m->metadata, "functions");
  if (m->functions == NULL || m->functions->kind != JSON_OBJECT)
    return ember_error("%s: its metadata has no \"functions\" object", path);
  return 0;
}

int EmberModuleLoad(const char* path, EmberModule** out) {
  if (check_file(path)) return -1;
  EmberModule* m = calloc(1, sizeof *m);
  if (m == NULL) return ember_error("out of memory");
  /* a name without a slash would be searched for on the library path */
  char local[4096];
  snprintf(local, sizeof local, "%s%s", strchr(path, '/') ? "" : "./", path);
  /* dlopen returns the library already loaded under the same name, even
     when the file was replaced since (a tuner uploading candidate after
     candidate as "kernel.so"): load through a name of this load's own, a hard
     link removed once the library is mapped */
  static unsigned long loads;
  char unique[4200];
  snprintf(unique, sizeof unique, "%s.ember-load-%ld-%lu", local, (long)getpid(),
           loads++);
  if (link(local, unique) == 0) {
    m->handle = dlopen(unique, RTLD_NOW | RTLD_LOCAL);
    unlink(unique);
  } else {
    m->handle = dlopen(local, RTLD_NOW | RTLD_LOCAL);
  }
  if (m->handle == NULL) {
    free(m);
    return ember_error("cannot load %s: %s", path, dlerror());
  }
  if (read_metadata(m, path)) {
    EmberModuleFree(m);
    return -1;
  }
  int32_t* threads = (int32_t*)dlsym(m->handle, EMBER_NUM_THREADS_SYMBOL);
  const char* env = getenv("EMBER_NUM_THREADS");
  if (threads != NULL && env != NULL && *env) *threads = (int32_t)atoi(env);
  *out = m;
  return 0;
}

const char* EmberModuleMetadata(const EmberModule* m) {
  return m->metadata_text;
}

const char* EmberModuleEntry(const EmberModule* m) {
  return json_str(m->metadata, "entry");
}

int32_t EmberModuleNumFunctions(const EmberModule* m) {
  return (int32_t)m->functions->len;
}

const char* EmberModuleFunctionName(const EmberModule* m, int32_t i) {
  const Json* f = i < 0 ? NULL : m->functions->child;
  for (; f != NULL && i > 0; --i) f = f->next;
  return f != NULL ? f->key : NULL;
}

int EmberModuleGetFunction(const EmberModule* m, const char* name,
                           EmberPackedFunc* out) {
  void* f = json_get(m->functions, name) ? dlsym(m->handle, name) : NULL;
  if (f == NULL) return ember_error("the module has no function '%s'", name);
  *(void**)out = f;
  return 0;
}

const Json* ember_module_json(const EmberModule* m) { return m->metadata; }

void* ember_module_symbol(const EmberModule* m, const char* name) {
  return dlsym(m->handle, name);
}

void EmberModuleFree(EmberModule* m) {
  if (m == NULL) return;
  /* the heap blocks the library's kernels keep between calls (their scratch) */
  void* release = dlsym(m->handle, "__ember_scratch_release");
  if (release != NULL) {
    void (*call)(void);
    *(void**)&call = release;
    call();
  }
  json_free(m->metadata);
  free(m->metadata_text);
  free(m); /* never dlclose: see ember_runtime.h on libgomp */
}

int EmberFuncCall(EmberPackedFunc f, EmberValue* args, int32_t* type_codes,
                  int32_t num_args, EmberValue* ret, int32_t* ret_type_code) {
  *ret_type_code = EMBER_TYPE_NULL;
  int32_t rc = f(args, type_codes, num_args, ret, ret_type_code);
  if (rc == 0) return 0;
  return ember_error("%s", *ret_type_code == EMBER_TYPE_STR && ret->v_handle
                               ? (const char*)ret->v_handle
                               : "the function failed without a message");
}

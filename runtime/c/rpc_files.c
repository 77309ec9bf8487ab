/* A session's files: UPLOAD, DOWNLOAD, LISTDIR, REMOVE. The session runs in
 * its files directory, so a request's name is a plain file name here. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rpc.h"

/* The checks and messages of protocol.check_name, in its order. */
static const char* file_name(Session* s, const Json* h) {
  const Json* v = json_get(h, "name");
  if (v == NULL) {
    rpc_fail(s, "MessageError", "the message lacks the field 'name'");
    return NULL;
  }
  Buf r = {0};
  rpc_repr(&r, v);
  const char* name = v->kind == JSON_STRING ? v->str : NULL;
  const char* got = r.failed ? "?" : r.data;
  int bad = 1;
  if (name == NULL || !*name)
    rpc_fail(s, "ValueError", "a file name must be a non-empty string, got %s", got);
  else if (strlen(name) != v->len || strchr(name, '/') || strchr(name, '\\'))
    rpc_fail(s, "ValueError", "file name %s must be a plain name without a directory",
             got);
  else if (*name == '.')
    rpc_fail(s, "ValueError", "file name %s must not start with '.'", got);
  else if (!json_utf8_valid(name, v->len))
    rpc_fail(s, "ValueError", "file name %s is not valid UTF-8", got);
  else if (v->len > 240)
    rpc_fail(s, "ValueError", "file name of %zu bytes exceeds the limit of 240", v->len);
  else bad = 0;
  free(r.data);
  return bad ? NULL : name;
}

const char* rpc_existing(Session* s, const Json* h, struct stat* st) {
  const char* name = file_name(s, h);
  if (name != NULL && (stat(name, st) != 0 || !S_ISREG(st->st_mode))) {
    rpc_fail(s, "FileNotFoundError", "no file '%s' in the session workspace", name);
    return NULL;
  }
  return name;
}

static uint64_t files_bytes(void) {
  uint64_t total = 0;
  struct stat st;
  DIR* d = opendir(".");
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;)
    if (stat(e->d_name, &st) == 0 && S_ISREG(st.st_mode)) total += st.st_size;
  if (d != NULL) closedir(d);
  return total;
}

int rpc_upload(Session* s, const Msg* m) {
  const char* name = file_name(s, m->header);
  char partial[256];
  struct stat st;
  if (name == NULL) return -1;
  NEED(offset, m->header, "offset", JSON_NUMBER);
  NEED(last, m->header, "last", JSON_BOOL);
  snprintf(partial, sizeof partial, ".upload-%s", name);
  int64_t size = stat(partial, &st) == 0 ? (int64_t)st.st_size : 0;
  if (offset->i != size)
    return rpc_fail(s, "MessageError", "upload of '%s': expected offset %lld, got %lld",
                name, (long long)size, (long long)offset->i);
  uint64_t used = files_bytes();
  if (used + m->size > s->limits->max_workspace_bytes) {
    remove(partial);
    return rpc_fail(s, "RPCError",
                "upload of '%s': the session workspace would exceed its limit "
                "of %llu bytes (%llu in use)",
                name, (unsigned long long)s->limits->max_workspace_bytes,
                (unsigned long long)used);
  }
  FILE* f = fopen(partial, size ? "ab" : "wb");
  if (f == NULL || fwrite(m->data, 1, m->size, f) != m->size || fclose(f) ||
      (last->i && rename(partial, name)))
    return rpc_fail(s, "OSError", "upload of '%s': cannot write it", name);
  buf_printf(&s->reply, "{\"size\":%lld}", (long long)(size + (int64_t)m->size));
  return 0;
}

int rpc_download(Session* s, const Msg* m) {
  struct stat st;
  const char* name = rpc_existing(s, m->header, &st);
  if (name == NULL) return -1;
  NEED(offset, m->header, "offset", JSON_NUMBER);
  NEED(size, m->header, "size", JSON_NUMBER);
  size_t n = (size_t)size->i < s->chunk ? (size_t)size->i : s->chunk;
  char* data = malloc(n ? n : 1);
  FILE* f = fopen(name, "rb");
  if (data == NULL || f == NULL || fseek(f, (long)offset->i, SEEK_SET)) {
    free(data);
    if (f) fclose(f);
    return rpc_fail(s, "OSError", "cannot read '%s'", name);
  }
  s->size = fread(data, 1, n, f);
  fclose(f);
  s->data = data; /* freed after the reply is sent */
  buf_printf(&s->reply, "{\"total\":%lld}", (long long)st.st_size);
  return 0;
}

static int by_name(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

int rpc_listdir(Session* s) {
  char* names[4096];
  size_t n = 0;
  DIR* d = opendir(".");
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL && n < 4096;)
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  if (d != NULL) closedir(d);
  qsort(names, n, sizeof names[0], by_name);
  buf_printf(&s->reply, "{\"files\":[");
  for (size_t i = 0; i < n; ++i) {
    buf_printf(&s->reply, i ? "," : "");
    buf_json_string(&s->reply, names[i] ? names[i] : "");
    free(names[i]);
  }
  buf_printf(&s->reply, "]}");
  return 0;
}

int rpc_remove_file(Session* s, const Msg* m) {
  struct stat st;
  const char* name = rpc_existing(s, m->header, &st);
  if (name == NULL) return -1;
  if (remove(name)) return rpc_fail(s, "OSError", "cannot remove '%s'", name);
  buf_printf(&s->reply, "{}");
  return 0;
}


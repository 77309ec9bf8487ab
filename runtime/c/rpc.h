/* The C RPC server's parts: frames (rpc_server.c), a session's requests
 * (rpc_session.c, its files in rpc_files.c), HMAC-SHA256 (sha256.c). The
 * protocol is runtime/rpc/protocol.py's, version 1 (docs/rpc.md). */
#ifndef EMBER_RPC_H_
#define EMBER_RPC_H_

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

enum {
  MSG_HELLO = 1, MSG_AUTH = 2, MSG_OK = 3, MSG_ERROR = 4,
  MSG_UPLOAD = 10, MSG_DOWNLOAD = 11, MSG_LISTDIR = 12, MSG_REMOVE = 13,
  MSG_LOAD_MODULE = 20, MSG_GET_FUNCTION = 21, MSG_CALL = 22,
  MSG_TIME_EVALUATOR = 23,
  MSG_ALLOC = 30, MSG_COPY_IN = 31, MSG_COPY_OUT = 32, MSG_FREE = 33
};

/* One frame read off the socket. */
typedef struct {
  int type;
  Json* header;         /* the JSON object */
  unsigned char* payload;
  const unsigned char* data; /* the raw bytes after the JSON */
  size_t size;
} Msg;

/* What reading a frame gave. */
enum { RPC_OK = 0, RPC_CLOSED = 1, RPC_BAD_FRAME = 2, RPC_BAD_MESSAGE = 3 };

/* Reads one frame (payload at most max_bytes). RPC_BAD_FRAME and
 * RPC_BAD_MESSAGE set the last error; a bad frame ends the connection. */
int rpc_receive(int fd, uint64_t max_bytes, Msg* msg);
void rpc_msg_free(Msg* msg);
/* Sends one frame: a JSON header (NULL: {}) and raw bytes. 0 or -1. */
int rpc_send(int fd, int type, const char* json, const void* data, size_t size);
/* An ERROR frame: {"error": type, "message": the last error}. */
int rpc_send_error(int fd, const char* type);

/* What a session may use (the server's options). */
typedef struct {
  uint64_t max_frame_bytes;
  uint64_t max_workspace_bytes;
  uint64_t max_memory_bytes;
  int idle_timeout_s;
} RpcLimits;

/* Serves one authenticated client on fd until it leaves, its files in
 * `files` (a directory of its own). */
void rpc_session(int fd, const char* files, const RpcLimits* limits);

/* A session's state, shared by rpc_session.c and rpc_files.c. */
enum { OBJ_FREE, OBJ_ARRAY, OBJ_MODULE, OBJ_EXECUTOR };

typedef struct {
  int kind;
  void* ptr;
  size_t owned; /* bytes of an array ALLOC made (freed with its handle) */
} Obj;

typedef struct {
  int fd;
  const RpcLimits* limits;
  Obj* objs; /* handle h is objs[h]; 0 is never given out */
  int64_t count, cap;
  uint64_t memory;
  size_t chunk;
  const char* etype; /* the exception type of a failed request */
  Buf reply;
  const void* data; /* raw bytes of the reply */
  size_t size;
} Session;

/* Fails the request with an exception type and a message; -1. */
int rpc_fail(Session* s, const char* type, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Fails with the last error (the runtime's message); -1. */
int rpc_failed(Session* s, const char* type);

/* Appends Python's repr of a JSON value (of a str, a list, ...) to `b`, so
 * that messages quote what they got as the Python server's do. */
void rpc_repr(Buf* b, const Json* v);

/* Field `name` of kind `kind`: JSON_NUMBER is a non-negative integer,
 * MILLISECONDS any non-negative number. */
#define MILLISECONDS (-1)
const Json* rpc_need(Session* s, const Json* h, const char* name, int kind);
#define NEED(var, h, name, kind) \
  const Json* var = rpc_need(s, h, name, kind); \
  if (var == NULL) return -1

/* The file requests (rpc_files.c), and the file a request names, which must
 * exist (NULL and a FileNotFoundError otherwise). */
struct stat;
const char* rpc_existing(Session* s, const Json* h, struct stat* st);
int rpc_upload(Session* s, const Msg* m);
int rpc_download(Session* s, const Msg* m);
int rpc_listdir(Session* s);
int rpc_remove_file(Session* s, const Msg* m);

void ember_hmac_sha256(const uint8_t* key, size_t key_len, const uint8_t* msg,
                       size_t len, uint8_t out[32]);

#endif /* EMBER_RPC_H_ */

/*
 * ember-rpc-server in C: ember's RPC protocol (runtime/rpc/protocol.py) served
 * with the C runtime, for a board without Python. The options and the first
 * line match the Python server's:
 *
 *   ember-rpc-server [--host H] [--port P] [--key-file F] [--workspace DIR] ...
 *   ember-rpc-server: listening on HOST:PORT
 *
 * The key comes from --key-file (its first line) or $EMBER_RPC_KEY. As in the
 * Python server, each connection gets a process of its own (forked on
 * accept: uploaded code that crashes ends one session), which sends HELLO
 * with a nonce, checks HMAC-SHA256(key, nonce) in the client's AUTH, and
 * serves requests in a workspace directory the listener removes when the
 * process ends.
 */
#define _DEFAULT_SOURCE /* getaddrinfo, kill, uname */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "rpc.h"

#define VERSION "0.1.0"

/* ------------------------------------------------------------------------ */
/* Frames: magic "EMRP", version 1, type, 2 reserved bytes, u64 length, then */
/* u32 JSON length, JSON, raw data (all little-endian).                     */
/* ------------------------------------------------------------------------ */

static int read_all(int fd, void* p, size_t n, size_t* got) {
  while (*got < n) {
    ssize_t r = recv(fd, (char*)p + *got, n - *got, 0);
    if (r <= 0) return r == 0 ? 0 : -1;
    *got += (size_t)r;
  }
  return 1;
}

/* Python's repr of 4 bytes: b'HTTP', b'\\x00ga'. */
static void bytes_repr(const unsigned char* p, size_t n, char* out) {
  int dq = memchr(p, '\'', n) && !memchr(p, '"', n);
  char q = dq ? '"' : '\'';
  out += sprintf(out, "b%c", q);
  for (size_t i = 0; i < n; ++i) {
    unsigned c = p[i];
    const char* esc = c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                    : c == '\\' ? "\\\\" : c == (unsigned)q ? (dq ? "\"" : "\\'") : NULL;
    if (esc) out += sprintf(out, "%s", esc);
    else if (c < 0x20 || c >= 0x7f) out += sprintf(out, "\\x%02x", c);
    else *out++ = (char)c;
  }
  sprintf(out, "%c", q);
}

static const char* PY_TYPES[] = {"NoneType", "bool", "float", "str", "list", "dict"};

static uint64_t le64(const unsigned char* p, int n) {
  uint64_t v = 0;
  while (n--) v = v << 8 | p[n];
  return v;
}

int rpc_receive(int fd, uint64_t max_bytes, Msg* m) {
  unsigned char head[16];
  memset(m, 0, sizeof *m);
  ssize_t first = recv(fd, head, sizeof head, 0);
  if (first <= 0) return RPC_CLOSED;
  size_t got = (size_t)first;
  if (read_all(fd, head, sizeof head, &got) != 1) {
    ember_error("connection closed after %zu of 16 bytes of a frame header", got);
    return RPC_BAD_FRAME;
  }
  uint64_t length = le64(head + 8, 8);
  if (memcmp(head, "EMRP", 4) != 0) {
    char magic[40];
    bytes_repr(head, 4, magic);
    ember_error("not an ember RPC frame (magic %s)", magic);
    return RPC_BAD_FRAME;
  }
  if (head[4] != 1) {
    ember_error("protocol version %d is not supported; this side speaks 1", head[4]);
    return RPC_BAD_FRAME;
  }
  if (length > max_bytes) {
    ember_error("a frame of %llu bytes exceeds the limit of %llu bytes",
                (unsigned long long)length, (unsigned long long)max_bytes);
    return RPC_BAD_FRAME;
  }
  m->type = head[5];
  m->payload = malloc(length ? (size_t)length : 1);
  got = 0;
  if (m->payload == NULL || read_all(fd, m->payload, (size_t)length, &got) != 1) {
    rpc_msg_free(m);
    ember_error("connection closed after %zu of %llu bytes of a frame", got,
                (unsigned long long)length);
    return RPC_BAD_FRAME;
  }
  if (length < 4) {
    rpc_msg_free(m);
    ember_error("a payload of %llu bytes has no header length",
                (unsigned long long)length);
    return RPC_BAD_MESSAGE;
  }
  uint64_t json = le64(m->payload, 4);
  if (json > length - 4) {
    rpc_msg_free(m);
    ember_error("the JSON header claims %llu bytes, the payload has %llu",
                (unsigned long long)json, (unsigned long long)(length - 4));
    return RPC_BAD_MESSAGE;
  }
  const char* text = (const char*)m->payload + 4;
  m->header = json_utf8_valid(text, (size_t)json) ? json_parse(text, (size_t)json)
                                                  : NULL;
  if (m->header == NULL || m->header->kind != JSON_OBJECT) {
    char why[200];
    snprintf(why, sizeof why, "%s", json_utf8_valid(text, (size_t)json)
                                        ? EmberGetLastError() : "invalid UTF-8");
    int kind = m->header ? m->header->kind : -1;
    int is_int = m->header && m->header->is_int;
    rpc_msg_free(m);
    if (kind < 0) ember_error("the message header is not valid JSON: %s", why);
    else ember_error("the message header must be a JSON object, got %s",
                     kind == JSON_NUMBER && is_int ? "int" : PY_TYPES[kind]);
    return RPC_BAD_MESSAGE;
  }
  m->data = m->payload + 4 + json;
  m->size = (size_t)(length - 4 - json);
  return RPC_OK;
}

void rpc_msg_free(Msg* m) {
  json_free(m->header);
  free(m->payload);
  m->header = NULL;
  m->payload = NULL;
}

static int write_all(int fd, const void* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, 0);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p = (const char*)p + w;
    n -= (size_t)w;
  }
  return 0;
}

int rpc_send(int fd, int type, const char* json, const void* data, size_t size) {
  if (json == NULL) json = "{}";
  size_t json_len = strlen(json);
  uint64_t length = 4 + json_len + size;
  unsigned char head[20] = {'E', 'M', 'R', 'P', 1, (unsigned char)type};
  for (int i = 0; i < 8; ++i) head[8 + i] = (unsigned char)(length >> 8 * i);
  for (int i = 0; i < 4; ++i) head[16 + i] = (unsigned char)(json_len >> 8 * i);
  return write_all(fd, head, sizeof head) || write_all(fd, json, json_len) ||
         write_all(fd, data, size);
}

int rpc_send_error(int fd, const char* type) {
  Buf b = {0};
  buf_printf(&b, "{\"error\":\"%s\",\"message\":", type ? type : "EmberError");
  buf_json_string(&b, EmberGetLastError());
  buf_printf(&b, "}");
  int rc = rpc_send(fd, MSG_ERROR, b.failed ? NULL : b.data, NULL, 0);
  free(b.data);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* The handshake                                                            */
/* ------------------------------------------------------------------------ */

static struct {
  const char* key;
  RpcLimits limits;
  int quiet;
  char root[4096];
} server;

static void logf_(const char* format, const char* arg) {
  if (server.quiet) return;
  fprintf(stderr, "ember-rpc-server[%d] INFO ", (int)getpid());
  fprintf(stderr, format, arg);
  fputc('\n', stderr);
}

static void set_timeout(int fd, int seconds) {
  struct timeval tv = {seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* HELLO, then one AUTH frame within 10 s. 0 when the client may go on. */
static int handshake(int fd) {
  unsigned char nonce[32], digest[32];
  char hex[65], expected[65];
  struct utsname un;
  int rnd = open("/dev/urandom", O_RDONLY);
  if (rnd < 0 || read(rnd, nonce, sizeof nonce) != (ssize_t)sizeof nonce) return -1;
  close(rnd);
  for (int i = 0; i < 32; ++i) snprintf(hex + 2 * i, 3, "%02x", nonce[i]);
  uname(&un);
  Buf hello = {0};
  buf_printf(&hello,
             "{\"version\":1,\"nonce\":\"%s\",\"key_required\":%s,"
             "\"max_frame_bytes\":%llu,\"max_workspace_bytes\":%llu,"
             "\"max_memory_bytes\":%llu,\"machine\":",
             hex, server.key ? "true" : "false",
             (unsigned long long)server.limits.max_frame_bytes,
             (unsigned long long)server.limits.max_workspace_bytes,
             (unsigned long long)server.limits.max_memory_bytes);
  buf_json_string(&hello, un.machine);
  buf_printf(&hello, ",\"system\":\"Linux\"}");
  int rc = rpc_send(fd, MSG_HELLO, hello.data, NULL, 0);
  free(hello.data);
  if (rc) return -1;
  set_timeout(fd, 10);
  Msg m;
  int got = rpc_receive(fd, 4096, &m);
  if (got != RPC_OK) {
    if (got != RPC_CLOSED) {
      char why[300];
      snprintf(why, sizeof why, "%s", EmberGetLastError());
      ember_error("expected an AUTH frame: %s", why);
      rpc_send_error(fd, "RPCError");
    }
    return -1;
  }
  if (m.type != MSG_AUTH) {
    ember_error("expected an AUTH frame, got message type %d", m.type);
    rpc_msg_free(&m);
    return rpc_send_error(fd, "RPCError"), -1;
  }
  const Json* sent = json_get(m.header, "digest");
  const char* given = json_str(m.header, "digest");
  unsigned diff = 1;
  if (server.key != NULL && given != NULL && strlen(given) == 64) {
    ember_hmac_sha256((const uint8_t*)server.key, strlen(server.key), nonce, 32,
                      digest);
    for (int i = 0; i < 32; ++i) snprintf(expected + 2 * i, 3, "%02x", digest[i]);
    diff = 0;
    for (int i = 0; i < 64; ++i) diff |= (unsigned)(given[i] ^ expected[i]);
  }
  if (server.key != NULL && diff) {
    ember_error("refused: the server requires a key and the client sent %s",
                sent && sent->kind != JSON_NULL ? "a wrong key" : "no key");
    logf_("%s", EmberGetLastError());
    rpc_msg_free(&m);
    return rpc_send_error(fd, "RPCError"), -1;
  }
  rpc_msg_free(&m);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* The listener                                                             */
/* ------------------------------------------------------------------------ */

static volatile sig_atomic_t stopping;
static void on_signal(int sig) { stopping = sig; }

static void session_dir(pid_t pid, char* out, size_t size) {
  snprintf(out, size, "%s/session-%d", server.root, (int)pid);
}

/* Removes a session's directory: plain files only, as uploads are. */
static void remove_dir(const char* dir) {
  char path[4608];
  DIR* d = opendir(dir);
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  }
  if (d != NULL) closedir(d);
  rmdir(dir);
}

static void serve_connection(int conn, int listener) {
  char dir[4200];
  close(listener);
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) _exit(0);
#endif
  signal(SIGTERM, SIG_DFL);
  int one = 1;
  setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  session_dir(getpid(), dir, sizeof dir);
  if (handshake(conn) == 0 && mkdir(dir, 0700) == 0) {
    logf_("%s: session started", dir + strlen(server.root) + 1);
    set_timeout(conn, server.limits.idle_timeout_s);
    rpc_session(conn, dir, &server.limits);
    logf_("%s: session ended", dir + strlen(server.root) + 1);
  }
  _exit(0);
}

static int is_loopback(const char* host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
         strcmp(host, "localhost") == 0;
}

static int listen_on(const char* host, const char* port, char* bound, size_t size) {
  struct addrinfo hints = {0}, *ai;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  int err = getaddrinfo(host, port, &hints, &ai);
  if (err) {
    fprintf(stderr, "ember-rpc-server: error: cannot listen on %s:%s: %s\n",
            host, port, gai_strerror(err));
    return -1;
  }
  int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol), one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
    fprintf(stderr, "ember-rpc-server: error: cannot listen on %s:%s: %s\n",
            host, port, strerror(errno));
    freeaddrinfo(ai);
    return -1;
  }
  freeaddrinfo(ai);
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  char service[16];
  getsockname(fd, (struct sockaddr*)&addr, &len);
  getnameinfo((struct sockaddr*)&addr, len, bound, (socklen_t)size, service,
              sizeof service, NI_NUMERICHOST | NI_NUMERICSERV);
  strncat(bound, ":", size - strlen(bound) - 1);
  strncat(bound, service, size - strlen(bound) - 1);
  return fd;
}

static pid_t* children;
static int max_sessions = 16, active;

static void reap(int block) {
  pid_t pid;
  char dir[4200];
  while ((pid = waitpid(-1, NULL, block ? 0 : WNOHANG)) > 0) {
    session_dir(pid, dir, sizeof dir);
    remove_dir(dir);
    for (int i = 0; i < max_sessions; ++i)
      if (children[i] == pid) children[i] = 0, --active;
    if (block && active == 0) return;
  }
}

static void serve(int listener) {
  struct pollfd p = {listener, POLLIN, 0};
  while (!stopping) {
    reap(0);
    if (poll(&p, 1, 200) <= 0) continue;
    int conn = accept(listener, NULL, NULL);
    if (conn < 0) continue;
    int slot = 0;
    while (slot < max_sessions && children[slot]) ++slot;
    pid_t pid = slot < max_sessions ? fork() : -1;
    if (pid == 0) serve_connection(conn, listener);
    if (pid < 0) {
      ember_error("the server cannot take another session now");
      rpc_send_error(conn, "RPCError");
    } else {
      children[slot] = pid;
      ++active;
    }
    close(conn);
  }
  for (int i = 0; i < max_sessions; ++i)
    if (children[i]) kill(children[i], SIGKILL);
  if (active) reap(1);
  rmdir(server.root);
}

/* ------------------------------------------------------------------------ */
/* The command line                                                         */
/* ------------------------------------------------------------------------ */

static const char USAGE[] =
    "usage: ember-rpc-server [--host HOST] [--port PORT] [--key-file FILE]\n"
    "                        [--insecure-no-key] [--workspace DIR]\n"
    "                        [--max-sessions N] [--max-frame-bytes N]\n"
    "                        [--max-workspace-bytes N] [--max-memory-bytes N]\n"
    "                        [--idle-timeout S] [-q] [--version]\n"
    "The key: the first line of --key-file, else $EMBER_RPC_KEY.\n";

static char* read_key(const char* path) {
  static char line[4096];
  FILE* f = fopen(path, "r");
  if (f == NULL || fgets(line, sizeof line, f) == NULL) {
    fprintf(stderr, "ember-rpc-server: error: cannot read --key-file %s\n", path);
    if (f) fclose(f);
    return NULL;
  }
  fclose(f);
  line[strcspn(line, "\r\n")] = 0;
  return line;
}

int main(int argc, char** argv) {
  const char *host = "127.0.0.1", *port = "9090", *key_file = NULL;
  const char* workspace = getenv("TMPDIR");
  int insecure = 0;
  server.limits = (RpcLimits){64u << 20, 1ull << 30, 2ull << 30, 600};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { server.quiet = 1; continue; }
    if (!strcmp(a, "--insecure-no-key")) { insecure = 1; continue; }
    if (!strcmp(a, "--version")) { puts("ember-rpc-server (ember C runtime) " VERSION); return 0; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(USAGE, stdout); return 0; }
    if (v == NULL) { fprintf(stderr, "%sember-rpc-server: error: %s needs a value\n", USAGE, a); return 2; }
    ++i;
    if (!strcmp(a, "--host")) host = v;
    else if (!strcmp(a, "--port")) port = v;
    else if (!strcmp(a, "--key-file")) key_file = v;
    else if (!strcmp(a, "--workspace")) workspace = v;
    else if (!strcmp(a, "--max-sessions")) max_sessions = atoi(v);
    else if (!strcmp(a, "--max-frame-bytes")) server.limits.max_frame_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--max-workspace-bytes")) server.limits.max_workspace_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--max-memory-bytes")) server.limits.max_memory_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--idle-timeout")) server.limits.idle_timeout_s = atoi(v);
    else { fprintf(stderr, "%sember-rpc-server: error: unknown option %s\n", USAGE, a); return 2; }
  }
  server.key = key_file ? read_key(key_file) : getenv("EMBER_RPC_KEY");
  if (key_file && server.key == NULL) return 2;
  if (server.key != NULL && !*server.key) server.key = NULL;
  if (server.key != NULL && strlen(server.key) < 16) {
    fprintf(stderr, "ember-rpc-server: error: the key must be at least 16 bytes\n");
    return 2;
  }
  if (server.key == NULL && !is_loopback(host) && !insecure) {
    fprintf(stderr, "ember-rpc-server: error: serving %s without a key lets anyone "
                    "who can reach it run code here: give a key, bind to loopback, "
                    "or accept that with --insecure-no-key\n", host);
    return 2;
  }
  if (max_sessions < 1 || server.limits.max_frame_bytes < (1u << 17) ||
      server.limits.idle_timeout_s < 1) {
    fprintf(stderr, "ember-rpc-server: error: bad limits (--max-frame-bytes is "
                    "at least 131072)\n");
    return 2;
  }
  if (server.key == NULL)
    fprintf(stderr, "ember-rpc-server: warning: no key: anyone who can reach "
                    "%s may run code here\n", host);
  children = calloc((size_t)max_sessions, sizeof *children);
  snprintf(server.root, sizeof server.root, "%s/ember-rpc-server-%d",
           workspace && *workspace ? workspace : "/tmp", (int)getpid());
  char bound[128] = "";
  int listener = listen_on(host, port, bound, sizeof bound);
  if (listener < 0 || children == NULL) return 1;
  if (mkdir(server.root, 0700)) {
    fprintf(stderr, "ember-rpc-server: error: cannot create %s: %s\n",
            server.root, strerror(errno));
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  printf("ember-rpc-server: listening on %s\n", bound);
  fflush(stdout);
  serve(listener);
  return 0;
}

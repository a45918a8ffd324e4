/* Leak check of the C ABI: a create / run / pulled run / cancel / upload / download /
 * metrics / error / kill loop through the public header, all on op-layer sessions
 * (osb_session_*) on explicit runtimes, one of each per iteration; run under valgrind
 * (or LeakSanitizer) by `make test-ffi`. Needs OPEN_SANDBOX_DOMAIN and
 * OPEN_SANDBOX_API_KEY (scripts/with-server.sh), which the session's base config reads.
 * Usage: leakcheck [ITERATIONS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "opensandbox.h"

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  void *result;
  OsbError *error;
} Waiter;

static void on_done(uintptr_t user_data, void *result, OsbError *error) {
  Waiter *w = (Waiter *)user_data;
  pthread_mutex_lock(&w->mu);
  w->result = result;
  w->error = error;
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void waiter_init(Waiter *w) {
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->done = 0;
  w->result = NULL;
  w->error = NULL;
}

/* Waits for the callback; returns the result, or exits on an unexpected error. */
static void *wait_ok(Waiter *w, const char *what) {
  pthread_mutex_lock(&w->mu);
  while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  if (w->error) {
    char *j = osb_error_to_json(w->error);
    fprintf(stderr, "%s failed: %s\n", what, j);
    osb_string_free(j);
    osb_error_free(w->error);
    exit(1);
  }
  return w->result;
}

static OsbError *wait_err(Waiter *w) {
  pthread_mutex_lock(&w->mu);
  while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  if (w->result) osb_string_free((char *)w->result);
  return w->error;
}

/* A blocking op that must succeed; returns its owned JSON. */
static char *call(OsbSession *s, const char *op, const char *args) {
  OsbError *err = NULL;
  char *r = osb_session_call_blocking(s, op, args, NULL, &err);
  if (!r) {
    char *j = osb_error_to_json(err);
    fprintf(stderr, "%s failed: %s\n", op, j);
    osb_string_free(j);
    osb_error_free(err);
    exit(1);
  }
  return r;
}

/* The integer after "handle": in a result (and frees it). */
static int take_handle(char *r) {
  const char *p = strstr(r, "\"handle\":");
  int h = p ? atoi(p + 9) : 0;
  osb_string_free(r);
  if (h <= 0) { fprintf(stderr, "no handle\n"); exit(1); }
  return h;
}

int main(int argc, char **argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 3;
  OsbError *err = NULL;
  char args[200];

  for (int i = 0; i < iterations; i++) {
    OsbRuntime *rt = osb_runtime_new("{\"worker_threads\":2}", &err);
    if (!rt) return 1;
    OsbSession *s = osb_session_new(rt, &err);
    /* The session keeps its own reference: the runtime ends with the session. */
    osb_runtime_free(rt);
    if (!s) return 1;

    int sb = take_handle(call(s, "sandbox.create", "{\"image\":\"ubuntu:22.04\"}"));

    snprintf(args, sizeof args, "{\"sandbox\":%d,\"command\":\"echo hi; echo err >&2\"}", sb);
    char *ex = call(s, "commands.run", args);
    if (!strstr(ex, "\"hi\"")) { fprintf(stderr, "unexpected: %s\n", ex); return 1; }
    osb_string_free(ex);

    /* A started run pulled in batches to its end item (the folded exit code). */
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"command\":\"seq 50; exit 2\",\"handlers\":true}", sb);
    int run = take_handle(call(s, "commands.start", args));
    snprintf(args, sizeof args, "{\"handle\":%d,\"max\":16}", run);
    int ended = 0;
    while (!ended) {
      char *r = call(s, "execution.next_batch", args);
      ended = strstr(r, "\"done\":true") != NULL;
      if (ended && !strstr(r, "\"exit_code\":2")) { fprintf(stderr, "bad end: %s\n", r); return 1; }
      osb_string_free(r);
    }
    osb_session_release(s, (uint64_t)run);

    /* A run released mid-way (its command is interrupted on the server). */
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"command\":\"echo x; sleep 20\",\"handlers\":true}", sb);
    run = take_handle(call(s, "commands.start", args));
    if (!osb_session_release(s, (uint64_t)run)) return 1;

    /* Upload 1 MiB in chunks (declared size), download it back. */
    static uint8_t buf[64 * 1024];
    for (size_t k = 0; k < sizeof buf; k++) buf[k] = (uint8_t)(k * 7);
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"path\":\"/tmp/leak.bin\",\"size\":1048576}", sb);
    int up = take_handle(call(s, "upload.open", args));
    for (int k = 0; k < 16; k++) {
      if (osb_session_upload_write_blocking(s, (uint64_t)up, buf, sizeof buf, NULL, &err) != 0) return 1;
    }
    snprintf(args, sizeof args, "{\"handle\":%d}", up);
    osb_string_free(call(s, "upload.finish", args));

    snprintf(args, sizeof args, "{\"sandbox\":%d,\"path\":\"/tmp/leak.bin\"}", sb);
    int dl = take_handle(call(s, "download.open", args));
    long total = 0;
    for (;;) {
      int64_t n = osb_session_download_read(s, (uint64_t)dl, buf, sizeof buf, NULL, &err);
      if (n < 0) { osb_error_free(err); return 1; }
      if (n == 0) break;
      total += n;
    }
    snprintf(args, sizeof args, "{\"handle\":%d}", dl);
    osb_string_free(call(s, "download.close", args));
    if (total != 1048576) { fprintf(stderr, "downloaded %ld bytes\n", total); return 1; }

    /* The same 1 MiB from a file the library reads through a duplicated descriptor, from
     * offset 4096 (the shared offset ends at the end); then a directory: an error. */
    FILE *tmp = tmpfile();
    if (!tmp) return 1;
    for (int k = 0; k < 16; k++) {
      for (size_t j = 0; j < sizeof buf; j++) buf[j] = (uint8_t)(j * 7);
      if (fwrite(buf, 1, sizeof buf, tmp) != sizeof buf) return 1;
    }
    fflush(tmp);
    int fd = fcntl(fileno(tmp), F_DUPFD_CLOEXEC, 0);
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"path\":\"/tmp/leak-fd.bin\"}", sb);
    if (osb_session_upload_fd_blocking(s, args, fd, 4096, 1048576 - 4096, NULL, &err) != 0) {
      fprintf(stderr, "upload_fd: %s\n", osb_error_message(err));
      osb_error_free(err);
      return 1;
    }
    if (lseek(fileno(tmp), 0, SEEK_CUR) != 1048576) { fprintf(stderr, "fd offset\n"); return 1; }
    fclose(tmp);
    fd = open("/tmp", O_RDONLY | O_CLOEXEC);
    if (osb_session_upload_fd_blocking(s, args, fd, 0, 0, NULL, &err) != -1 || !err) return 1;
    osb_error_free(err);
    err = NULL;

    /* Chunk iteration (async), released before the end. */
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"path\":\"/tmp/leak.bin\"}", sb);
    dl = take_handle(call(s, "download.open", args));
    Waiter w;
    waiter_init(&w);
    osb_session_download_next(s, (uint64_t)dl, 4096, NULL, on_done, (uintptr_t)&w);
    OsbChunk *ch = (OsbChunk *)wait_ok(&w, "download_next");
    size_t len = 0;
    (void)osb_chunk_data(ch, &len);
    osb_chunk_free(ch);
    if (len == 0 || !osb_session_release(s, (uint64_t)dl)) return 1;

    /* Metrics pulled as a stream, released after the first batch. */
    snprintf(args, sizeof args, "{\"sandbox\":%d}", sb);
    int m = take_handle(call(s, "metrics.start", args));
    snprintf(args, sizeof args, "{\"handle\":%d,\"max\":1}", m);
    osb_string_free(call(s, "execution.next_batch", args));
    osb_session_release(s, (uint64_t)m);

    /* An error travels back (async) and is freed. */
    waiter_init(&w);
    osb_session_call(s, "manager.get_sandbox_info", "{\"sandbox_id\":\"missing\"}", NULL, on_done,
                     (uintptr_t)&w);
    OsbError *e = wait_err(&w);
    if (!e || osb_error_status(e) != 404) return 1;
    char *j = osb_error_to_json(e);
    osb_string_free(j);
    osb_error_free(e);

    /* A cancelled call. */
    OsbCancel *tok = osb_cancel_new();
    waiter_init(&w);
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"command\":\"sleep 20\"}", sb);
    osb_session_call(s, "commands.run", args, tok, on_done, (uintptr_t)&w);
    osb_cancel_cancel(tok);
    e = wait_err(&w);
    if (!e) return 1;
    osb_error_free(e);
    osb_cancel_free(tok);

    /* An unknown key, and the manifest. */
    char *r = osb_session_call_blocking(s, "commands.start", "{\"sandbox\":1,\"comand\":\"x\"}", NULL, &err);
    if (r || !err) return 1;
    osb_error_free(err);
    err = NULL;
    osb_string_free(osb_ops_manifest());

    snprintf(args, sizeof args, "{\"sandbox\":%d}", sb);
    osb_string_free(call(s, "sandbox.kill", args));
    osb_session_free(s);
    printf("iteration %d ok\n", i + 1);
  }
  return 0;
}

/* Leak check of the C ABI: a create / run / stream / upload / download / error / kill
 * loop through the public header, run under valgrind (or LeakSanitizer) by
 * `make test-ffi`; also the op-layer session (osb_session_*) on an explicit runtime. Needs OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY (scripts/with-server.sh).
 * Usage: leakcheck [ITERATIONS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static char *call(OsbSandbox *sb, const char *op, const char *args) {
  Waiter w;
  waiter_init(&w);
  osb_sandbox_call(sb, op, args, NULL, on_done, (uintptr_t)&w);
  return (char *)wait_ok(&w, op);
}

int main(int argc, char **argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 3;
  OsbError *err = NULL;
  OsbConfig *cfg = osb_config_new(NULL, &err); /* domain and key from the environment */
  if (!cfg) return 1;
  OsbManager *mgr = osb_manager_new(cfg, &err);
  if (!mgr) return 1;

  for (int i = 0; i < iterations; i++) {
    Waiter w;
    waiter_init(&w);
    osb_sandbox_create(cfg, "{\"image\":\"ubuntu:22.04\"}", NULL, on_done, (uintptr_t)&w);
    OsbSandbox *sb = (OsbSandbox *)wait_ok(&w, "create");

    char *ex = call(sb, "commands.run", "{\"command\":\"echo hi; echo err >&2\"}");
    if (!strstr(ex, "\"hi\"")) { fprintf(stderr, "unexpected: %s\n", ex); return 1; }
    osb_string_free(ex);

    /* Stream: pull every event, view and JSON. */
    waiter_init(&w);
    osb_sandbox_open_stream(sb, "commands.run", "{\"command\":\"seq 1 50\"}", NULL, on_done,
                            (uintptr_t)&w);
    OsbStream *st = (OsbStream *)wait_ok(&w, "open_stream");
    int events = 0;
    for (;;) {
      OsbEvent *ev = osb_stream_next_blocking(st, NULL, &err);
      if (!ev) {
        if (err) { osb_error_free(err); return 1; }
        break;
      }
      OsbEventView v;
      osb_event_view(ev, &v);
      char *j = osb_event_json(ev);
      osb_string_free(j);
      osb_event_free(ev);
      events++;
    }
    osb_stream_free(st);
    if (events < 52) { fprintf(stderr, "only %d events\n", events); return 1; }

    /* A stream dropped mid-way (connection closed, command interrupted). */
    waiter_init(&w);
    osb_sandbox_open_stream(sb, "commands.run",
                            "{\"command\":\"echo x; sleep 20\",\"interrupt_on_drop\":true}",
                            NULL, on_done, (uintptr_t)&w);
    st = (OsbStream *)wait_ok(&w, "open_stream");
    OsbEvent *first = osb_stream_next_blocking(st, NULL, &err);
    osb_event_free(first);
    osb_stream_free(st);

    /* Upload 1 MiB in chunks, download it back. */
    static uint8_t buf[64 * 1024];
    for (size_t k = 0; k < sizeof buf; k++) buf[k] = (uint8_t)(k * 7);
    OsbUpload *up = osb_sandbox_upload(sb, "{\"path\":\"/tmp/leak.bin\",\"size\":1048576}", &err);
    if (!up) return 1;
    for (int k = 0; k < 16; k++) {
      if (osb_upload_write_blocking(up, buf, sizeof buf, NULL, &err) != 0) return 1;
    }
    waiter_init(&w);
    osb_upload_finish(up, NULL, on_done, (uintptr_t)&w);
    wait_ok(&w, "upload_finish");
    osb_upload_free(up);

    waiter_init(&w);
    osb_sandbox_download(sb, "{\"path\":\"/tmp/leak.bin\"}", NULL, on_done, (uintptr_t)&w);
    OsbDownload *dl = (OsbDownload *)wait_ok(&w, "download");
    long total = 0;
    for (;;) {
      int64_t n = osb_download_read(dl, buf, sizeof buf, NULL, &err);
      if (n < 0) { osb_error_free(err); return 1; }
      if (n == 0) break;
      total += n;
    }
    osb_download_free(dl);
    if (total != 1048576) { fprintf(stderr, "downloaded %ld bytes\n", total); return 1; }

    /* Chunk iteration, freed before the end. */
    waiter_init(&w);
    osb_sandbox_download(sb, "{\"path\":\"/tmp/leak.bin\"}", NULL, on_done, (uintptr_t)&w);
    dl = (OsbDownload *)wait_ok(&w, "download");
    waiter_init(&w);
    osb_download_next(dl, NULL, on_done, (uintptr_t)&w);
    OsbChunk *ch = (OsbChunk *)wait_ok(&w, "download_next");
    size_t len = 0;
    (void)osb_chunk_data(ch, &len);
    osb_chunk_free(ch);
    osb_download_free(dl);

    /* An error travels back and is freed. */
    waiter_init(&w);
    osb_manager_call(mgr, "get_sandbox_info", "{\"sandbox_id\":\"missing\"}", NULL, on_done,
                     (uintptr_t)&w);
    OsbError *e = wait_err(&w);
    if (!e || osb_error_status(e) != 404) return 1;
    char *j = osb_error_to_json(e);
    osb_string_free(j);
    osb_error_free(e);

    /* A cancelled call. */
    OsbCancel *tok = osb_cancel_new();
    waiter_init(&w);
    osb_sandbox_call(sb, "commands.run", "{\"command\":\"sleep 20\"}", tok, on_done, (uintptr_t)&w);
    osb_cancel_cancel(tok);
    e = wait_err(&w);
    if (!e) return 1;
    osb_error_free(e);
    osb_cancel_free(tok);

    char *r = call(sb, "kill", NULL);
    osb_string_free(r);
    osb_sandbox_free(sb);

    /* The op-layer session on an explicit runtime: a started run pulled in batches to its
     * end item, a run cancelled by release (interrupting its command), an unknown key, and
     * the runtime's threads ended by the last free. */
    OsbRuntime *rt = osb_runtime_new("{\"worker_threads\":2}", &err);
    if (!rt) return 1;
    OsbSession *s = osb_session_new(rt, &err);
    osb_runtime_free(rt);
    if (!s) return 1;
    r = osb_session_call_blocking(s, "sandbox.create", "{\"image\":\"ubuntu:22.04\"}", NULL, &err);
    if (!r) return 1;
    int sbh = atoi(strstr(r, "\"handle\":") + 9);
    osb_string_free(r);
    char args[160];
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"command\":\"seq 50; exit 2\",\"handlers\":true}", sbh);
    r = osb_session_call_blocking(s, "commands.start", args, NULL, &err);
    if (!r) return 1;
    int run = atoi(strstr(r, "\"handle\":") + 9);
    osb_string_free(r);
    snprintf(args, sizeof args, "{\"handle\":%d,\"max\":16}", run);
    int ended = 0;
    while (!ended) {
      r = osb_session_call_blocking(s, "execution.next_batch", args, NULL, &err);
      if (!r) return 1;
      ended = strstr(r, "\"done\":true") != NULL;
      if (ended && !strstr(r, "\"exit_code\":2")) return 1;
      osb_string_free(r);
    }
    osb_session_release(s, (uint64_t)run);
    snprintf(args, sizeof args, "{\"sandbox\":%d,\"command\":\"sleep 20\"}", sbh);
    r = osb_session_call_blocking(s, "commands.start", args, NULL, &err);
    if (!r) return 1;
    run = atoi(strstr(r, "\"handle\":") + 9);
    osb_string_free(r);
    if (!osb_session_release(s, (uint64_t)run)) return 1;
    r = osb_session_call_blocking(s, "commands.start", "{\"sandbox\":1,\"comand\":\"x\"}", NULL, &err);
    if (r || !err) return 1;
    osb_error_free(err);
    err = NULL;
    char *m = osb_ops_manifest();
    osb_string_free(m);
    snprintf(args, sizeof args, "{\"sandbox\":%d}", sbh);
    r = osb_session_call_blocking(s, "sandbox.kill", args, NULL, &err);
    if (!r) return 1;
    osb_string_free(r);
    osb_session_free(s);
    printf("iteration %d ok\n", i + 1);
  }
  osb_manager_free(mgr);
  osb_config_free(cfg);
  return 0;
}

/*
 * Receive buffers for /dev/fuse, lent to WRITE requests so that their payload reaches JS without a copy.
 *
 * A session reads every request into a buffer of this pool. A WRITE's payload stays where the kernel put
 * it: the handler gets a Buffer that is a view of that pool buffer, the buffer is lent to the request (its
 * slot, slots.c), and the session reads the next request into another pool buffer. When the request is
 * answered, its slot is freed and the buffer returns to the pool. So a handler may use `data` until it
 * answers the write, and must copy whatever it keeps after that (src/fuse/types.ts says so).
 *
 * Before, every WRITE was copied into a new 1 MiB Buffer: 1,079 of them for 1 GiB, whose external memory
 * made V8 run full collections (docs/benchmarks.md, "Where dd's time goes").
 *
 * Each pool buffer is an external ArrayBuffer over malloc'ed memory, held by a strong reference while
 * pooled; Node marks such ArrayBuffers untransferable, so a postMessage cannot detach one. The pool never
 * shrinks: at most WBUF_MAX buffers of one request each (1 MiB + a page). When all are lent, or the view
 * function is missing (it came with Node-API 10), the session reads into its own buffer and a WRITE is
 * copied.
 */
#include "hf.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

/* At most this many requests hold a pool buffer at once (the kernel's writeback sends 12 at a time). */
#define WBUF_MAX 32

typedef napi_status (*buffer_view_fn)(napi_env, napi_value, size_t, size_t, napi_value *);

struct wbuf {
  char *mem;
  napi_ref ab;
  uint8_t busy;  /* a session reads into it, or a request holds it */
};

static struct wbuf pool[WBUF_MAX];
static int npool;
static napi_env pool_env;
static buffer_view_fn buffer_view;
static int resolved;
static size_t wbuf_size;
static double n_lent, n_copied;
static int max_lent, now_lent;

size_t hf_wbuf_size(void) {
  /* libfuse 3.14 reads up to FUSE_MAX_MAX_PAGES (256) pages plus a header page: never more. */
  if (!wbuf_size) wbuf_size = 257 * (size_t)getpagesize();
  return wbuf_size;
}

static void free_mem(napi_env env, void *data, void *hint) { free(data); }

int hf_wbuf_acquire(napi_env env) {
  if (!resolved) {
    resolved = 1;
    /* Node-API 10; looked up at run time so that the addon still loads on a Node without it. */
    buffer_view = (buffer_view_fn)dlsym(RTLD_DEFAULT, "node_api_create_buffer_from_arraybuffer");
  }
  if (!buffer_view) return -1;
  if (!pool_env) pool_env = env;
  if (env != pool_env) return -1;
  for (int i = 0; i < npool; i++) if (!pool[i].busy) { pool[i].busy = 1; return i; }
  if (npool == WBUF_MAX) return -1;
  char *mem = malloc(hf_wbuf_size());
  napi_value ab;
  if (!mem) return -1;
  if (napi_create_external_arraybuffer(env, mem, hf_wbuf_size(), free_mem, NULL, &ab) != napi_ok) {
    free(mem);
    buffer_view = NULL;  /* external buffers not allowed here: copy from now on */
    return -1;
  }
  struct wbuf *b = &pool[npool];
  b->mem = mem;
  napi_create_reference(env, ab, 1, &b->ab);
  b->busy = 1;
  return npool++;
}

char *hf_wbuf_mem(int i) { return pool[i].mem; }

napi_value hf_wbuf_view(napi_env env, int i, const char *p, size_t n) {
  struct wbuf *b = &pool[i];
  napi_value ab, view;
  if (p < b->mem || p + n > b->mem + hf_wbuf_size()) return NULL;
  if (napi_get_reference_value(env, b->ab, &ab) != napi_ok || !ab) return NULL;
  if (buffer_view(env, ab, (size_t)(p - b->mem), n, &view) != napi_ok) return NULL;
  n_lent++;
  if (++now_lent > max_lent) max_lent = now_lent;
  return view;
}

void hf_wbuf_count_copy(void) { n_copied++; }

void hf_wbuf_release(int i, int was_lent) {
  if (i < 0 || i >= npool) return;
  pool[i].busy = 0;
  if (was_lent) now_lent--;
}

/* writeBufferStats() -> { lent, copied, pool, maxLent }: WRITE payloads passed as views or copies. */
napi_value hf_wbuf_stats(napi_env env, napi_callback_info info) {
  napi_value o, v;
  napi_create_object(env, &o);
  napi_create_double(env, n_lent, &v); napi_set_named_property(env, o, "lent", v);
  napi_create_double(env, n_copied, &v); napi_set_named_property(env, o, "copied", v);
  napi_create_int32(env, npool, &v); napi_set_named_property(env, o, "pool", v);
  napi_create_int32(env, max_lent, &v); napi_set_named_property(env, o, "maxLent", v);
  return o;
}

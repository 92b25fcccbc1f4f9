/*
 * Mounting, serving and unmounting one FUSE session on Node's main loop.
 *
 * - mount: fuse_session_new + fuse_session_mount (through fusermount3 when auto_unmount is asked, which
 *   then removes the mount if this process dies), then the fd goes non-blocking and close-on-exec (as does
 *   fusermount3's socket, or a child process would keep the auto-unmount from ever firing), and a
 *   custom-io shim patches FUSE_PARALLEL_DIROPS into the INIT reply: libfuse 3.14 computes the capability
 *   but never sends it, and without it the kernel serializes every lookup/readdir of a directory behind
 *   one that is answered later. With killpriv_v2 set, it also grants FUSE_HANDLE_KILLPRIV_V2 when the kernel
 *   offers it (libfuse 3.14 cannot): the kernel then stops asking for security.capability before every
 *   write(2) (once per inode instead) and for the attributes before every chown, and instead flags the
 *   writes, truncates, O_TRUNC opens and chowns that must clear suid/sgid; the drain reads that flag from
 *   the raw request (libfuse drops it) into s->kill for the handler (dispatch.c).
 * - serve: a uv_poll_t on the fd; each wake-up drains up to DRAIN_MAX requests until EAGAIN inside one
 *   handle scope and one callback scope (so promise jobs and nextTicks queued by handlers run after).
 *   Requests are read into pooled buffers (wbuf.c): a WRITE keeps its buffer until it is answered. With
 *   spinUs, a uv_prepare_t waits awake for the next request after a turn that answered some, and serves
 *   it there (on_prepare).
 * - unmount: stop the poll first (fuse_session_unmount closes the fd), answer outstanding requests with
 *   EIO, unmount, destroy. Never from inside a handler: a call made there is deferred to the end of the
 *   drain. An external unmount or a connection abort shows up as a poll error or ENODEV.
 */
#include "hf.h"
#include <linux/fuse.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define DRAIN_MAX 64
#define MAX_SESSIONS 64

static hf_session *sessions[MAX_SESSIONS];
static char last_log[512];

static void capture_log(enum fuse_log_level level, const char *fmt, va_list ap) {
  char line[512];
  vsnprintf(line, sizeof(line), fmt, ap);
  if (level <= FUSE_LOG_ERR) {
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n') line[--n] = 0;
    snprintf(last_log, sizeof(last_log), "%s", line);
  }
  fputs(line, stderr);
  if (line[0] && line[strlen(line) - 1] != '\n') fputc('\n', stderr);
}

/* custom io: plain read/writev, recording the INIT request and patching its reply. */
static ssize_t io_read(int fd, void *buf, size_t len, void *ud) {
  hf_session *s = ud;
  /* Every receive buffer (pool or own) holds hf_wbuf_size() bytes; libfuse 3.14 never asks for more. */
  if (len > hf_wbuf_size()) len = hf_wbuf_size();
  ssize_t r = read(fd, buf, len);
  if (!s->init_patched && r >= (ssize_t)sizeof(struct fuse_in_header)) {
    const struct fuse_in_header *in = buf;
    if (in->opcode == FUSE_INIT) {
      s->init_unique = in->unique;
      if ((size_t)r >= sizeof(*in) + offsetof(struct fuse_init_in, flags) + sizeof(uint32_t))
        s->init_flags = ((const struct fuse_init_in *)(in + 1))->flags;
      if ((s->init_flags & FUSE_INIT_EXT) && (size_t)r >= sizeof(*in) + offsetof(struct fuse_init_in, flags2) + sizeof(uint32_t))
        s->init_flags2 = ((const struct fuse_init_in *)(in + 1))->flags2;
    }
  }
  return r;
}
static ssize_t io_writev(int fd, struct iovec *iov, int count, void *ud) {
  hf_session *s = ud;
  if (!s->init_patched && s->init_unique && count >= 2) {
    const struct fuse_out_header *out = iov[0].iov_base;
    if (out->unique == s->init_unique) {
      s->init_patched = 1;
      if (out->error == 0 && iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
        struct fuse_init_out init;
        size_t n = iov[1].iov_len < sizeof(init) ? iov[1].iov_len : sizeof(init);
        memset(&init, 0, sizeof(init));
        memcpy(&init, iov[1].iov_base, n);
        init.flags |= FUSE_PARALLEL_DIROPS;
        int grant = s->settings.killpriv_v2 && (s->init_flags & FUSE_HANDLE_KILLPRIV_V2);
        if (grant) init.flags |= FUSE_HANDLE_KILLPRIV_V2;
        /* Passthrough (decided in ll_init): max_stack_depth is the u32 after flags2 (protocol 7.40). */
        if (s->passthrough && n >= offsetof(struct fuse_init_out, flags2) + 2 * sizeof(uint32_t)) {
          init.flags = (init.flags | FUSE_INIT_EXT) & ~FUSE_WRITEBACK_CACHE;
          init.flags2 |= hf_passthrough_flags2();
          uint32_t depth = 1;
          memcpy((char *)&init + offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t), &depth, sizeof(depth));
        } else {
          s->passthrough = 0;
        }
        s->writeback_granted = (init.flags & FUSE_WRITEBACK_CACHE) != 0;
        s->init_done = 1;
        struct iovec v[2] = { iov[0], { &init, n } };
        if (count == 2) {
          ssize_t w = writev(fd, v, 2);
          if (w >= 0 && grant) s->killpriv_v2 = 1;  /* the kernel now flags what must be cleared */
          return w;
        }
      }
    }
  }
  return writev(fd, iov, count);
}

/* Whether a raw request carries KILLPRIV_V2's "clear suid/sgid" flag (libfuse 3.14 passes none of them on). */
static int wants_kill(const struct fuse_buf *b, size_t len) {
  if (b->flags & FUSE_BUF_IS_FD || len < sizeof(struct fuse_in_header)) return 0;
  const struct fuse_in_header *in = b->mem;
  const void *arg = in + 1;
  size_t n = len - sizeof(*in);
  switch (in->opcode) {
  case FUSE_SETATTR:
    return n >= sizeof(struct fuse_setattr_in) && (((const struct fuse_setattr_in *)arg)->valid & FATTR_KILL_SUIDGID);
  case FUSE_WRITE:
    return n >= sizeof(struct fuse_write_in) && (((const struct fuse_write_in *)arg)->write_flags & FUSE_WRITE_KILL_SUIDGID);
  case FUSE_OPEN:
    return n >= sizeof(struct fuse_open_in) && (((const struct fuse_open_in *)arg)->open_flags & FUSE_OPEN_KILL_SUIDGID);
  default:
    return 0;
  }
}

static void poll_closed(uv_handle_t *h) { free(h); }

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Points s->buf at a buffer for the next request: a pool buffer (a WRITE read into it can keep it, wbuf.c)
 * or, when the pool has none to spare, the session's own. Returns 0 when there is no memory for either.
 */
static int receive_buffer(hf_session *s) {
  if (s->rbuf < 0) s->rbuf = hf_wbuf_acquire(s->env);
  if (s->rbuf >= 0) {
    s->buf.mem = hf_wbuf_mem(s->rbuf);
    return 1;
  }
  if (!s->own) s->own = malloc(hf_wbuf_size());
  s->buf.mem = s->own;
  return s->own != NULL;
}

static void free_buffers(hf_session *s) {
  if (s->rbuf >= 0) hf_wbuf_release(s->rbuf, 0);
  s->rbuf = -1;
  free(s->own);
  s->own = NULL;
  s->buf.mem = NULL;
}

static void finish_async(hf_session *s) {
  napi_env env = s->env;
  for (int i = 0; i < OP_COUNT; i++) if (s->fn[i]) { napi_delete_reference(env, s->fn[i]); s->fn[i] = NULL; }
  if (s->ops_ref) { napi_delete_reference(env, s->ops_ref); s->ops_ref = NULL; }
  if (s->actx) { napi_async_destroy(env, s->actx); s->actx = NULL; }
  if (s->resource) { napi_delete_reference(env, s->resource); s->resource = NULL; }
}

/*
 * external: the kernel side went away (fusermount -u, umount, abort): report through onUnmounted.
 * exiting: the process is exiting (maybe from inside a handler): unmount only, call no JS, free nothing.
 */
void hf_session_teardown(hf_session *s, const char *reason, int external, int exiting) {
  if (s->state != S_MOUNTED) return;
  if (s->depth > 0 && !exiting) { s->unmount_pending = 1; return; }
  s->state = S_CLOSING;
  napi_env env = s->env;
  uv_poll_stop(s->poll);
  if (s->prep) uv_prepare_stop(s->prep);
  hf_idlepoll_stop(s->idle);
  s->idle = NULL;
  if (external) fuse_session_exit(s->se);
  if (!exiting) uv_close((uv_handle_t *)s->poll, poll_closed);
  if (!exiting && s->prep) { uv_close((uv_handle_t *)s->prep, poll_closed); s->prep = NULL; }
  if (!exiting) hf_slots_orphan(env, s, EIO);
  fuse_session_unmount(s->se);  /* closes the fd; unmounts unless the kernel already did */
  s->fd = -1;
  if (s->commfd >= 0) { close(s->commfd); s->commfd = -1; }
  for (int i = 0; i < MAX_SESSIONS; i++) if (sessions[i] == s) sessions[i] = NULL;
  if (exiting) { s->state = S_CLOSED; return; }
  fuse_session_destroy(s->se);  /* calls the JS destroy handler */
  s->se = NULL;
  free_buffers(s);
  hf_noxattr_free(s);  /* a later mount starts with an empty table */
  s->state = S_CLOSED;
  if (external && s->on_unmounted) {
    napi_value cb, self, arg, result;
    napi_get_reference_value(env, s->on_unmounted, &cb);
    napi_get_undefined(env, &self);
    napi_create_string_utf8(env, reason, NAPI_AUTO_LENGTH, &arg);
    if (cb && napi_call_function(env, self, cb, 1, &arg, &result) != napi_ok) {
      napi_value exc;
      if (napi_get_and_clear_last_exception(env, &exc) == napi_ok && !s->pending_exc)
        napi_create_reference(env, exc, 1, &s->pending_exc);
    }
  }
  if (s->on_unmounted) { napi_delete_reference(env, s->on_unmounted); s->on_unmounted = NULL; }
  finish_async(s);
}

/* Requests this process served in the awake wait, and from a wake-up of the loop (servedStats). */
static uint64_t served_awake, served_woken;

/*
 * One drain: requests read and handled until the device is empty (or `max` of them), inside one handle
 * scope and one callback scope (so promise jobs and nextTicks queued by handlers run after). `first`: the
 * size of a request the caller already read into s->buf (the awake wait's read, which then serves just
 * that one, and then calls the `turnEnd` handler, once the handlers' promise jobs have run, in a callback
 * scope of its own: what they left for the end of the loop's turn, a journal commit that replies wait for,
 * is done there, and the wait goes on). Returns 0 when the session ended here (it is freed: the caller
 * must not touch it).
 */
static int serve(hf_session *s, int status, int first, int max) {
  napi_env env = s->env;
  int awake = first > 0;
  napi_handle_scope hs; napi_callback_scope cs; napi_value resource;
  napi_open_handle_scope(env, &hs);
  napi_get_reference_value(env, s->resource, &resource);
  napi_open_callback_scope(env, resource, s->actx, &cs);
  const char *ended = NULL;
  if (status < 0) {
    ended = "connection closed (external unmount or abort)";
  } else {
    s->depth++;
    for (int n = 0; n < max && !s->unmount_pending; n++) {
      int res = first;
      first = 0;
      if (!res) {
        if (!receive_buffer(s)) break;  /* out of memory: the poll wakes us again */
        res = fuse_session_receive_buf(s->se, &s->buf);
      }
      if (res == -EAGAIN) break;
      if (res == -EINTR) continue;
      if (res <= 0 || fuse_session_exited(s->se)) { ended = "connection closed (external unmount or abort)"; break; }
      s->answered = 1;
      if (awake) served_awake++; else served_woken++;
      s->kill = s->killpriv_v2 && wants_kill(&s->buf, (size_t)res);
      fuse_session_process_buf(s->se, &s->buf);
      s->kill = 0;
      if (s->nintr) hf_deliver_interrupts(s);
      if (fuse_session_exited(s->se)) { ended = "session ended by libfuse"; break; }
    }
    s->depth--;
  }
  if (s->answered) hf_idlepoll_touch(s->idle);
  if (ended) hf_session_teardown(s, ended, 1, 0);
  else if (s->unmount_pending) hf_session_teardown(s, "unmount", 0, 0);
  napi_ref pending = s->pending_exc;
  s->pending_exc = NULL;
  int alive = s->state != S_CLOSED;
  if (!alive) free(s);
  if (pending) {
    napi_value exc;
    napi_get_reference_value(env, pending, &exc);
    napi_delete_reference(env, pending);
    napi_fatal_exception(env, exc);
  }
  napi_close_callback_scope(env, cs);
  if (alive && awake && s->state == S_MOUNTED && s->fn[OP_TURN_END]) {
    napi_value fn, self, result;
    napi_open_callback_scope(env, resource, s->actx, &cs);
    napi_get_reference_value(env, s->fn[OP_TURN_END], &fn);
    napi_get_reference_value(env, s->ops_ref, &self);
    if (napi_call_function(env, self, fn, 0, NULL, &result) != napi_ok) {
      napi_value exc;
      if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) napi_fatal_exception(env, exc);
    }
    napi_close_callback_scope(env, cs);
  }
  napi_close_handle_scope(env, hs);
  return alive;
}

/* servedStats() -> { awake, woken }: requests served in the awake wait (on_prepare) and after a wake-up. */
napi_value hf_served_stats(napi_env env, napi_callback_info info) {
  static const char *const names[] = { "awake", "woken" };
  uint64_t values[] = { served_awake, served_woken };
  return hf_counts(env, names, values, 2);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  hf_session *s = h->data;
  if (s->state != S_MOUNTED) return;
  serve(s, status, 0, DRAIN_MAX);
}

/*
 * The awake wait (spinUs): just before the loop sleeps in epoll after a turn that answered requests, wait
 * up to spin_ns for the next request, reading the device itself, and serve what arrives here; then the
 * handlers' `turnEnd` commits what they left for the end of the turn (serve), and the wait goes on. A
 * client that works synchronously (stat, lookup, one file after another) is served by a read and a reply
 * per request, where a wake-up through the loop cost a poll, an epoll_wait and a read that found the
 * device empty (docs/decisions/0086-serving-in-the-awake-wait.md). A sleeping thread would pay the wake-up
 * of an idle CPU on every request, which on a VM is most of a round trip (docs/decisions/0062-fuse-spin-wait.md).
 * The wait ends when the loop has work due (an immediate, a pending handle: uv_backend_timeout 0), when
 * anything else it watches is ready (while the device is empty it polls the device and the loop's epoll
 * fd together: the epoll fd alone also reports the device), after PREPARE_NS of serving (timers and other
 * I/O get their turn), or after spin_ns with no request. Each pass yields the CPU. A yield that took
 * longer than PREEMPTED_NS gave this CPU to a task that keeps it (a CPU-bound process, which a waiting
 * thread kept runnable beside it would slow: the burner runs of docs/decisions/0062-fuse-spin-wait.md):
 * the wait then stops and is skipped for the next SKIP_TURNS turns that answered requests. A shorter one
 * is most often the client itself, woken on this CPU by our reply, sending its next request: the wait goes
 * on and reads it (docs/decisions/0087-the-awake-wait-through-the-clients-turn.md). No wait when the loop has
 * work due now; a loop with no FUSE traffic never waits. With idle pollers running, the wait pauses instead
 * of yielding: with the yield, the pollers made stat of 10,000 files slower (374 → 443 ms), with the pause
 * they did not (394 ms; docs/decisions/0064-idle-pollers.md).
 */
#define PREEMPTED_NS 200000
#define SKIP_TURNS 32
#define PREPARE_NS 1000000
/* Why awake waits ended (waitEnds): the counters' order is wait_end_names'. */
enum { END_LOOP_DUE, END_SERVED_MAX, END_NO_REQUEST, END_LOOP_READY, END_PREEMPTED, END_SKIPPED, END_N };
static const char *const wait_end_names[END_N] = { "loop_due", "served_max", "no_request", "loop_ready", "preempted", "skipped" };
static uint64_t wait_ends[END_N];
/* The wait itself (on_prepare); may end the session (then s is freed). */
static void wait_awake(hf_session *s, uv_loop_t *loop) {
  uint64_t start = mono_ns(), since = start, now = start;
  /* The device, and the loop's epoll fd (which reports the device too, and everything else the loop watches). */
  struct pollfd p[2] = { { .fd = s->fd, .events = POLLIN }, { .fd = uv_backend_fd(loop), .events = POLLIN } };
  for (;;) {
    if (!receive_buffer(s)) return;  /* (a pool buffer is an ArrayBuffer: the caller's handle scope) */
    int res = fuse_session_receive_buf(s->se, &s->buf);
    if (res > 0) {
      if (!serve(s, 0, res, 1) || s->state != S_MOUNTED) return;
      now = mono_ns();
      if (uv_backend_timeout(loop) == 0) { wait_ends[END_LOOP_DUE]++; return; }
      if (now - start > PREPARE_NS) { wait_ends[END_SERVED_MAX]++; return; }
      since = now;
      continue;
    }
    if (res != -EAGAIN && res != -EINTR) return;  /* the end of the connection: the poll sees it */
    for (;;) {  /* the device is empty: wait for a request, or for anything else to be ready */
      int n = poll(p, 2, 0);  /* (first, also after a long yield: the client may have sent its request) */
      if (n > 0 && p[0].revents) break;  /* a request (or the end): read it */
      if (n > 0) { wait_ends[END_LOOP_READY]++; return; }  /* something else is ready: the loop's turn */
      if (now - since > s->spin_ns) { wait_ends[END_NO_REQUEST]++; return; }
      /* With idle pollers (idlepoll.c) runnable beside us, a yield may hand this CPU to one of them: pause
       * instead; a caller that needs this CPU preempts us on its wake-up (caught just below). */
      if (s->idle) { for (int i = 0; i < 64; i++) hf_cpu_relax(); }
      else sched_yield();
      uint64_t after = mono_ns();
      if (after - now > PREEMPTED_NS) {  /* a task that keeps this CPU ran: sleep instead */
        s->spin_skip = SKIP_TURNS;
        wait_ends[END_PREEMPTED]++;
        return;
      }
      now = after;
    }
  }
}

static void on_prepare(uv_prepare_t *h) {
  hf_session *s = h->data;
  if (!s->answered) return;
  s->answered = 0;
  if (s->state != S_MOUNTED || uv_backend_timeout(h->loop) == 0) return;
  if (s->spin_skip > 0) { s->spin_skip--; wait_ends[END_SKIPPED]++; return; }
  napi_env env = s->env;
  napi_handle_scope hs;
  napi_open_handle_scope(env, &hs);
  wait_awake(s, h->loop);
  napi_close_handle_scope(env, hs);
}

/* waitEnds() -> { loop_due, served_max, no_request, loop_ready, preempted, skipped }: why awake waits ended, and turns that skipped theirs. */
napi_value hf_wait_ends(napi_env env, napi_callback_info info) {
  (void)info;
  return hf_counts(env, wait_end_names, wait_ends, END_N);
}

static int fd_is_open_before[4096];

/* mount(mountpoint, args: string[], ops, onUnmounted, writebackCache, maxWrite, spinUs, killprivV2, idlePollUs, passthrough) -> session handle */
napi_value hf_mount(napi_env env, napi_callback_info info) {
  size_t argc = 10; napi_value argv[10];
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char mnt[4096]; size_t n;
  if (argc < 6 || napi_get_value_string_utf8(env, argv[0], mnt, sizeof(mnt), &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "mount(mountpoint, args, ops, onUnmounted, writebackCache, maxWrite)");
    return NULL;
  }
  int slot = -1;
  for (int i = 0; i < MAX_SESSIONS; i++) if (!sessions[i]) { slot = i; break; }
  if (slot < 0) { napi_throw_error(env, NULL, "too many FUSE mounts in this process"); return NULL; }

  hf_session *s = calloc(1, sizeof(*s));
  s->env = env; s->fd = -1; s->commfd = -1; s->rbuf = -1; s->lend = -1;
  napi_create_reference(env, argv[2], 1, &s->ops_ref);
  for (int i = 0; i < OP_COUNT; i++) {
    napi_value f; napi_valuetype t;
    if (napi_get_named_property(env, argv[2], hf_op_names[i], &f) == napi_ok &&
        napi_typeof(env, f, &t) == napi_ok && t == napi_function)
      napi_create_reference(env, f, 1, &s->fn[i]);
  }
  napi_valuetype cbt; napi_typeof(env, argv[3], &cbt);
  if (cbt == napi_function) napi_create_reference(env, argv[3], 1, &s->on_unmounted);
  bool wb = false; napi_get_value_bool(env, argv[4], &wb);
  double mw = 0; napi_get_value_double(env, argv[5], &mw);
  s->settings.writeback_cache = wb;
  s->settings.max_write = mw > 0 ? (unsigned)mw : 0;
  double spin = 0;
  if (argc >= 7) napi_get_value_double(env, argv[6], &spin);
  s->spin_ns = spin > 0 && spin <= 1e6 ? (uint64_t)(spin * 1000) : 0;
  bool kp = false;
  if (argc >= 8) napi_get_value_bool(env, argv[7], &kp);
  s->settings.killpriv_v2 = kp;
  double idle = 0;
  if (argc >= 9) napi_get_value_double(env, argv[8], &idle);
  s->settings.idle_poll_ns = idle > 0 && idle <= 1e6 ? (uint64_t)(idle * 1000) : 0;
  bool pt = false;
  if (argc >= 10) napi_get_value_bool(env, argv[9], &pt);
  s->settings.passthrough = pt;
  hf_fill_llops(s);

  uint32_t nargs = 0; napi_get_array_length(env, argv[1], &nargs);
  char **av = calloc(nargs + 2, sizeof(char *));
  av[0] = strdup("homefs");
  for (uint32_t i = 0; i < nargs; i++) {
    napi_value e; size_t len;
    napi_get_element(env, argv[1], i, &e);
    napi_get_value_string_utf8(env, e, NULL, 0, &len);
    av[i + 1] = malloc(len + 1);
    napi_get_value_string_utf8(env, e, av[i + 1], len + 1, &len);
  }
  struct fuse_args fargs = FUSE_ARGS_INIT((int)nargs + 1, av);
  last_log[0] = 0;
  fuse_set_log_func(capture_log);

  /* Remember which fds exist, to mark the ones the mount creates close-on-exec. */
  memset(fd_is_open_before, 0, sizeof(fd_is_open_before));
  DIR *d = opendir("/proc/self/fd");
  if (d) { struct dirent *de; while ((de = readdir(d))) { int fd = atoi(de->d_name); if (fd >= 0 && fd < 4096) fd_is_open_before[fd] = 1; } closedir(d); }

  const char *fail = NULL;
  s->se = fuse_session_new(&fargs, &s->llops, sizeof(s->llops), s);
  if (!s->se) fail = "invalid mount options";
  else if (fuse_session_mount(s->se, mnt) != 0) fail = "mount failed";
  fuse_opt_free_args(&fargs);
  for (uint32_t i = 0; i < nargs + 1; i++) free(av[i]);
  free(av);
  if (fail) {
    char msg[4800];
    snprintf(msg, sizeof(msg), "%s%s%s", fail, last_log[0] ? ": " : "", last_log);
    if (s->se) fuse_session_destroy(s->se);
    finish_async(s);
    if (s->on_unmounted) napi_delete_reference(env, s->on_unmounted);
    free(s);
    napi_throw_error(env, NULL, msg);
    return NULL;
  }
  s->fd = fuse_session_fd(s->se);
  d = opendir("/proc/self/fd");
  if (d) {
    int dfd = dirfd(d); struct dirent *de;
    while ((de = readdir(d))) {
      if (de->d_name[0] == '.') continue;
      int fd = atoi(de->d_name);
      if (fd < 0 || fd >= 4096 || fd_is_open_before[fd] || fd == dfd) continue;
      fcntl(fd, F_SETFD, FD_CLOEXEC);
      struct stat st;
      int dom = 0; socklen_t dl = sizeof(dom);
      if (fd != s->fd && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
          getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) == 0 && dom == AF_UNIX)
        s->commfd = fd;
    }
    closedir(d);
  }
  /*
   * On SIGKILL the kernel releases our files last-closed-first; if fusermount3's socket went before the
   * /dev/fuse fd, the watcher would wake while the connection is still alive, its open() of the
   * mountpoint would fail with ECONNABORTED instead of ENOTCONN, and it would leave the dead mount
   * behind. Keep the /dev/fuse fd numbered above the socket so it is released (and aborted) first.
   */
  if (s->commfd > s->fd) {
    int hi = fcntl(s->fd, F_DUPFD_CLOEXEC, s->commfd + 1);
    if (hi >= 0) { close(s->fd); s->fd = hi; }
  }
  fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
  fcntl(s->fd, F_SETFD, FD_CLOEXEC);
  struct fuse_custom_io io = { .read = io_read, .writev = io_writev };
  fuse_session_custom_io(s->se, &io, s->fd);
  s->mountpoint = strdup(mnt);

  napi_value resource, name;
  napi_create_object(env, &resource);
  napi_create_reference(env, resource, 1, &s->resource);
  napi_create_string_utf8(env, "homefs:fuse", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, resource, name, &s->actx);

  uv_loop_t *loop; napi_get_uv_event_loop(env, &loop);
  s->poll = malloc(sizeof(uv_poll_t));
  uv_poll_init(loop, s->poll, s->fd);
  s->poll->data = s;
  uv_poll_start(s->poll, UV_READABLE, on_poll);
  s->idle = hf_idlepoll_start(s->settings.idle_poll_ns);
  if (s->spin_ns) {
    s->prep = malloc(sizeof(uv_prepare_t));
    uv_prepare_init(loop, s->prep);
    s->prep->data = s;
    uv_prepare_start(s->prep, on_prepare);
    uv_unref((uv_handle_t *)s->prep);
  }
  s->state = S_MOUNTED;
  sessions[slot] = s;

  static uint64_t next_id;
  s->id = ++next_id;
  napi_value handle;
  napi_create_external(env, (void *)(uintptr_t)s->id, NULL, NULL, &handle);
  return handle;
}

hf_session *hf_get_session(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  uint64_t id = (uint64_t)(uintptr_t)p;
  for (int i = 0; i < MAX_SESSIONS; i++) if (sessions[i] && sessions[i]->id == id) return sessions[i];
  return NULL;  /* already unmounted */
}

/* unmount(session, exiting) */
napi_value hf_unmount(napi_env env, napi_callback_info info) {
  size_t argc = 2; napi_value argv[2];
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  hf_session *s = hf_get_session(env, argv[0]);
  if (!s) return NULL;
  bool exiting = false; napi_get_value_bool(env, argv[1], &exiting);
  hf_session_teardown(s, "unmount", 0, exiting);
  if (s->state == S_CLOSED && !exiting) free(s);
  return NULL;
}

void hf_unmount_all_at_exit(void) {
  for (int i = 0; i < MAX_SESSIONS; i++) if (sessions[i]) hf_session_teardown(sessions[i], "exit", 0, 1);
}

/* invalInode(session, ino, off, len) -> 0 | -errno */
napi_value hf_inval_inode(napi_env env, napi_callback_info info) {
  size_t argc = 4; napi_value argv[4]; napi_value r;
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  hf_session *s = hf_get_session(env, argv[0]);
  int res = -ENOTCONN;
  if (s && s->state == S_MOUNTED) {
    double ino = 0, off = 0, len = 0;
    napi_get_value_double(env, argv[1], &ino); napi_get_value_double(env, argv[2], &off);
    napi_get_value_double(env, argv[3], &len);
    res = fuse_lowlevel_notify_inval_inode(s->se, (fuse_ino_t)ino, (off_t)off, (off_t)len);
  }
  napi_create_int32(env, res, &r); return r;
}

/* notifyStore(session, ino, off, Uint8Array) -> 0 | -errno: the bytes go into the kernel's page cache of ino. */
napi_value hf_notify_store(napi_env env, napi_callback_info info) {
  size_t argc = 4; napi_value argv[4]; napi_value r;
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  hf_session *s = hf_get_session(env, argv[0]);
  int res = -ENOTCONN;
  napi_typedarray_type t; size_t len = 0; void *data = NULL; napi_value ab; size_t boff;
  if (napi_get_typedarray_info(env, argv[3], &t, &len, &data, &ab, &boff) != napi_ok || t != napi_uint8_array) {
    res = -EINVAL;
  } else if (s && s->state == S_MOUNTED) {
    double ino = 0, off = 0;
    napi_get_value_double(env, argv[1], &ino); napi_get_value_double(env, argv[2], &off);
    struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);
    bv.buf[0].mem = data;
    res = fuse_lowlevel_notify_store(s->se, (fuse_ino_t)ino, (off_t)off, &bv, 0);
  }
  napi_create_int32(env, res, &r); return r;
}

/* invalEntry(session, parent, name) -> 0 | -errno */
napi_value hf_inval_entry(napi_env env, napi_callback_info info) {
  size_t argc = 3; napi_value argv[3]; napi_value r;
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  hf_session *s = hf_get_session(env, argv[0]);
  int res = -ENOTCONN;
  char name[1024]; size_t n = 0;
  if (s && s->state == S_MOUNTED && napi_get_value_string_utf8(env, argv[2], name, sizeof(name), &n) == napi_ok) {
    double parent = 0; napi_get_value_double(env, argv[1], &parent);
    res = fuse_lowlevel_notify_inval_entry(s->se, (fuse_ino_t)parent, name, n);
  }
  napi_create_int32(env, res, &r); return r;
}

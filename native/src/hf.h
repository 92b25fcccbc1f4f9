/*
 * homefs FUSE binding: shared declarations.
 *
 * The addon runs a libfuse3 low-level session on Node's main thread: the /dev/fuse fd is non-blocking and
 * watched by a uv_poll_t on the default loop; on readiness we drain it (fuse_session_receive_buf /
 * fuse_session_process_buf) and every op calls its JS handler synchronously with an opaque request handle.
 * The handler answers through the reply functions, at once or later (the one exception: getxattr and
 * listxattr of an inode JS marked as having no xattrs are answered here, noxattr.c). No thread ever
 * touches JS or libfuse state except the main thread, so there are no locks here.
 *
 * Request handles are napi externals whose pointer value encodes (generation << 32 | slot index) into the
 * slot table (slots.c); nothing is ever dereferenced through them, so no finalizers are needed, a second
 * reply is detected (generation mismatch) and replies that arrive after an unmount are dropped silently.
 */
#ifndef HF_H
#define HF_H

#include <fuse_lowlevel.h>
#include <node_api.h>
#include <uv.h>
#include <stdint.h>

enum hf_op {
  OP_LOOKUP, OP_FORGET, OP_GETATTR, OP_SETATTR, OP_READLINK, OP_MKNOD, OP_MKDIR, OP_UNLINK, OP_RMDIR,
  OP_SYMLINK, OP_RENAME, OP_LINK, OP_OPEN, OP_READ, OP_WRITE, OP_FLUSH, OP_RELEASE, OP_FSYNC, OP_OPENDIR,
  OP_READDIR, OP_READDIRPLUS, OP_RELEASEDIR, OP_FSYNCDIR, OP_STATFS, OP_SETXATTR, OP_GETXATTR,
  OP_LISTXATTR, OP_REMOVEXATTR, OP_ACCESS, OP_CREATE, OP_FALLOCATE, OP_LSEEK, OP_COPY_FILE_RANGE,
  OP_INTERRUPT, OP_INIT, OP_DESTROY, OP_TURN_END, OP_COUNT
};
extern const char *const hf_op_names[OP_COUNT];

enum hf_state { S_MOUNTED, S_CLOSING, S_CLOSED };

/* Mount-time settings passed from JS as numbers. */
struct hf_settings {
  int writeback_cache;
  unsigned max_write;  /* 0 = libfuse default (1 MiB) */
  uint64_t idle_poll_ns; /* idle pollers' window after the last answered request (idlepoll.c), 0 = none */
  int killpriv_v2;     /* offer FUSE_HANDLE_KILLPRIV_V2 (the handlers clear suid/sgid when told: hf_session.kill) */
  int passthrough;     /* ask for FUSE passthrough (passthrough.c); the writeback cache is then dropped */
};

typedef struct hf_idlepoll hf_idlepoll;

typedef struct hf_session {
  napi_env env;
  struct fuse_session *se;
  struct fuse_lowlevel_ops llops;
  struct hf_settings settings;
  uv_poll_t *poll;
  napi_ref ops_ref;            /* `this` for handler calls */
  napi_ref fn[OP_COUNT];       /* handler functions, NULL where absent */
  napi_ref on_unmounted;       /* JS callback(reason) for external unmounts */
  napi_ref resource;           /* async resource object for the callback scope */
  napi_async_context actx;
  struct fuse_buf buf;
  int fd;
  int commfd;                  /* fusermount3 auto_unmount socket, closed after a clean unmount */
  int depth;                   /* > 0 while libfuse is dispatching into JS */
  enum hf_state state;
  int unmount_pending;         /* unmount() was called from inside a handler */
  uint64_t init_unique;        /* unique of the FUSE_INIT request, to patch its reply */
  int init_patched;
  uint32_t init_flags;         /* the kernel's INIT request flags (what it supports) */
  uint32_t init_flags2;        /* ... and its flags2 (with FUSE_INIT_EXT) */
  int passthrough;             /* FUSE passthrough is granted in the INIT reply (passthrough.c) */
  int writeback_granted;       /* the writeback cache is granted */
  int init_done;               /* the INIT reply went out */
  int killpriv_v2;             /* FUSE_HANDLE_KILLPRIV_V2 was granted in the INIT reply */
  int kill;                    /* the request being dispatched asks to clear suid/sgid (KILLPRIV_V2 flags) */
  int zero_opendir;            /* no JS opendir handler and the kernel takes ENOSYS as success (see ll_init) */
  napi_ref pending_exc;        /* first exception thrown by a handler during a drain */
  uint64_t *intr;              /* interrupted request handles queued during process_buf */
  size_t nintr, capintr;
  char *mountpoint;
  uint64_t id;                 /* what the JS session handle carries */
  int rbuf;                    /* the pool buffer (wbuf.c) requests are read into, -1: `own` */
  char *own;                   /* the session's own receive buffer, when the pool has none to spare */
  int lend;                    /* pool buffer that the request being dispatched takes (a WRITE), else -1 */
  uint64_t *noxattr;           /* inodes known to have no xattrs (noxattr.c), NULL until the first mark */
  uv_prepare_t *prep;          /* the awake wait for the next request before the loop sleeps (session.c), or NULL */
  uint64_t spin_ns;            /* how long that wait may last, 0 = never */
  int answered;                /* this loop turn drained a request: the next prepare waits awake */
  int spin_skip;               /* turns left in which the awake wait is skipped (another task used the CPU) */
  hf_idlepoll *idle;           /* the idle pollers (idlepoll.c), or NULL */
} hf_session;

/* A spin-wait hint to the CPU (and to a hypervisor's pause-loop detection). */
static inline void hf_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* idlepoll.c: threads that keep the other CPUs from halting while requests flow (window 0 or one CPU: NULL). */
hf_idlepoll *hf_idlepoll_start(uint64_t window_ns);
void hf_idlepoll_touch(hf_idlepoll *p);
void hf_idlepoll_stop(hf_idlepoll *p);

/* slots.c: the table of outstanding requests. */
typedef struct hf_slot {
  fuse_req_t req;              /* NULL once orphaned by an unmount */
  hf_session *s;
  uint32_t gen;
  uint8_t live;                /* 1 = waiting for a reply (req may be NULL if orphaned) */
  int wbuf;                    /* pool buffer holding this WRITE's payload until the reply, else -1 */
  napi_ref obj;                /* weak ref to the JS handle, only when an interrupt handler exists */
} hf_slot;

uint64_t hf_slot_new(fuse_req_t req, hf_session *s);
/* Returns the live slot for a handle, or NULL; *stale = 1 when the handle was already answered. */
hf_slot *hf_slot_get(uint64_t handle, int *stale);
void hf_slot_free(napi_env env, hf_slot *slot);
/* Answers every outstanding request of a session with errno (if it still has a connection) and orphans it. */
void hf_slots_orphan(napi_env env, hf_session *s, int errno_reply);

/* session.c */
napi_value hf_mount(napi_env env, napi_callback_info info);
napi_value hf_unmount(napi_env env, napi_callback_info info);
napi_value hf_inval_inode(napi_env env, napi_callback_info info);
napi_value hf_inval_entry(napi_env env, napi_callback_info info);
napi_value hf_notify_store(napi_env env, napi_callback_info info);
void hf_session_teardown(hf_session *s, const char *reason, int external, int exiting);
/* The mounted session a JS session handle names, or NULL (unmounted). */
hf_session *hf_get_session(napi_env env, napi_value v);
void hf_unmount_all_at_exit(void);

/* dispatch.c */
void hf_fill_llops(hf_session *s);
void hf_deliver_interrupts(hf_session *s);

/* wbuf.c: receive buffers lent to WRITE requests (their payload goes to JS as a view, not a copy). */
size_t hf_wbuf_size(void);
/* A free pool buffer, marked busy, or -1 (none to spare, or views are not possible here). */
int hf_wbuf_acquire(napi_env env);
char *hf_wbuf_mem(int i);
/* A Buffer viewing [p, p + n) of pool buffer i, or NULL (then copy). */
napi_value hf_wbuf_view(napi_env env, int i, const char *p, size_t n);
void hf_wbuf_count_copy(void);
/* Pool buffer i is free again; was_lent: it held a request's payload (a view was made of it). */
void hf_wbuf_release(int i, int was_lent);
napi_value hf_wbuf_stats(napi_env env, napi_callback_info info);

/* noxattr.c: the negative xattr cache. The request functions return 1 when they answered the request. */
int hf_noxattr_getxattr(hf_session *s, fuse_req_t req, uint64_t ino);
int hf_noxattr_listxattr(hf_session *s, fuse_req_t req, uint64_t ino, size_t size);
void hf_noxattr_free(hf_session *s);
napi_value hf_noxattr_mark(napi_env env, napi_callback_info info);
napi_value hf_noxattr_revoke(napi_env env, napi_callback_info info);
napi_value hf_noxattr_stats(napi_env env, napi_callback_info info);
napi_value hf_served_stats(napi_env env, napi_callback_info info);
napi_value hf_wait_ends(napi_env env, napi_callback_info info);
/* A JS object of counters: { names[i]: values[i] } (the stats functions' answers). */
napi_value hf_counts(napi_env env, const char *const *names, const uint64_t *values, int n);

/* reply.c: the reply functions exported to JS, plus the shared scratch array. */
extern double *hf_scratch;
extern size_t hf_scratch_len;
napi_value hf_set_scratch(napi_env env, napi_callback_info info);
napi_value hf_reply_err(napi_env env, napi_callback_info info);
napi_value hf_reply_none(napi_env env, napi_callback_info info);
napi_value hf_reply_entry(napi_env env, napi_callback_info info);
napi_value hf_reply_create(napi_env env, napi_callback_info info);
napi_value hf_reply_attr(napi_env env, napi_callback_info info);
napi_value hf_reply_readlink(napi_env env, napi_callback_info info);
napi_value hf_reply_open(napi_env env, napi_callback_info info);
napi_value hf_reply_write(napi_env env, napi_callback_info info);
napi_value hf_reply_buf(napi_env env, napi_callback_info info);
napi_value hf_reply_xattr_size(napi_env env, napi_callback_info info);
napi_value hf_reply_statfs(napi_env env, napi_callback_info info);
napi_value hf_reply_lseek(napi_env env, napi_callback_info info);
napi_value hf_reply_dir(napi_env env, napi_callback_info info);
napi_value hf_req_ctx(napi_env env, napi_callback_info info);

/* Scratch layout shared with src/fuse/native.ts (doubles). */
enum {
  SC_INO, SC_MODE, SC_NLINK, SC_UID, SC_GID, SC_RDEV, SC_SIZE, SC_BLOCKS, SC_BLKSIZE,
  SC_ATIME, SC_ATIME_NS, SC_MTIME, SC_MTIME_NS, SC_CTIME, SC_CTIME_NS,           /* attr: 0..14 */
  SC_NODEID, SC_GENERATION, SC_ATTR_TIMEOUT, SC_ENTRY_TIMEOUT,                    /* entry: 15..18 */
  SC_FH, SC_OPEN_FLAGS, SC_BACKING,                                                /* open: 19..21 */
  SC_SIZE_TOTAL
};
#define HF_DIR_STRIDE 3       /* readdir entries: ino, mode, off */
#define HF_DIRPLUS_STRIDE 20  /* readdirplus entries: attr 0..14, nodeid, generation, attrTimeout, entryTimeout, off */

static inline uint64_t U(double d) { return (d > 0 && d < 18446744073709551616.0) ? (uint64_t)d : 0; }
static inline int64_t I(double d) { return __builtin_isfinite(d) ? (int64_t)d : 0; }

/* passthrough.c: FUSE passthrough (backing files, the open/create replies that name one). */
uint32_t hf_passthrough_flags2(void);
int hf_send_open_passthrough(fuse_req_t req, const double *x);
int hf_send_create_passthrough(fuse_req_t req, const double *x);
napi_value hf_backing_open(napi_env env, napi_callback_info info);
napi_value hf_backing_close(napi_env env, napi_callback_info info);
napi_value hf_caps(napi_env env, napi_callback_info info);

#define HF_CHECK(env, call) do { if ((call) != napi_ok) return NULL; } while (0)

#endif

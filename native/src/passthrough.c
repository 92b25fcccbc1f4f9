/*
 * FUSE passthrough (kernel 6.9+, protocol 7.40): an open file whose bytes are all in a local file is
 * given that file as its backing file, and the kernel then reads, writes and mmaps it without asking us.
 *
 * - INIT (session.c): with settings.passthrough, and the kernel offering FUSE_PASSTHROUGH in flags2,
 *   ll_init drops the writeback cache (the kernel refuses passthrough beside it) and the INIT reply is
 *   patched to grant FUSE_PASSTHROUGH with max_stack_depth 1 (backing files on a plain filesystem).
 *   libfuse 3.14 knows none of this: the fields are defined here.
 * - backingOpen(session, fd) registers a file as a backing file (FUSE_DEV_IOC_BACKING_OPEN, needs
 *   CAP_SYS_ADMIN) and returns its id; backingClose(session, id) drops the id. The kernel allows one
 *   backing file per inode at a time, so JS keeps one id per inode while it has passthrough opens.
 * - replyOpen / replyCreate with scratch[SC_BACKING] > 0 send the open reply with FOPEN_PASSTHROUGH and
 *   that id, built here (libfuse 3.14's fuse_file_info has no backing id). The kernel refuses
 *   FOPEN_KEEP_CACHE beside it, so only direct_io / noflush of the JS flags are kept.
 */
#include "hf.h"
#include <linux/fuse.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/ioctl.h>

#ifndef FUSE_PASSTHROUGH
#define FUSE_PASSTHROUGH (1ULL << 37)
#endif
#ifndef FOPEN_PASSTHROUGH
#define FOPEN_PASSTHROUGH (1 << 7)
#endif
struct hf_backing_map { int32_t fd; uint32_t flags; uint64_t padding; };
#define HF_DEV_IOC_BACKING_OPEN _IOW(229, 1, struct hf_backing_map)
#define HF_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)
/* fuse_open_out as of protocol 7.40 (libfuse 3.14's header calls backing_id `padding`). */
struct hf_open_out { uint64_t fh; uint32_t open_flags; int32_t backing_id; };

uint32_t hf_passthrough_flags2(void) { return (uint32_t)(FUSE_PASSTHROUGH >> 32); }

/* backingOpen(session, fd) -> id (> 0) | -errno */
napi_value hf_backing_open(napi_env env, napi_callback_info info) {
  size_t argc = 2; napi_value argv[2], r;
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  hf_session *s = hf_get_session(env, argv[0]);
  int32_t fd = -1; napi_get_value_int32(env, argv[1], &fd);
  int res = -ENOTCONN;
  if (s && s->state == S_MOUNTED && s->fd >= 0) {
    if (!s->passthrough) res = -EPERM;
    else {
      struct hf_backing_map m = { .fd = fd, .flags = 0, .padding = 0 };
      int id = ioctl(s->fd, HF_DEV_IOC_BACKING_OPEN, &m);
      res = id < 0 ? -errno : id;
    }
  }
  napi_create_int32(env, res, &r); return r;
}

/* backingClose(session, id) -> 0 | -errno */
napi_value hf_backing_close(napi_env env, napi_callback_info info) {
  size_t argc = 2; napi_value argv[2], r;
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  hf_session *s = hf_get_session(env, argv[0]);
  uint32_t id = 0; napi_get_value_uint32(env, argv[1], &id);
  int res = -ENOTCONN;
  if (s && s->state == S_MOUNTED && s->fd >= 0) res = ioctl(s->fd, HF_DEV_IOC_BACKING_CLOSE, &id) < 0 ? -errno : 0;
  napi_create_int32(env, res, &r); return r;
}

/* caps(session) -> { passthrough, writebackCache } as granted at INIT (both false before it). */
napi_value hf_caps(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1], o, v;
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  hf_session *s = hf_get_session(env, argv[0]);
  napi_create_object(env, &o);
  napi_get_boolean(env, s && s->passthrough, &v); napi_set_named_property(env, o, "passthrough", v);
  napi_get_boolean(env, s && s->writeback_granted, &v); napi_set_named_property(env, o, "writebackCache", v);
  napi_get_boolean(env, s && s->init_done, &v); napi_set_named_property(env, o, "initialized", v);
  return o;
}

static void open_out(struct hf_open_out *o, const double *x) {
  unsigned f = (unsigned)U(x[SC_OPEN_FLAGS]);
  memset(o, 0, sizeof(*o));
  o->fh = U(x[SC_FH]);
  o->open_flags = FOPEN_PASSTHROUGH | ((f & 2) ? FOPEN_DIRECT_IO : 0) | ((f & 8) ? FOPEN_NOFLUSH : 0);
  o->backing_id = (int32_t)U(x[SC_BACKING]);
}

static void timeout(double t, uint64_t *sec, uint32_t *nsec) {
  if (!isfinite(t) || t <= 0) { *sec = 0; *nsec = 0; return; }
  if (t > 1e18) t = 1e18;
  *sec = (uint64_t)t;
  *nsec = (uint32_t)((t - (double)*sec) * 1e9);
}

/* Sends the open reply of a passthrough open; 0 or the send's -errno (-ENOENT: the open was interrupted). */
int hf_send_open_passthrough(fuse_req_t req, const double *x) {
  struct hf_open_out o; open_out(&o, x);
  return fuse_reply_buf(req, (const char *)&o, sizeof(o));
}

/* Sends the create reply (entry + open) of a passthrough create; 0 or the send's -errno. */
int hf_send_create_passthrough(fuse_req_t req, const double *x) {
  struct { struct fuse_entry_out e; struct hf_open_out o; } r;
  _Static_assert(sizeof(r) == sizeof(struct fuse_entry_out) + sizeof(struct hf_open_out), "no padding in the create reply");
  memset(&r, 0, sizeof(r));
  r.e.nodeid = (uint64_t)U(x[SC_NODEID]); r.e.generation = (uint64_t)U(x[SC_GENERATION]);
  timeout(x[SC_ENTRY_TIMEOUT], &r.e.entry_valid, &r.e.entry_valid_nsec);
  timeout(x[SC_ATTR_TIMEOUT], &r.e.attr_valid, &r.e.attr_valid_nsec);
  struct fuse_attr *a = &r.e.attr;
  a->ino = (uint64_t)U(x[SC_INO]); a->mode = (uint32_t)U(x[SC_MODE]); a->nlink = (uint32_t)U(x[SC_NLINK]);
  a->uid = (uint32_t)U(x[SC_UID]); a->gid = (uint32_t)U(x[SC_GID]); a->rdev = (uint32_t)U(x[SC_RDEV]);
  a->size = (uint64_t)U(x[SC_SIZE]); a->blocks = (uint64_t)U(x[SC_BLOCKS]); a->blksize = (uint32_t)U(x[SC_BLKSIZE]);
  a->atime = (uint64_t)I(x[SC_ATIME]); a->atimensec = (uint32_t)U(x[SC_ATIME_NS]);
  a->mtime = (uint64_t)I(x[SC_MTIME]); a->mtimensec = (uint32_t)U(x[SC_MTIME_NS]);
  a->ctime = (uint64_t)I(x[SC_CTIME]); a->ctimensec = (uint32_t)U(x[SC_CTIME_NS]);
  open_out(&r.o, x);
  return fuse_reply_buf(req, (const char *)&r, sizeof(r));
}

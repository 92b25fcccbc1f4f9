/*
 * libfuse low-level ops -> JS handlers. Each op converts its arguments to JS values and calls the handler
 * synchronously (we are inside fuse_session_process_buf on the main thread, in a handle scope and a
 * callback scope opened by session.c). A handler that throws gets its request answered with EIO; the first
 * such exception is re-raised as an uncaught exception after the drain, so a bug crashes loudly (and the
 * process's exit hooks unmount) instead of leaving a request unanswered.
 */
#include "hf.h"
#include <linux/fuse.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>

const char *const hf_op_names[OP_COUNT] = {
  "lookup", "forget", "getattr", "setattr", "readlink", "mknod", "mkdir", "unlink", "rmdir",
  "symlink", "rename", "link", "open", "read", "write", "flush", "release", "fsync", "opendir",
  "readdir", "readdirplus", "releasedir", "fsyncdir", "statfs", "setxattr", "getxattr",
  "listxattr", "removexattr", "access", "create", "fallocate", "lseek", "copyFileRange",
  "interrupt", "init", "destroy", "turnEnd",
};

static hf_session *S(fuse_req_t req) { return (hf_session *)fuse_req_userdata(req); }

static napi_value num(napi_env env, double v) { napi_value r; napi_create_double(env, v, &r); return r; }
static napi_value u64(napi_env env, uint64_t v) { return num(env, (double)v); }
static napi_value str(napi_env env, const char *s) {
  napi_value r; napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &r); return r;
}
static napi_value boolean(napi_env env, int v) { napi_value r; napi_get_boolean(env, v != 0, &r); return r; }
static napi_value undef(napi_env env) { napi_value r; napi_get_undefined(env, &r); return r; }
static napi_value copy_buf(napi_env env, const void *p, size_t n) {
  napi_value r; void *d; napi_create_buffer_copy(env, n, p, &d, &r); return r;
}

static void record_exception(hf_session *s) {
  napi_value exc;
  if (napi_get_and_clear_last_exception(s->env, &exc) != napi_ok) return;
  if (!s->pending_exc) napi_create_reference(s->env, exc, 1, &s->pending_exc);
}

static void on_interrupt(fuse_req_t req, void *data) {
  hf_session *s = S(req);
  if (s->nintr == s->capintr) {
    size_t cap = s->capintr ? s->capintr * 2 : 16;
    uint64_t *n = realloc(s->intr, cap * sizeof(uint64_t));
    if (!n) return;
    s->intr = n; s->capintr = cap;
  }
  s->intr[s->nintr++] = (uint64_t)(uintptr_t)data;
}

/* Calls handler `op` with argv[1..argc-1]; argv[0] is filled with a fresh request handle when req != NULL. */
static void call(hf_session *s, enum hf_op op, fuse_req_t req, size_t argc, napi_value *argv) {
  napi_env env = s->env;
  napi_value fn, self, result;
  uint64_t h = 0;
  if (req) {
    int stale;
    h = hf_slot_new(req, s);
    hf_slot *sl = hf_slot_get(h, &stale);
    sl->wbuf = s->lend;  /* a WRITE's payload buffer is the request's until it is answered */
    s->lend = -1;
    napi_create_external(env, (void *)(uintptr_t)h, NULL, NULL, &argv[0]);
    if (s->fn[OP_INTERRUPT]) {
      napi_create_reference(env, argv[0], 0, &sl->obj);
      fuse_req_interrupt_func(req, on_interrupt, (void *)(uintptr_t)h);
    }
  }
  napi_get_reference_value(env, s->fn[op], &fn);
  napi_get_reference_value(env, s->ops_ref, &self);
  napi_status st = napi_call_function(env, self, fn, argc, argv, &result);
  if (st != napi_ok) {
    record_exception(s);
    if (req) {
      int stale;
      hf_slot *sl = hf_slot_get(h, &stale);
      if (sl && sl->req) {
        /* The handler may have started I/O from the payload before it threw: its buffer is never reused
         * (the process is about to crash with the exception anyway). */
        sl->wbuf = -1;
        fuse_reply_err(sl->req, EIO);
        hf_slot_free(env, sl);
      }
    }
  }
}

/* Opens a handle scope per request so a long drain does not pile up handles. */
#define BEGIN(n) hf_session *s = S(req); napi_env env = s->env; napi_handle_scope hs; \
  napi_open_handle_scope(env, &hs); napi_value a[n]
#define END(op, n) call(s, op, req, n, a); napi_close_handle_scope(env, hs)

/* Names and symlink targets cross into JS as UTF-8 strings; bytes that are not valid UTF-8 would be
 * replaced silently (a file renamed behind the user's back). Such a name cannot exist here, and one that
 * would be created is refused with EILSEQ instead. */
static int utf8_ok(const char *p) {
  const unsigned char *s = (const unsigned char *)p;
  while (*s) {
    unsigned c = *s, n;
    uint32_t cp;
    if (c < 0x80) { s++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; }
    else return 0;
    for (unsigned i = 1; i <= n; i++) {
      if ((s[i] & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff))) return 0;
    s += n + 1;
  }
  return 1;
}
#define NAME_OK(nm, err) do { if (!utf8_ok(nm)) { fuse_reply_err(req, err); return; } } while (0)

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  NAME_OK(name, ENOENT);
  BEGIN(3); a[1] = u64(env, parent); a[2] = str(env, name); END(OP_LOOKUP, 3);
}

static void forget_one(hf_session *s, uint64_t ino, uint64_t n) {
  napi_value a[2] = { u64(s->env, ino), u64(s->env, n) };
  call(s, OP_FORGET, NULL, 2, a);
}
static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  hf_session *s = S(req); napi_handle_scope hs; napi_open_handle_scope(s->env, &hs);
  forget_one(s, ino, nlookup);
  napi_close_handle_scope(s->env, hs);
  fuse_reply_none(req);
}
static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
  hf_session *s = S(req);
  for (size_t i = 0; i < count; i++) {
    napi_handle_scope hs; napi_open_handle_scope(s->env, &hs);
    forget_one(s, forgets[i].ino, forgets[i].nlookup);
    napi_close_handle_scope(s->env, hs);
  }
  fuse_reply_none(req);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(3); a[1] = u64(env, ino); a[2] = fi ? u64(env, fi->fh) : undef(env); END(OP_GETATTR, 3);
}

static napi_value timespec_obj(napi_env env, const struct timespec *t) {
  napi_value o; napi_create_object(env, &o);
  napi_set_named_property(env, o, "sec", num(env, (double)t->tv_sec));
  napi_set_named_property(env, o, "nsec", num(env, (double)t->tv_nsec));
  return o;
}
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st, int set, struct fuse_file_info *fi) {
  BEGIN(4);
  napi_value o; napi_create_object(env, &o);
  if (set & FUSE_SET_ATTR_MODE) napi_set_named_property(env, o, "mode", num(env, st->st_mode));
  if (set & FUSE_SET_ATTR_UID) napi_set_named_property(env, o, "uid", num(env, st->st_uid));
  if (set & FUSE_SET_ATTR_GID) napi_set_named_property(env, o, "gid", num(env, st->st_gid));
  if (set & FUSE_SET_ATTR_SIZE) napi_set_named_property(env, o, "size", num(env, (double)st->st_size));
  if (set & FUSE_SET_ATTR_ATIME_NOW) napi_set_named_property(env, o, "atime", str(env, "now"));
  else if (set & FUSE_SET_ATTR_ATIME) napi_set_named_property(env, o, "atime", timespec_obj(env, &st->st_atim));
  if (set & FUSE_SET_ATTR_MTIME_NOW) napi_set_named_property(env, o, "mtime", str(env, "now"));
  else if (set & FUSE_SET_ATTR_MTIME) napi_set_named_property(env, o, "mtime", timespec_obj(env, &st->st_mtim));
  if (set & FUSE_SET_ATTR_CTIME) napi_set_named_property(env, o, "ctime", timespec_obj(env, &st->st_ctim));
  if (s->kill) napi_set_named_property(env, o, "killSuidgid", boolean(env, 1));
  a[1] = u64(env, ino); a[2] = o; a[3] = fi ? u64(env, fi->fh) : undef(env);
  END(OP_SETATTR, 4);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino) {
  BEGIN(2); a[1] = u64(env, ino); END(OP_READLINK, 2);
}
static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
  NAME_OK(name, EILSEQ);
  BEGIN(5); a[1] = u64(env, parent); a[2] = str(env, name); a[3] = num(env, mode); a[4] = num(env, (double)rdev);
  END(OP_MKNOD, 5);
}
static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  NAME_OK(name, EILSEQ);
  BEGIN(4); a[1] = u64(env, parent); a[2] = str(env, name); a[3] = num(env, mode); END(OP_MKDIR, 4);
}
static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  NAME_OK(name, ENOENT);
  BEGIN(3); a[1] = u64(env, parent); a[2] = str(env, name); END(OP_UNLINK, 3);
}
static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
  NAME_OK(name, ENOENT);
  BEGIN(3); a[1] = u64(env, parent); a[2] = str(env, name); END(OP_RMDIR, 3);
}
static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
  NAME_OK(name, EILSEQ);
  NAME_OK(link, EILSEQ);
  BEGIN(4); a[1] = str(env, link); a[2] = u64(env, parent); a[3] = str(env, name); END(OP_SYMLINK, 4);
}
static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags) {
  NAME_OK(name, ENOENT);
  NAME_OK(newname, EILSEQ);
  BEGIN(6); a[1] = u64(env, parent); a[2] = str(env, name); a[3] = u64(env, newparent);
  a[4] = str(env, newname); a[5] = num(env, flags); END(OP_RENAME, 6);
}
static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
  NAME_OK(newname, EILSEQ);
  BEGIN(4); a[1] = u64(env, ino); a[2] = u64(env, newparent); a[3] = str(env, newname); END(OP_LINK, 4);
}
static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(4); a[1] = u64(env, ino); a[2] = num(env, fi->flags); a[3] = boolean(env, s->kill); END(OP_OPEN, 4);
}
static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  BEGIN(5); a[1] = u64(env, ino); a[2] = num(env, (double)size); a[3] = num(env, (double)off);
  a[4] = u64(env, fi->fh); END(OP_READ, 5);
}
/*
 * A WRITE's payload: a view of the pool buffer the request was read into, which the request then holds
 * until it is answered (the session reads the next request into another buffer); a copy when the request
 * is in the session's own buffer (the pool had none to spare).
 */
static napi_value write_payload(hf_session *s, const char *buf, size_t size) {
  if (s->rbuf >= 0) {
    napi_value v = hf_wbuf_view(s->env, s->rbuf, buf, size);
    if (v) {
      s->lend = s->rbuf;
      s->rbuf = -1;
      return v;
    }
  }
  hf_wbuf_count_copy();
  return copy_buf(s->env, buf, size);
}
static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi) {
  BEGIN(7); a[1] = u64(env, ino); a[2] = write_payload(s, buf, size); a[3] = num(env, (double)off);
  a[4] = u64(env, fi->fh); a[5] = num(env, fi->flags); a[6] = boolean(env, s->kill); END(OP_WRITE, 7);
}
static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(3); a[1] = u64(env, ino); a[2] = u64(env, fi->fh); END(OP_FLUSH, 3);
}
static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(4); a[1] = u64(env, ino); a[2] = u64(env, fi->fh); a[3] = num(env, fi->flags); END(OP_RELEASE, 4);
}
static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  BEGIN(4); a[1] = u64(env, ino); a[2] = boolean(env, datasync); a[3] = u64(env, fi->fh); END(OP_FSYNC, 4);
}
static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(3); a[1] = u64(env, ino); a[2] = num(env, fi->flags); END(OP_OPENDIR, 3);
}
/*
 * Without a JS opendir handler: where the kernel supports zero-message opendir, ENOSYS tells it to stop sending
 * opendir and releasedir altogether (it then keeps each directory's listing in its cache, invalidated when the
 * directory changes); elsewhere the same flags are given per open. readdir then arrives with fh 0.
 */
static void ll_opendir_default(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)ino;
  if (S(req)->zero_opendir) { fuse_reply_err(req, ENOSYS); return; }
  fi->fh = 0; fi->keep_cache = 1; fi->cache_readdir = 1;
  fuse_reply_open(req, fi);
}
static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  BEGIN(5); a[1] = u64(env, ino); a[2] = num(env, (double)size); a[3] = num(env, (double)off);
  a[4] = u64(env, fi->fh); END(OP_READDIR, 5);
}
static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  BEGIN(5); a[1] = u64(env, ino); a[2] = num(env, (double)size); a[3] = num(env, (double)off);
  a[4] = u64(env, fi->fh); END(OP_READDIRPLUS, 5);
}
static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  BEGIN(3); a[1] = u64(env, ino); a[2] = u64(env, fi->fh); END(OP_RELEASEDIR, 3);
}
static void ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  BEGIN(4); a[1] = u64(env, ino); a[2] = boolean(env, datasync); a[3] = u64(env, fi->fh); END(OP_FSYNCDIR, 4);
}
static void ll_statfs(fuse_req_t req, fuse_ino_t ino) {
  BEGIN(2); a[1] = u64(env, ino); END(OP_STATFS, 2);
}
static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
                        int flags) {
  BEGIN(5); a[1] = u64(env, ino); a[2] = str(env, name); a[3] = copy_buf(env, value, size);
  a[4] = num(env, flags); END(OP_SETXATTR, 5);
}
static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size) {
  if (hf_noxattr_getxattr(S(req), req, ino)) return;
  BEGIN(4); a[1] = u64(env, ino); a[2] = str(env, name); a[3] = num(env, (double)size); END(OP_GETXATTR, 4);
}
static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  if (hf_noxattr_listxattr(S(req), req, ino, size)) return;
  BEGIN(3); a[1] = u64(env, ino); a[2] = num(env, (double)size); END(OP_LISTXATTR, 3);
}
static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name) {
  BEGIN(3); a[1] = u64(env, ino); a[2] = str(env, name); END(OP_REMOVEXATTR, 3);
}
static void ll_access(fuse_req_t req, fuse_ino_t ino, int mask) {
  BEGIN(3); a[1] = u64(env, ino); a[2] = num(env, mask); END(OP_ACCESS, 3);
}
static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi) {
  NAME_OK(name, EILSEQ);
  BEGIN(5); a[1] = u64(env, parent); a[2] = str(env, name); a[3] = num(env, mode); a[4] = num(env, fi->flags);
  END(OP_CREATE, 5);
}
static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                         struct fuse_file_info *fi) {
  BEGIN(6); a[1] = u64(env, ino); a[2] = num(env, mode); a[3] = num(env, (double)offset);
  a[4] = num(env, (double)length); a[5] = u64(env, fi->fh); END(OP_FALLOCATE, 6);
}
static void ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi) {
  BEGIN(5); a[1] = u64(env, ino); a[2] = num(env, (double)off); a[3] = num(env, whence); a[4] = u64(env, fi->fh);
  END(OP_LSEEK, 5);
}
static void ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
                               fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len,
                               int flags) {
  BEGIN(9); a[1] = u64(env, ino_in); a[2] = num(env, (double)off_in); a[3] = u64(env, fi_in->fh);
  a[4] = u64(env, ino_out); a[5] = num(env, (double)off_out); a[6] = u64(env, fi_out->fh);
  a[7] = num(env, (double)len); a[8] = num(env, flags); END(OP_COPY_FILE_RANGE, 9);
}

static void ll_init(void *userdata, struct fuse_conn_info *conn) {
  hf_session *s = userdata;
  /* Requests are served from one thread with a reused buffer: splice only adds pipe copies. */
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  /* O_TRUNC arrives as setattr(size=0), never hidden in open flags. */
  conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
  if (s->fn[OP_READDIRPLUS] && (conn->capable & FUSE_CAP_READDIRPLUS)) conn->want |= FUSE_CAP_READDIRPLUS;
  if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
  s->zero_opendir = !s->fn[OP_OPENDIR] && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
  /* Passthrough, when asked and offered, replaces the writeback cache (passthrough.c). */
  s->passthrough = s->settings.passthrough && (s->init_flags & FUSE_INIT_EXT) &&
                   (s->init_flags2 & hf_passthrough_flags2());
  if (s->passthrough) conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  else if (s->settings.writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
    conn->want |= FUSE_CAP_WRITEBACK_CACHE;
  if (s->settings.max_write && s->settings.max_write < conn->max_write) conn->max_write = s->settings.max_write;
  if (s->fn[OP_INIT]) {
    napi_handle_scope hs; napi_open_handle_scope(s->env, &hs);
    call(s, OP_INIT, NULL, 0, NULL);
    napi_close_handle_scope(s->env, hs);
  }
}

static void ll_destroy(void *userdata) {
  hf_session *s = userdata;
  if (!s->fn[OP_DESTROY]) return;
  napi_handle_scope hs; napi_open_handle_scope(s->env, &hs);
  call(s, OP_DESTROY, NULL, 0, NULL);
  napi_close_handle_scope(s->env, hs);
}

/* Interrupts are queued by on_interrupt (called inside libfuse with its locks held) and delivered here. */
void hf_deliver_interrupts(hf_session *s) {
  for (size_t i = 0; i < s->nintr; i++) {
    int stale;
    hf_slot *sl = hf_slot_get(s->intr[i], &stale);
    if (!sl || !sl->req || !sl->obj || !s->fn[OP_INTERRUPT]) continue;
    napi_handle_scope hs; napi_open_handle_scope(s->env, &hs);
    napi_value reqobj, fn, self, result;
    napi_get_reference_value(s->env, sl->obj, &reqobj);
    if (reqobj) {
      napi_get_reference_value(s->env, s->fn[OP_INTERRUPT], &fn);
      napi_get_reference_value(s->env, s->ops_ref, &self);
      if (napi_call_function(s->env, self, fn, 1, &reqobj, &result) != napi_ok) record_exception(s);
    }
    napi_close_handle_scope(s->env, hs);
  }
  s->nintr = 0;
}

void hf_fill_llops(hf_session *s) {
  struct fuse_lowlevel_ops *o = &s->llops;
  memset(o, 0, sizeof(*o));
  o->init = ll_init;
  o->destroy = ll_destroy;
#define SET(op, field, fnc) if (s->fn[op]) o->field = fnc
  SET(OP_LOOKUP, lookup, ll_lookup);
  SET(OP_FORGET, forget, ll_forget);
  SET(OP_FORGET, forget_multi, ll_forget_multi);
  SET(OP_GETATTR, getattr, ll_getattr);
  SET(OP_SETATTR, setattr, ll_setattr);
  SET(OP_READLINK, readlink, ll_readlink);
  SET(OP_MKNOD, mknod, ll_mknod);
  SET(OP_MKDIR, mkdir, ll_mkdir);
  SET(OP_UNLINK, unlink, ll_unlink);
  SET(OP_RMDIR, rmdir, ll_rmdir);
  SET(OP_SYMLINK, symlink, ll_symlink);
  SET(OP_RENAME, rename, ll_rename);
  SET(OP_LINK, link, ll_link);
  SET(OP_OPEN, open, ll_open);
  SET(OP_READ, read, ll_read);
  SET(OP_WRITE, write, ll_write);
  SET(OP_FLUSH, flush, ll_flush);
  SET(OP_RELEASE, release, ll_release);
  SET(OP_FSYNC, fsync, ll_fsync);
  SET(OP_OPENDIR, opendir, ll_opendir);
  if (!s->fn[OP_OPENDIR]) o->opendir = ll_opendir_default;
  SET(OP_READDIR, readdir, ll_readdir);
  SET(OP_READDIRPLUS, readdirplus, ll_readdirplus);
  SET(OP_RELEASEDIR, releasedir, ll_releasedir);
  SET(OP_FSYNCDIR, fsyncdir, ll_fsyncdir);
  SET(OP_STATFS, statfs, ll_statfs);
  SET(OP_SETXATTR, setxattr, ll_setxattr);
  SET(OP_GETXATTR, getxattr, ll_getxattr);
  SET(OP_LISTXATTR, listxattr, ll_listxattr);
  SET(OP_REMOVEXATTR, removexattr, ll_removexattr);
  SET(OP_ACCESS, access, ll_access);
  SET(OP_CREATE, create, ll_create);
  SET(OP_FALLOCATE, fallocate, ll_fallocate);
  SET(OP_LSEEK, lseek, ll_lseek);
  SET(OP_COPY_FILE_RANGE, copy_file_range, ll_copy_file_range);
#undef SET
}

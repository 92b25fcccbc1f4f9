/*
 * Reply functions exported to JS. Fixed-size replies (entry, attr, open, create, statfs) read their fields
 * from a Float64Array shared with src/fuse/native.ts (layout in hf.h), because JS writes into a typed array
 * are far cheaper than N-API property reads. Every reply first resolves the request handle: a live handle
 * is answered and freed; a handle orphaned by an unmount is freed silently; a handle already answered
 * throws "FUSE request answered twice" (a bug in the caller).
 */
#include "hf.h"
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>

double *hf_scratch;
size_t hf_scratch_len;
static napi_ref scratch_ref;


napi_value hf_set_scratch(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1];
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  napi_typedarray_type t; size_t len; void *data; napi_value ab; size_t off;
  if (argc < 1 || napi_get_typedarray_info(env, argv[0], &t, &len, &data, &ab, &off) != napi_ok ||
      t != napi_float64_array || len < SC_SIZE_TOTAL) {
    napi_throw_type_error(env, NULL, "setScratch: expected a Float64Array");
    return NULL;
  }
  if (scratch_ref) napi_delete_reference(env, scratch_ref);
  napi_create_reference(env, argv[0], 1, &scratch_ref);
  hf_scratch = data; hf_scratch_len = len;
  return NULL;
}

/* Resolves argv[0] to a live fuse_req_t; NULL = nothing to do (orphan, or an exception is pending). */
static fuse_req_t take(napi_env env, napi_value v, hf_slot **out) {
  void *p;
  if (napi_get_value_external(env, v, &p) != napi_ok) {
    napi_throw_type_error(env, NULL, "not a FUSE request handle");
    return NULL;
  }
  int stale;
  hf_slot *sl = hf_slot_get((uint64_t)(uintptr_t)p, &stale);
  if (!sl) { napi_throw_error(env, "EALREADY", "FUSE request answered twice"); return NULL; }
  if (!sl->req) { hf_slot_free(env, sl); return NULL; }
  *out = sl;
  return sl->req;
}
static void done(napi_env env, hf_slot *sl) { hf_slot_free(env, sl); }
/* Frees the slot and returns the send's result (0 or -errno) to JS. */
static napi_value sent(napi_env env, hf_slot *sl, int res) {
  napi_value r; hf_slot_free(env, sl); napi_create_int32(env, res, &r); return r;
}

#define ARGS(n) size_t argc = n; napi_value argv[n]; \
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL)); \
  hf_slot *sl = NULL; fuse_req_t req = take(env, argv[0], &sl); if (!req) return NULL

static double arg_num(napi_env env, napi_value v) { double d = 0; napi_get_value_double(env, v, &d); return d; }

static void fill_stat(struct stat *st, const double *x) {
  memset(st, 0, sizeof(*st));
  st->st_ino = U(x[SC_INO]); st->st_mode = (mode_t)U(x[SC_MODE]); st->st_nlink = (nlink_t)U(x[SC_NLINK]);
  st->st_uid = (uid_t)U(x[SC_UID]); st->st_gid = (gid_t)U(x[SC_GID]); st->st_rdev = (dev_t)U(x[SC_RDEV]);
  st->st_size = (off_t)U(x[SC_SIZE]); st->st_blocks = (blkcnt_t)U(x[SC_BLOCKS]);
  st->st_blksize = (blksize_t)U(x[SC_BLKSIZE]);
  st->st_atim.tv_sec = I(x[SC_ATIME]); st->st_atim.tv_nsec = (long)U(x[SC_ATIME_NS]);
  st->st_mtim.tv_sec = I(x[SC_MTIME]); st->st_mtim.tv_nsec = (long)U(x[SC_MTIME_NS]);
  st->st_ctim.tv_sec = I(x[SC_CTIME]); st->st_ctim.tv_nsec = (long)U(x[SC_CTIME_NS]);
}
static double nonneg(double d) { return (isfinite(d) && d > 0) ? d : 0; }
static void fill_entry(struct fuse_entry_param *e, const double *x) {
  memset(e, 0, sizeof(*e));
  e->ino = U(x[SC_NODEID]); e->generation = U(x[SC_GENERATION]);
  e->attr_timeout = nonneg(x[SC_ATTR_TIMEOUT]); e->entry_timeout = nonneg(x[SC_ENTRY_TIMEOUT]);
  fill_stat(&e->attr, x);
}
static void fill_open(struct fuse_file_info *fi, const double *x) {
  memset(fi, 0, sizeof(*fi));
  unsigned f = (unsigned)U(x[SC_OPEN_FLAGS]);
  fi->fh = U(x[SC_FH]); fi->keep_cache = (f & 1) != 0; fi->direct_io = (f & 2) != 0; fi->nonseekable = (f & 4) != 0;
  fi->noflush = (f & 8) != 0; fi->cache_readdir = (f & 16) != 0;
}

napi_value hf_reply_err(napi_env env, napi_callback_info info) {
  ARGS(2);
  int e = (int)arg_num(env, argv[1]);
  fuse_reply_err(req, e < 0 ? -e : e);
  done(env, sl); return NULL;
}
napi_value hf_reply_none(napi_env env, napi_callback_info info) {
  ARGS(1); fuse_reply_none(req); done(env, sl); return NULL;
}
napi_value hf_reply_entry(napi_env env, napi_callback_info info) {
  ARGS(1); struct fuse_entry_param e; fill_entry(&e, hf_scratch);
  fuse_reply_entry(req, &e); done(env, sl); return NULL;
}
napi_value hf_reply_create(napi_env env, napi_callback_info info) {
  ARGS(1); struct fuse_entry_param e; struct fuse_file_info fi;
  if (hf_scratch[SC_BACKING] > 0) return sent(env, sl, hf_send_create_passthrough(req, hf_scratch));
  fill_entry(&e, hf_scratch); fill_open(&fi, hf_scratch);
  fuse_reply_create(req, &e, &fi); done(env, sl); return NULL;
}
napi_value hf_reply_attr(napi_env env, napi_callback_info info) {
  ARGS(1); struct stat st; fill_stat(&st, hf_scratch);
  fuse_reply_attr(req, &st, nonneg(hf_scratch[SC_ATTR_TIMEOUT])); done(env, sl); return NULL;
}
napi_value hf_reply_open(napi_env env, napi_callback_info info) {
  ARGS(1); struct fuse_file_info fi;
  if (hf_scratch[SC_BACKING] > 0) return sent(env, sl, hf_send_open_passthrough(req, hf_scratch));
  fill_open(&fi, hf_scratch);
  fuse_reply_open(req, &fi); done(env, sl); return NULL;
}
napi_value hf_reply_statfs(napi_env env, napi_callback_info info) {
  ARGS(1); struct statvfs v; memset(&v, 0, sizeof(v)); const double *x = hf_scratch;
  v.f_bsize = U(x[0]); v.f_frsize = U(x[1]); v.f_blocks = U(x[2]); v.f_bfree = U(x[3]); v.f_bavail = U(x[4]);
  v.f_files = U(x[5]); v.f_ffree = U(x[6]); v.f_favail = U(x[7]); v.f_namemax = U(x[8]);
  fuse_reply_statfs(req, &v); done(env, sl); return NULL;
}
napi_value hf_reply_readlink(napi_env env, napi_callback_info info) {
  ARGS(2); size_t n; char stackbuf[1024]; char *p = stackbuf;
  if (napi_get_value_string_utf8(env, argv[1], NULL, 0, &n) != napi_ok) {
    fuse_reply_err(req, EIO); done(env, sl); napi_throw_type_error(env, NULL, "readlink: target must be a string");
    return NULL;
  }
  if (n + 1 > sizeof(stackbuf)) p = malloc(n + 1);
  napi_get_value_string_utf8(env, argv[1], p, n + 1, &n);
  fuse_reply_readlink(req, p);
  if (p != stackbuf) free(p);
  done(env, sl); return NULL;
}
napi_value hf_reply_write(napi_env env, napi_callback_info info) {
  ARGS(2); fuse_reply_write(req, (size_t)U(arg_num(env, argv[1]))); done(env, sl); return NULL;
}
napi_value hf_reply_xattr_size(napi_env env, napi_callback_info info) {
  ARGS(2); fuse_reply_xattr(req, (size_t)U(arg_num(env, argv[1]))); done(env, sl); return NULL;
}
napi_value hf_reply_lseek(napi_env env, napi_callback_info info) {
  ARGS(2); fuse_reply_lseek(req, (off_t)I(arg_num(env, argv[1]))); done(env, sl); return NULL;
}
napi_value hf_reply_buf(napi_env env, napi_callback_info info) {
  ARGS(2); napi_typedarray_type t; size_t len; void *data; napi_value ab; size_t off;
  if (napi_get_typedarray_info(env, argv[1], &t, &len, &data, &ab, &off) != napi_ok || t != napi_uint8_array) {
    fuse_reply_err(req, EIO); done(env, sl); napi_throw_type_error(env, NULL, "buf: expected a Uint8Array");
    return NULL;
  }
  fuse_reply_buf(req, data, len); done(env, sl); return NULL;
}

/*
 * replyDir(req, size, count, names joined by '/', Float64Array nums, plus): packs up to `count` entries
 * (names cannot contain '/') until `size` bytes are used and returns how many were packed.
 */
napi_value hf_reply_dir(napi_env env, napi_callback_info info) {
  ARGS(6);
  size_t size = (size_t)U(arg_num(env, argv[1]));
  size_t count = (size_t)U(arg_num(env, argv[2]));
  bool plus = false; napi_get_value_bool(env, argv[5], &plus);
  size_t nlen;
  napi_typedarray_type t; size_t len; void *data; napi_value ab; size_t off;
  if (napi_get_value_string_utf8(env, argv[3], NULL, 0, &nlen) != napi_ok ||
      napi_get_typedarray_info(env, argv[4], &t, &len, &data, &ab, &off) != napi_ok || t != napi_float64_array ||
      len < count * (plus ? HF_DIRPLUS_STRIDE : HF_DIR_STRIDE)) {
    fuse_reply_err(req, EIO); done(env, sl); napi_throw_type_error(env, NULL, "dir: bad arguments");
    return NULL;
  }
  char *names = malloc(nlen + 1);
  char *out = malloc(size ? size : 1);
  napi_get_value_string_utf8(env, argv[3], names, nlen + 1, &nlen);
  const double *x = data;
  size_t used = 0, packed = 0;
  char *name = names;
  for (size_t i = 0; i < count; i++) {
    char *slash = strchr(name, '/');
    if (slash) *slash = 0;
    size_t need;
    if (plus) {
      const double *r = x + i * HF_DIRPLUS_STRIDE;
      struct fuse_entry_param e; fill_entry(&e, r);
      need = fuse_add_direntry_plus(req, out + used, size - used, name, &e, (off_t)I(r[19]));
    } else {
      const double *r = x + i * HF_DIR_STRIDE;
      struct stat st; memset(&st, 0, sizeof(st));
      st.st_ino = U(r[0]); st.st_mode = (mode_t)U(r[1]);
      need = fuse_add_direntry(req, out + used, size - used, name, &st, (off_t)I(r[2]));
    }
    if (need > size - used) break;
    used += need; packed++;
    if (!slash) break;
    name = slash + 1;
  }
  fuse_reply_buf(req, out, used);
  free(out); free(names);
  done(env, sl);
  napi_value r; napi_create_uint32(env, (uint32_t)packed, &r); return r;
}

napi_value hf_req_ctx(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1];
  HF_CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  void *p; int stale;
  if (napi_get_value_external(env, argv[0], &p) != napi_ok) {
    napi_throw_type_error(env, NULL, "not a FUSE request handle"); return NULL;
  }
  hf_slot *sl = hf_slot_get((uint64_t)(uintptr_t)p, &stale);
  if (!sl || !sl->req) { napi_throw_error(env, "EALREADY", "ctx: FUSE request already answered"); return NULL; }
  const struct fuse_ctx *c = fuse_req_ctx(sl->req);
  napi_value o, v; napi_create_object(env, &o);
  napi_create_uint32(env, c->uid, &v); napi_set_named_property(env, o, "uid", v);
  napi_create_uint32(env, c->gid, &v); napi_set_named_property(env, o, "gid", v);
  napi_create_uint32(env, (uint32_t)c->pid, &v); napi_set_named_property(env, o, "pid", v);
  napi_create_uint32(env, c->umask, &v); napi_set_named_property(env, o, "umask", v);
  return o;
}

/*
 * The binding's negative xattr cache: inodes JS has said have no extended attributes, so that getxattr
 * (ENODATA) and listxattr (an empty list) are answered here without entering JS. The kernel asks for
 * security.capability before every write and for POSIX ACLs on every create, and almost every file has no
 * xattrs: `tar x` sent ~2.6 getxattr per file to JS, each answered ENODATA.
 *
 * One table per session, allocated at the first mark: NOXATTR_SLOTS inode numbers, direct-mapped by a
 * multiplicative hash. A mark that lands on a slot held by another inode replaces it; the older inode
 * goes back to "unknown" and its requests go to JS again, which is always right. So the table is bounded
 * (512 KiB) and never needs an eviction policy. Zero marks an empty slot (FUSE never uses inode 0).
 *
 * JS owns correctness: it marks an inode only once its empty xattr set is committed, and revokes the mark
 * synchronously, before any reply that could reveal the change, whenever the inode may gain xattrs
 * (src/fs/noxattrs.ts). Everything here runs on the main thread, as all of the binding does.
 */
#include "hf.h"
#include <errno.h>
#include <stdlib.h>

#define NOXATTR_BITS 16
#define NOXATTR_SLOTS (1u << NOXATTR_BITS)

/* Requests answered here, by op, over every session of the process. */
static uint64_t answered_getxattr, answered_listxattr;

static uint32_t slot_of(uint64_t ino) {
  return (uint32_t)((ino * 0x9E3779B97F4A7C15ull) >> (64 - NOXATTR_BITS));
}

static int marked(hf_session *s, uint64_t ino) {
  return s->noxattr && ino != 0 && s->noxattr[slot_of(ino)] == ino;
}

int hf_noxattr_getxattr(hf_session *s, fuse_req_t req, uint64_t ino) {
  if (!marked(s, ino)) return 0;
  answered_getxattr++;
  fuse_reply_err(req, ENODATA);
  return 1;
}

int hf_noxattr_listxattr(hf_session *s, fuse_req_t req, uint64_t ino, size_t size) {
  if (!marked(s, ino)) return 0;
  answered_listxattr++;
  if (size == 0) fuse_reply_xattr(req, 0);
  else fuse_reply_buf(req, NULL, 0);
  return 1;
}

void hf_noxattr_free(hf_session *s) {
  free(s->noxattr);
  s->noxattr = NULL;
}

/* (session, ino): the session, or NULL when it is unmounted (then the call does nothing). */
static hf_session *args(napi_env env, napi_callback_info info, uint64_t *ino) {
  size_t argc = 2; napi_value argv[2]; double d = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_double(env, argv[1], &d) != napi_ok) {
    napi_throw_type_error(env, NULL, "expected (session, ino)");
    return NULL;
  }
  *ino = (d > 0 && d < 18446744073709551616.0) ? (uint64_t)d : 0;
  hf_session *s = hf_get_session(env, argv[0]);
  return s && s->state == S_MOUNTED ? s : NULL;
}

/* markNoXattrs(session, ino): answer ino's getxattr and listxattr here until revoked. */
napi_value hf_noxattr_mark(napi_env env, napi_callback_info info) {
  uint64_t ino;
  hf_session *s = args(env, info, &ino);
  if (!s || ino == 0) return NULL;
  if (!s->noxattr) {
    s->noxattr = calloc(NOXATTR_SLOTS, sizeof(uint64_t));
    if (!s->noxattr) return NULL;  /* no memory: every request goes to JS, as before */
  }
  s->noxattr[slot_of(ino)] = ino;
  return NULL;
}

/* revokeNoXattrs(session, ino): ino's xattr requests go to JS again. */
napi_value hf_noxattr_revoke(napi_env env, napi_callback_info info) {
  uint64_t ino;
  hf_session *s = args(env, info, &ino);
  if (s && marked(s, ino)) s->noxattr[slot_of(ino)] = 0;
  return NULL;
}

/* nativeReplies() -> { getxattr, listxattr }: requests answered by the cache in this process. */
napi_value hf_noxattr_stats(napi_env env, napi_callback_info info) {
  static const char *const names[] = { "getxattr", "listxattr" };
  uint64_t values[] = { answered_getxattr, answered_listxattr };
  return hf_counts(env, names, values, 2);
}

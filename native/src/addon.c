/*
 * Module registration for the homefs FUSE binding (see hf.h for the design). An atexit() hook unmounts
 * whatever is still mounted when the process exits through exit(); SIGKILL is covered by auto_unmount.
 */
#include "hf.h"
#include <stdlib.h>

static int atexit_installed;

napi_value hf_counts(napi_env env, const char *const *names, const uint64_t *values, int n) {
  napi_value o, v;
  HF_CHECK(env, napi_create_object(env, &o));
  for (int i = 0; i < n; i++) {
    napi_create_double(env, (double)values[i], &v);
    napi_set_named_property(env, o, names[i], v);
  }
  return o;
}

static void at_exit(void) { hf_unmount_all_at_exit(); }

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
#define F(name, fn) { name, NULL, fn, NULL, NULL, NULL, napi_default, NULL }
    F("mount", hf_mount), F("unmount", hf_unmount), F("invalInode", hf_inval_inode),
    F("invalEntry", hf_inval_entry), F("notifyStore", hf_notify_store), F("setScratch", hf_set_scratch),
    F("replyErr", hf_reply_err), F("replyNone", hf_reply_none), F("replyEntry", hf_reply_entry),
    F("replyCreate", hf_reply_create), F("replyAttr", hf_reply_attr), F("replyReadlink", hf_reply_readlink),
    F("replyOpen", hf_reply_open), F("replyWrite", hf_reply_write), F("replyBuf", hf_reply_buf),
    F("replyXattrSize", hf_reply_xattr_size), F("replyStatfs", hf_reply_statfs),
    F("replyLseek", hf_reply_lseek), F("replyDir", hf_reply_dir), F("ctx", hf_req_ctx),
    F("writeBufferStats", hf_wbuf_stats), F("markNoXattrs", hf_noxattr_mark),
    F("revokeNoXattrs", hf_noxattr_revoke), F("nativeReplies", hf_noxattr_stats), F("servedStats", hf_served_stats), F("waitEnds", hf_wait_ends),
    F("backingOpen", hf_backing_open), F("backingClose", hf_backing_close), F("caps", hf_caps),
#undef F
  };
  if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok) return NULL;
  if (!atexit_installed) { atexit(at_exit); atexit_installed = 1; }
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

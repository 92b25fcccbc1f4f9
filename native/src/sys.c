/*
 * homefs_sys: two process services the daemon needs and Node lacks, kept apart from the FUSE binding (no
 * libfuse, no state). Both return 0 or a negative errno and never throw for an OS failure.
 *
 *   notify(socketPath, message)  sends one datagram to a unix socket: systemd's sd_notify protocol
 *                                (NOTIFY_SOCKET; a leading '@' names an abstract socket). Node's net
 *                                module has stream sockets only.
 *   redirectStdio(path)          opens path for appending (creating it 0600) and points fds 1 and 2 at
 *                                it: how a daemon reopens its log after logrotate moved it (SIGHUP).
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static napi_value num(napi_env env, int v) {
  napi_value r;
  napi_create_int32(env, v, &r);
  return r;
}

/* Copies a JS string argument into a malloc'd buffer (NULL and a thrown TypeError if it is not one). */
static char *str_arg(napi_env env, napi_value v, size_t *len) {
  if (napi_get_value_string_utf8(env, v, NULL, 0, len) != napi_ok) {
    napi_throw_type_error(env, NULL, "expected a string");
    return NULL;
  }
  char *s = malloc(*len + 1);
  if (s) napi_get_value_string_utf8(env, v, s, *len + 1, len);
  return s;
}

static napi_value sys_notify(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2) {
    napi_throw_type_error(env, NULL, "notify(socketPath, message)");
    return NULL;
  }
  size_t plen, mlen;
  char *path = str_arg(env, argv[0], &plen);
  if (!path) return NULL;
  char *msg = str_arg(env, argv[1], &mlen);
  if (!msg) {
    free(path);
    return NULL;
  }
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  int rc = 0;
  if (plen == 0 || plen >= sizeof sa.sun_path || (path[0] != '/' && path[0] != '@')) {
    rc = -EINVAL;
  } else {
    memcpy(sa.sun_path, path, plen);
    socklen_t salen = offsetof(struct sockaddr_un, sun_path) + plen;
    if (path[0] == '@') sa.sun_path[0] = '\0'; /* abstract namespace: no trailing NUL counted */
    else salen += 1;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      rc = -errno;
    } else {
      if (sendto(fd, msg, mlen, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0) rc = -errno;
      close(fd);
    }
  }
  free(path);
  free(msg);
  return num(env, rc);
}

static napi_value sys_redirect_stdio(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1) {
    napi_throw_type_error(env, NULL, "redirectStdio(path)");
    return NULL;
  }
  size_t plen;
  char *path = str_arg(env, argv[0], &plen);
  if (!path) return NULL;
  int rc = 0;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    rc = -errno;
  } else {
    if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) rc = -errno;
    close(fd);
  }
  free(path);
  return num(env, rc);
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    { "notify", NULL, sys_notify, NULL, NULL, NULL, napi_default, NULL },
    { "redirectStdio", NULL, sys_redirect_stdio, NULL, NULL, NULL, napi_default, NULL },
  };
  if (napi_define_properties(env, exports, 2, props) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

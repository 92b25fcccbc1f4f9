/*
 * homefs_files: many small files written, and many paths' metadata set, in one hand-off to a libuv
 * thread-pool thread, for `homefs pull` (src/transfer/filewriter.ts); and an open and a read that never
 * wait for the disk, for a mounted home's small reads of its upper files (src/inodes/upper.ts). Node's fs
 * API costs one thread-pool round trip per call (open, write, chmod, utimes, close: five per file), or
 * blocks the main thread with the synchronous calls; and it has no way to set a time to the nanosecond
 * (fs.utimes takes a double).
 *
 *   writeFiles(paths, datas, meta) -> Promise<Int32Array>
 *       For each i: open(paths[i], O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600), write datas[i]
 *       whole, then with the fd (when meta asks) fchown, fchmod, futimens (atime = mtime), close.
 *   writeFiles(paths, datas, meta, finals) -> Promise<Int32Array>
 *       The same, then rename(paths[i], finals[i]); an item that failed has its file (which this call
 *       created) removed. For the block cache's atomic writes (src/cache/diskfiles.ts).
 *   setMeta(paths, meta) -> Promise<Int32Array>
 *       For each i, in order, never following a symlink: lchown, chmod, utimensat(AT_SYMLINK_NOFOLLOW)
 *       (atime = mtime), each when meta asks. The caller never asks chmod of a symlink.
 *
 *   meta: Float64Array, 5 numbers per item: uid, gid (both -1: no chown), mode (-1: none), mtime seconds,
 *   mtime nanoseconds (-1: no times).
 *   The answer: 2 numbers per item: 0 or the errno of the first call that failed, and which call
 *   (STEP_* below). An item that fails does not stop the others; a file whose write failed is closed and
 *   left for the caller to remove (pull removes its whole temporary directory).
 *
 *   openCached(path) -> fd, or a negative errno
 *       openat2(O_RDWR|O_CLOEXEC, RESOLVE_CACHED) of an existing file: -EAGAIN when the lookup would need
 *       the disk (the dentry is not cached), so the main thread can open at once or hand it to the pool.
 *   readCached(fd, buffer, position) -> bytes read, or a negative errno
 *       preadv2(RWF_NOWAIT) into the whole of buffer: -EAGAIN (or a short count) when not all of it is in
 *       the page cache. Both are synchronous and never block on the disk.
 *   readFileCached(path, buffer, position) -> bytes read, or a negative errno
 *       The two above for a read-only file in one call, for the block cache's reads of its files
 *       (src/cache/blockcache.ts): openat2(O_RDONLY|O_CLOEXEC|O_NOFOLLOW, RESOLVE_CACHED), preadv2
 *       (RWF_NOWAIT) into the whole of buffer, close. -EAGAIN when the name or the bytes would need the disk.
 *   closeFds(fds) -> Promise<void>
 *       close(2) of each fd of an Int32Array (copied), in one hand-off to the thread pool: the upper files'
 *       pool closes its idle fds a hundred at a time (src/inodes/upper.ts), where fs.close costs a thread
 *       wake-up and a completion each. A close that fails is ignored, as fs.close's callback would be.
 *   mapFile(fd, length) -> ArrayBuffer, or a negative errno
 *       Allocates the file's first `length` bytes on disk (fallocate: the file grows to at least `length`)
 *       and maps them shared, read-write: the journal's redo log appends a batch with a copy into it, where a
 *       pwrite costs a system call per reply (src/inodes/redolog.ts). The bytes are the page cache's at once,
 *       so they outlive a kill -9 of the process as a write's would; the allocation up front means a store
 *       into the mapping never needs a block (no SIGBUS on a full disk). Unmapped when the ArrayBuffer is
 *       collected.
 *   statTimes(fdOrPath, out) -> 0, or a negative errno
 *       fstat of an fd (a number) or stat of a path (a string), into out (a Float64Array of 5): size, mtime
 *       seconds, mtime nanoseconds, ctime seconds, ctime nanoseconds. What a passthrough writer's upper
 *       file looks like now (src/inodes/livefiles.ts), several times per file an agent writes: fs.fstatSync
 *       makes a Stats object of 14 BigInts for the three numbers it needs.
 *
 * Nothing here touches JS state off the main thread: paths are copied into C strings and the buffers'
 * bytes are pinned by a reference to the `datas` array (the caller does not change it until the promise
 * settles).
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/openat2.h>
#include <unistd.h>

enum { STEP_OPEN, STEP_WRITE, STEP_CHOWN, STEP_CHMOD, STEP_UTIMES, STEP_CLOSE, STEP_RENAME };
#define META 5

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref datas_ref; /* NULL for setMeta */
  uint32_t n;
  char **paths;
  char **finals; /* writeFiles' optional renames; NULL when none */
  const uint8_t **bytes;
  size_t *lengths;
  double *meta; /* copied: n * META */
  int32_t *result; /* n * 2 */
} job_t;

static void job_free(napi_env env, job_t *j) {
  if (j->paths) for (uint32_t i = 0; i < j->n; i++) free(j->paths[i]);
  free(j->paths);
  if (j->finals) for (uint32_t i = 0; i < j->n; i++) free(j->finals[i]);
  free(j->finals);
  free(j->bytes);
  free(j->lengths);
  free(j->meta);
  free(j->result);
  if (j->datas_ref) napi_delete_reference(env, j->datas_ref);
  free(j);
}

static void times_of(const double *m, struct timespec ts[2]) {
  ts[0].tv_sec = ts[1].tv_sec = (time_t)m[3];
  ts[0].tv_nsec = ts[1].tv_nsec = (long)m[4];
}

/* An id from meta: -1 is "leave as is" for chown. */
static unsigned id_of(double v) { return v < 0 ? (unsigned)-1 : (unsigned)v; }

static int write_all(int fd, const uint8_t *p, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static void fail(int32_t *r, int step) {
  r[0] = errno ? errno : EIO;
  r[1] = step;
}

static void exec_write(napi_env env, void *data) {
  job_t *j = data;
  for (uint32_t i = 0; i < j->n; i++) {
    const double *m = j->meta + (size_t)i * META;
    int32_t *r = j->result + (size_t)i * 2;
    int fd = open(j->paths[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      fail(r, STEP_OPEN);
      continue;
    }
    struct timespec ts[2];
    if (write_all(fd, j->bytes[i], j->lengths[i]) < 0) fail(r, STEP_WRITE);
    else if ((m[0] >= 0 || m[1] >= 0) && fchown(fd, id_of(m[0]), id_of(m[1])) < 0) fail(r, STEP_CHOWN);
    else if (m[2] >= 0 && fchmod(fd, (mode_t)m[2]) < 0) fail(r, STEP_CHMOD);
    else if (m[4] >= 0 && (times_of(m, ts), futimens(fd, ts) < 0)) fail(r, STEP_UTIMES);
    if (close(fd) < 0 && r[0] == 0) fail(r, STEP_CLOSE);
    if (j->finals && r[0] == 0 && rename(j->paths[i], j->finals[i]) < 0) fail(r, STEP_RENAME);
    if (j->finals && r[0] != 0) unlink(j->paths[i]); /* the temporary file this call created */
  }
}

static void exec_meta(napi_env env, void *data) {
  job_t *j = data;
  for (uint32_t i = 0; i < j->n; i++) {
    const double *m = j->meta + (size_t)i * META;
    int32_t *r = j->result + (size_t)i * 2;
    struct timespec ts[2];
    if ((m[0] >= 0 || m[1] >= 0) && lchown(j->paths[i], id_of(m[0]), id_of(m[1])) < 0) fail(r, STEP_CHOWN);
    else if (m[2] >= 0 && chmod(j->paths[i], (mode_t)m[2]) < 0) fail(r, STEP_CHMOD);
    else if (m[4] >= 0 && (times_of(m, ts), utimensat(AT_FDCWD, j->paths[i], ts, AT_SYMLINK_NOFOLLOW) < 0)) fail(r, STEP_UTIMES);
  }
}

static void complete(napi_env env, napi_status status, void *data) {
  job_t *j = data;
  napi_value ab, arr;
  void *raw;
  size_t bytes = (size_t)j->n * 2 * sizeof(int32_t);
  if (status == napi_ok && napi_create_arraybuffer(env, bytes, &raw, &ab) == napi_ok &&
      napi_create_typedarray(env, napi_int32_array, (size_t)j->n * 2, ab, 0, &arr) == napi_ok) {
    if (bytes) memcpy(raw, j->result, bytes);
    napi_resolve_deferred(env, j->deferred, arr);
  } else {
    napi_value msg, err;
    napi_create_string_utf8(env, "homefs_files: the batch did not run", NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &err);
    napi_reject_deferred(env, j->deferred, err);
  }
  napi_delete_async_work(env, j->work);
  job_free(env, j);
}

/* Copies n strings of a JS array into out (calloc'd by the caller): 0, 1 for a non-string, -1 out of memory. */
static int strings_of(napi_env env, napi_value arr, uint32_t n, char **out) {
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    size_t len;
    if (napi_get_element(env, arr, i, &v) != napi_ok || napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return 1;
    out[i] = malloc(len + 1);
    if (!out[i]) return -1;
    napi_get_value_string_utf8(env, v, out[i], len + 1, &len);
  }
  return 0;
}

/* Reads the arguments shared by both calls into a new job (NULL and a pending TypeError on bad input). */
static job_t *job_new(napi_env env, napi_value paths, napi_value meta) {
  uint32_t n;
  bool is_array;
  napi_typedarray_type type;
  size_t mlen;
  void *mdata;
  if (napi_is_array(env, paths, &is_array) != napi_ok || !is_array || napi_get_array_length(env, paths, &n) != napi_ok ||
      napi_get_typedarray_info(env, meta, &type, &mlen, &mdata, NULL, NULL) != napi_ok || type != napi_float64_array ||
      mlen != (size_t)n * META) {
    napi_throw_type_error(env, NULL, "expected (paths: string[], ..., meta: Float64Array of 5 per path)");
    return NULL;
  }
  job_t *j = calloc(1, sizeof *j);
  if (!j) goto oom;
  j->n = n;
  j->paths = calloc(n ? n : 1, sizeof *j->paths);
  j->meta = malloc((n ? n : 1) * META * sizeof(double));
  j->result = calloc((size_t)(n ? n : 1) * 2, sizeof(int32_t));
  if (!j->paths || !j->meta || !j->result) goto oom;
  memcpy(j->meta, mdata, (size_t)n * META * sizeof(double));
  int bad = strings_of(env, paths, n, j->paths);
  if (bad) {
    job_free(env, j);
    if (bad < 0) goto oom;
    napi_throw_type_error(env, NULL, "paths must be strings");
    return NULL;
  }
  return j;
oom:
  if (j) job_free(env, j);
  napi_throw_error(env, NULL, "homefs_files: out of memory");
  return NULL;
}

static napi_value start(napi_env env, job_t *j, napi_async_execute_callback exec, const char *name) {
  napi_value promise, resource_name;
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &resource_name);
  if (napi_create_promise(env, &j->deferred, &promise) != napi_ok ||
      napi_create_async_work(env, NULL, resource_name, exec, complete, j, &j->work) != napi_ok ||
      napi_queue_async_work(env, j->work) != napi_ok) {
    job_free(env, j);
    napi_throw_error(env, NULL, "homefs_files: cannot queue the batch");
    return NULL;
  }
  return promise;
}

static napi_value write_files(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3) {
    napi_throw_type_error(env, NULL, "writeFiles(paths, datas, meta)");
    return NULL;
  }
  job_t *j = job_new(env, argv[0], argv[2]);
  if (!j) return NULL;
  uint32_t nd;
  bool is_array;
  if (napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[1], &nd) != napi_ok || nd != j->n) {
    job_free(env, j);
    napi_throw_type_error(env, NULL, "datas must be an array of Buffers, one per path");
    return NULL;
  }
  j->bytes = calloc(j->n ? j->n : 1, sizeof *j->bytes);
  j->lengths = calloc(j->n ? j->n : 1, sizeof *j->lengths);
  if (!j->bytes || !j->lengths) {
    job_free(env, j);
    napi_throw_error(env, NULL, "homefs_files: out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < j->n; i++) {
    napi_value v;
    void *p;
    size_t len;
    bool is_buffer = false;
    if (napi_get_element(env, argv[1], i, &v) != napi_ok || napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer ||
        napi_get_buffer_info(env, v, &p, &len) != napi_ok) {
      job_free(env, j);
      napi_throw_type_error(env, NULL, "datas must be Buffers");
      return NULL;
    }
    j->bytes[i] = p;
    j->lengths[i] = len;
  }
  napi_valuetype t4 = napi_undefined;
  if (argc >= 4) napi_typeof(env, argv[3], &t4);
  if (t4 != napi_undefined) {
    uint32_t nf = 0;
    if (napi_is_array(env, argv[3], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[3], &nf) != napi_ok || nf != j->n) {
      job_free(env, j);
      napi_throw_type_error(env, NULL, "finals must be an array of strings, one per path");
      return NULL;
    }
    j->finals = calloc(j->n ? j->n : 1, sizeof *j->finals);
    int bad = j->finals ? strings_of(env, argv[3], j->n, j->finals) : -1;
    if (bad) {
      job_free(env, j);
      if (bad < 0) napi_throw_error(env, NULL, "homefs_files: out of memory");
      else napi_throw_type_error(env, NULL, "finals must be strings");
      return NULL;
    }
  }
  if (napi_create_reference(env, argv[1], 1, &j->datas_ref) != napi_ok) {
    job_free(env, j);
    napi_throw_error(env, NULL, "homefs_files: cannot pin the buffers");
    return NULL;
  }
  return start(env, j, exec_write, "homefs.writeFiles");
}

static napi_value set_meta(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2) {
    napi_throw_type_error(env, NULL, "setMeta(paths, meta)");
    return NULL;
  }
  job_t *j = job_new(env, argv[0], argv[1]);
  if (!j) return NULL;
  return start(env, j, exec_meta, "homefs.setMeta");
}

static napi_value num(napi_env env, double v) {
  napi_value r;
  napi_create_double(env, v, &r);
  return r;
}

static napi_value open_cached(napi_env env, napi_callback_info info) {
  size_t argc = 1, len;
  napi_value argv[1];
  char path[4096];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], path, sizeof(path), &len) != napi_ok || len >= sizeof(path) - 1) {
    napi_throw_type_error(env, NULL, "openCached(path)");
    return NULL;
  }
  struct open_how how = { .flags = O_RDWR | O_CLOEXEC, .mode = 0, .resolve = RESOLVE_CACHED };
  long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
  return num(env, fd < 0 ? -errno : (double)fd);
}

static napi_value read_cached(napi_env env, napi_callback_info info) {
  size_t argc = 3, len;
  napi_value argv[3];
  int32_t fd;
  double pos;
  void *data;
  napi_typedarray_type type;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok ||
      napi_get_typedarray_info(env, argv[1], &type, &len, &data, NULL, NULL) != napi_ok || type != napi_uint8_array ||
      napi_get_value_double(env, argv[2], &pos) != napi_ok) {
    napi_throw_type_error(env, NULL, "readCached(fd, buffer, position)");
    return NULL;
  }
  struct iovec iov = { data, len };
  ssize_t n = preadv2(fd, &iov, 1, (off_t)pos, RWF_NOWAIT);
  return num(env, n < 0 ? -errno : (double)n);
}

static napi_value read_file_cached(napi_env env, napi_callback_info info) {
  size_t argc = 3, len, plen;
  napi_value argv[3];
  char path[4096];
  double pos;
  void *data;
  napi_typedarray_type type;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3 || napi_get_value_string_utf8(env, argv[0], path, sizeof(path), &plen) != napi_ok || plen >= sizeof(path) - 1 ||
      napi_get_typedarray_info(env, argv[1], &type, &len, &data, NULL, NULL) != napi_ok || type != napi_uint8_array ||
      napi_get_value_double(env, argv[2], &pos) != napi_ok) {
    napi_throw_type_error(env, NULL, "readFileCached(path, buffer, position)");
    return NULL;
  }
  struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW, .mode = 0, .resolve = RESOLVE_CACHED };
  long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
  if (fd < 0) return num(env, -errno);
  struct iovec iov = { data, len };
  ssize_t n = preadv2((int)fd, &iov, 1, (off_t)pos, RWF_NOWAIT);
  int err = n < 0 ? errno : 0;
  close((int)fd);
  return num(env, n < 0 ? -err : (double)n);
}

static napi_value stat_times(napi_env env, napi_callback_info info) {
  size_t argc = 2, len, plen;
  napi_value argv[2];
  napi_valuetype t;
  double *out;
  napi_typedarray_type type;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || napi_typeof(env, argv[0], &t) != napi_ok || (t != napi_number && t != napi_string) ||
      napi_get_typedarray_info(env, argv[1], &type, &len, (void **)&out, NULL, NULL) != napi_ok ||
      type != napi_float64_array || len < 5) {
    napi_throw_type_error(env, NULL, "statTimes(fdOrPath, Float64Array(5))");
    return NULL;
  }
  struct stat st;
  int rc;
  if (t == napi_number) {
    int32_t fd;
    napi_get_value_int32(env, argv[0], &fd);
    rc = fstat(fd, &st);
  } else {
    char path[4096];
    if (napi_get_value_string_utf8(env, argv[0], path, sizeof(path), &plen) != napi_ok || plen >= sizeof(path) - 1) {
      napi_throw_type_error(env, NULL, "statTimes: path too long");
      return NULL;
    }
    rc = stat(path, &st);
  }
  if (rc < 0) return num(env, -errno);
  out[0] = (double)st.st_size;
  out[1] = (double)st.st_mtim.tv_sec; out[2] = (double)st.st_mtim.tv_nsec;
  out[3] = (double)st.st_ctim.tv_sec; out[4] = (double)st.st_ctim.tv_nsec;
  return num(env, 0);
}

static void unmap(napi_env env, void *data, void *hint) { munmap(data, (size_t)(uintptr_t)hint); }

static napi_value map_file(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], ab;
  int32_t fd;
  double len;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_double(env, argv[1], &len) != napi_ok ||
      !(len > 0 && len <= (double)(1u << 30))) {
    napi_throw_type_error(env, NULL, "mapFile(fd, length up to 1 GiB)");
    return NULL;
  }
  if (fallocate(fd, 0, 0, (off_t)len) != 0) return num(env, -errno);
  void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return num(env, -errno);
  if (napi_create_external_arraybuffer(env, p, (size_t)len, unmap, (void *)(uintptr_t)(size_t)len, &ab) != napi_ok) {
    munmap(p, (size_t)len);
    return num(env, -ENOTSUP);
  }
  return ab;
}

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  size_t n;
  int32_t fds[];
} close_job_t;

static void exec_close(napi_env env, void *data) {
  close_job_t *j = data;
  for (size_t i = 0; i < j->n; i++) close(j->fds[i]);
}

static void complete_close(napi_env env, napi_status status, void *data) {
  close_job_t *j = data;
  napi_value undef;
  napi_get_undefined(env, &undef);
  napi_resolve_deferred(env, j->deferred, undef);
  napi_delete_async_work(env, j->work);
  free(j);
}

static napi_value close_fds(napi_env env, napi_callback_info info) {
  size_t argc = 1, len;
  napi_value argv[1], promise, name;
  int32_t *fds;
  napi_typedarray_type type;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_typedarray_info(env, argv[0], &type, &len, (void **)&fds, NULL, NULL) != napi_ok || type != napi_int32_array) {
    napi_throw_type_error(env, NULL, "closeFds(Int32Array)");
    return NULL;
  }
  close_job_t *j = malloc(sizeof(*j) + len * sizeof(int32_t));
  if (!j) {
    napi_throw_error(env, NULL, "homefs_files: out of memory");
    return NULL;
  }
  j->n = len;
  memcpy(j->fds, fds, len * sizeof(int32_t));
  napi_create_string_utf8(env, "homefs.closeFds", NAPI_AUTO_LENGTH, &name);
  if (napi_create_promise(env, &j->deferred, &promise) != napi_ok ||
      napi_create_async_work(env, NULL, name, exec_close, complete_close, j, &j->work) != napi_ok ||
      napi_queue_async_work(env, j->work) != napi_ok) {
    free(j);
    napi_throw_error(env, NULL, "homefs_files: cannot queue the closes");
    return NULL;
  }
  return promise;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    { "writeFiles", NULL, write_files, NULL, NULL, NULL, napi_default, NULL },
    { "setMeta", NULL, set_meta, NULL, NULL, NULL, napi_default, NULL },
    { "openCached", NULL, open_cached, NULL, NULL, NULL, napi_default, NULL },
    { "readCached", NULL, read_cached, NULL, NULL, NULL, napi_default, NULL },
    { "readFileCached", NULL, read_file_cached, NULL, NULL, NULL, napi_default, NULL },
    { "statTimes", NULL, stat_times, NULL, NULL, NULL, napi_default, NULL },
    { "closeFds", NULL, close_fds, NULL, NULL, NULL, napi_default, NULL },
    { "mapFile", NULL, map_file, NULL, NULL, NULL, napi_default, NULL },
  };
  if (napi_define_properties(env, exports, 8, props) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

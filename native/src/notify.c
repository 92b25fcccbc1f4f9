/*
 * Dentry invalidations sent from a thread of their own: invalEntry(session, parent, name, true).
 *
 * The kernel takes the parent directory's lock to act on an invalidation, and a request in flight on that
 * directory may hold it while it waits for our reply. From the main thread that is a deadlock; from this
 * thread it is only a wait, while the main thread goes on answering. The daemon uses it to make the kernel
 * let go of directory entries it no longer needs to remember (src/inodes/trim.ts): the kernel drops
 * the dentry and every unused one below it, and sends FORGETs for the inodes that leaves unreferenced.
 *
 * Best effort: a name the kernel does not hold answers ENOENT, and nothing is reported. The queue is
 * bounded (later names are dropped when it is full). The thread starts with the first name and writes the
 * notifications itself, on a duplicate of the session's /dev/fuse descriptor, so that it never touches
 * libfuse's session: at unmount (hf_notify_stop) it is told to stop and left to finish on its own (one
 * notification may still be waiting for a directory lock that a request nobody will answer now holds; the
 * connection's end releases it), then it closes its descriptor and frees its queue.
 */
#include "hf.h"
#include <errno.h>
#include <linux/fuse.h>
#include <sys/uio.h>
#include <unistd.h>
#include <pthread.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>

#define QUEUE_MAX 65536

struct item { uint64_t parent; char *name; size_t len; };

struct hf_notifier {
  int fd;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct item *q;
  size_t head, count;
  int stop;
  uint64_t sent, dropped;  /* for a debugger: nothing reads them */
};

/* FUSE_NOTIFY_INVAL_ENTRY: header, parent and name length, the name and its NUL. */
static void send_inval(int fd, uint64_t parent, const char *name, size_t len) {
  struct fuse_notify_inval_entry_out arg = { .parent = parent, .namelen = (uint32_t)len, .flags = 0 };
  struct fuse_out_header out = { .len = (uint32_t)(sizeof(out) + sizeof(arg) + len + 1), .error = FUSE_NOTIFY_INVAL_ENTRY, .unique = 0 };
  struct iovec v[3] = { { &out, sizeof(out) }, { &arg, sizeof(arg) }, { (void *)name, len + 1 } };
  while (writev(fd, v, 3) < 0 && errno == EINTR) {}
}

static void free_notifier(hf_notifier *n) {
  for (size_t i = 0; i < n->count; i++) free(n->q[(n->head + i) % QUEUE_MAX].name);
  pthread_mutex_destroy(&n->mu);
  pthread_cond_destroy(&n->cv);
  close(n->fd);
  free(n->q);
  free(n);
}

static void *run(void *arg) {
  hf_notifier *n = arg;
  pthread_mutex_lock(&n->mu);
  for (;;) {
    while (n->count == 0 && !n->stop) pthread_cond_wait(&n->cv, &n->mu);
    if (n->stop) break;
    struct item it = n->q[n->head];
    n->head = (n->head + 1) % QUEUE_MAX;
    n->count--;
    pthread_mutex_unlock(&n->mu);
    send_inval(n->fd, it.parent, it.name, it.len);
    free(it.name);
    pthread_mutex_lock(&n->mu);
    n->sent++;
  }
  pthread_mutex_unlock(&n->mu);
  free_notifier(n);
  return NULL;
}

/* Queues one invalidation; starts the thread on first use. Returns 0, or -ENOSPC when the queue is full. */
int hf_notify_enqueue(hf_session *s, uint64_t parent, const char *name, size_t len) {
  hf_notifier *n = s->notifier;
  if (!n) {
    n = calloc(1, sizeof(*n));
    if (!n) return -ENOMEM;
    n->q = calloc(QUEUE_MAX, sizeof(struct item));
    if (!n->q) { free(n); return -ENOMEM; }
    n->fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 3);
    if (n->fd < 0) { free(n->q); free(n); return -errno; }
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, run, n) != 0) { close(n->fd); free(n->q); free(n); return -EAGAIN; }
    pthread_detach(t);
    s->notifier = n;
  }
  char *copy = malloc(len + 1);
  if (!copy) return -ENOMEM;
  memcpy(copy, name, len); copy[len] = 0;
  pthread_mutex_lock(&n->mu);
  int r = 0;
  if (n->count == QUEUE_MAX) { n->dropped++; r = -ENOSPC; free(copy); }
  else {
    n->q[(n->head + n->count) % QUEUE_MAX] = (struct item){ parent, copy, len };
    n->count++;
    pthread_cond_signal(&n->cv);
  }
  pthread_mutex_unlock(&n->mu);
  return r;
}

/* Tells the thread to stop (what is still queued is dropped); it frees everything as it ends. */
void hf_notify_stop(hf_session *s) {
  hf_notifier *n = s->notifier;
  if (!n) return;
  s->notifier = NULL;
  pthread_mutex_lock(&n->mu);
  n->stop = 1;
  pthread_cond_signal(&n->cv);
  pthread_mutex_unlock(&n->mu);
}

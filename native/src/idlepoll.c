/*
 * Idle pollers: keep the machine's other CPUs out of their idle halt while FUSE requests flow.
 *
 * A FUSE round trip wakes the caller on every reply. The caller slept on its own CPU, and on a VM whose
 * idle vCPUs halt at once (cpuidle haltpoll with guest_halt_poll_ns=0, as on this project's test
 * machines), waking a halted vCPU goes through the hypervisor: most of a round trip
 * (docs/decisions/0062-fuse-spin-wait.md). The kernel's own remedy is halt polling, where an idle CPU polls a
 * while before it halts. It is a host setting, so homefs does the same from user space, and only while
 * its mount is busy.
 *
 * There is one thread per other CPU of the process's affinity (at most POLLERS_MAX), each under
 * SCHED_IDLE, so it runs only on a CPU that has nothing else to run and any ordinary task preempts it
 * at once. While a request was answered in the last `window_ns`, each thread spins (pause, and a read
 * of the clock). Its CPU then never halts, and the caller's wake-up there is an ordinary preemption.
 * When the mount goes quiet the threads sleep on a futex. The serving thread wakes them with one futex
 * call when traffic starts again.
 *
 * hf_idlepoll_touch is called on the serving thread after each loop turn that answered requests.
 */
#define _GNU_SOURCE
#include "hf.h"
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define POLLERS_MAX 3

struct hf_idlepoll {
  uint64_t window_ns;
  _Atomic uint64_t last;   /* monotonic ns of the last answered turn */
  _Atomic uint32_t wake;   /* futex word: bumped to wake sleeping pollers */
  _Atomic int sleeping;    /* pollers asleep on `wake` */
  _Atomic int stop;
  _Atomic int started;     /* pollers past their start (idle-priority, or ended because they cannot be) */
  int n;
  pthread_t threads[POLLERS_MAX];
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *poller(void *arg) {
  hf_idlepoll *p = arg;
  struct sched_param sp = { .sched_priority = 0 };
  /* A poller that cannot be idle-priority would take CPU time from real work: it ends instead. (glibc's
   * thread attributes refuse SCHED_IDLE, so the thread sets it itself; start waits for that.) */
  int idle = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0;
  atomic_fetch_add(&p->started, 1);
  if (!idle) return NULL;
  while (!atomic_load(&p->stop)) {
    uint32_t seen = atomic_load(&p->wake);
    if (now_ns() - atomic_load(&p->last) > p->window_ns) {
      atomic_fetch_add(&p->sleeping, 1);
      /* re-check after announcing the sleep: a touch in between bumped `wake`, and the wait returns at once */
      if (now_ns() - atomic_load(&p->last) > p->window_ns && !atomic_load(&p->stop))
        syscall(SYS_futex, &p->wake, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
      atomic_fetch_sub(&p->sleeping, 1);
      continue;
    }
    for (int i = 0; i < 64; i++) hf_cpu_relax();
  }
  return NULL;
}

hf_idlepoll *hf_idlepoll_start(uint64_t window_ns) {
  cpu_set_t cpus;
  int ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  int n = ncpu - 1 < POLLERS_MAX ? ncpu - 1 : POLLERS_MAX;
  if (window_ns == 0 || n <= 0) return NULL;
  hf_idlepoll *p = calloc(1, sizeof(*p));
  if (!p) return NULL;
  p->window_ns = window_ns;
  for (int i = 0; i < n; i++) {
    if (pthread_create(&p->threads[p->n], NULL, poller, p) != 0) break;
    p->n++;
  }
  if (p->n == 0) { free(p); return NULL; }
  /* Return only once every poller runs idle-priority: none spins at ordinary priority after the mount. */
  while (atomic_load(&p->started) < p->n) sched_yield();
  return p;
}

void hf_idlepoll_touch(hf_idlepoll *p) {
  if (!p) return;
  atomic_store(&p->last, now_ns());
  if (atomic_load(&p->sleeping) > 0) {
    atomic_fetch_add(&p->wake, 1);
    syscall(SYS_futex, &p->wake, FUTEX_WAKE_PRIVATE, POLLERS_MAX, NULL, NULL, 0);
  }
}

void hf_idlepoll_stop(hf_idlepoll *p) {
  if (!p) return;
  atomic_store(&p->stop, 1);
  atomic_fetch_add(&p->wake, 1);
  syscall(SYS_futex, &p->wake, FUTEX_WAKE_PRIVATE, POLLERS_MAX, NULL, NULL, 0);
  for (int i = 0; i < p->n; i++) pthread_join(p->threads[i], NULL);
  free(p);
}

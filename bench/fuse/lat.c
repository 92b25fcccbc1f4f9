/*
 * Syscall-level workload driver for bench/fuse/run.ts, so the numbers measure the filesystem and not the
 * driver: lat <op> <dir> <n>, op = miss | hit | create | stat | unlink | read. Prints elapsed seconds.
 *   miss: stat n distinct missing names; hit: stat one existing file n times; create/stat/unlink: n files
 *   f<i>; read: read files f<i> (i < n) whole, like cat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: lat miss|hit|create|stat|unlink|read <dir> <n>\n"); return 2; }
  const char *op = argv[1], *dir = argv[2];
  long n = atol(argv[3]);
  char p[4096]; struct stat st; static char buf[1 << 16];
  if (!strcmp(op, "hit")) {
    snprintf(p, sizeof(p), "%s/hit", dir);
    int fd = open(p, O_CREAT | O_WRONLY, 0644); if (fd < 0) { perror(p); return 1; } close(fd);
    stat(p, &st);
  }
  double t0 = now();
  for (long i = 0; i < n; i++) {
    if (!strcmp(op, "miss")) {
      snprintf(p, sizeof(p), "%s/missing-%ld", dir, i);
      if (stat(p, &st) == 0 || errno != ENOENT) { fprintf(stderr, "miss: %s exists?\n", p); return 1; }
      continue;
    }
    if (!strcmp(op, "hit")) { if (stat(p, &st) != 0) { perror(p); return 1; } continue; }
    snprintf(p, sizeof(p), "%s/f%ld", dir, i);
    if (!strcmp(op, "create")) {
      int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) { perror(p); return 1; }
      close(fd);
    } else if (!strcmp(op, "stat")) {
      if (stat(p, &st) != 0) { perror(p); return 1; }
    } else if (!strcmp(op, "unlink")) {
      if (unlink(p) != 0) { perror(p); return 1; }
    } else if (!strcmp(op, "read")) {
      int fd = open(p, O_RDONLY); if (fd < 0) { perror(p); return 1; }
      while (read(fd, buf, sizeof(buf)) > 0) {}
      close(fd);
    } else { fprintf(stderr, "unknown op %s\n", op); return 2; }
  }
  printf("%.6f\n", now() - t0);
  return 0;
}

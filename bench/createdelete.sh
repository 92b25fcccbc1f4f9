#!/bin/bash
# usage: bench/createdelete.sh CHECKOUT LABEL [N]
#   A fresh mount (file:// store on /dev/shm, state directory on disk); one python process creates N
#   (default 10,000) files of 100 B, then another deletes them. Prints per phase the daemon's CPU time
#   (process_cpu_seconds_total from `homefs status --metrics`), the wall time and the requests the daemon
#   saw (homefs_fuse_ops_total), and the load average.
#   PROF=DIR: run the daemon under `node --cpu-prof --cpu-prof-dir=DIR` (the profile is written at unmount).
#   STRACE=FILE: `strace -c -f` the daemon over both phases, summary to FILE.
#   MOUNT_ARGS="...": more `homefs mount` options (e.g. --fuse-spin-us 0).
#   STATE_ROOT=DIR: where the state and cache directories go (default /var/tmp, on disk; /dev/shm leaves
#   the disk's own costs out of an A/B of the serving loop).
#   At the end: the requests served in the awake wait and after wake-ups (homefs_fuse_served_total) and
#   why the waits ended (homefs_fuse_awake_wait_ends_total), over both phases.
set -e
B=$1; L=$2; N=${3:-10000}
T=$(mktemp -d ${STATE_ROOT:-/var/tmp}/cdel.XXXX); mkdir -p $T/c $T/s $T/m /dev/shm/cdel-$$
if [ -n "$PROF" ]; then export NODE_OPTIONS="--cpu-prof --cpu-prof-dir=$PROF"; fi
$B/bin/homefs mount o/h $T/m --store file:///dev/shm/cdel-$$ --cache-dir $T/c --state-dir $T/s $MOUNT_ARGS >/dev/null
unset NODE_OPTIONS
mkdir $T/m/d
metrics() { $B/bin/homefs status --metrics $T/m; }
cpu() { metrics | awk '/^process_cpu_seconds_total/ {print $2}'; }
ops() { metrics | awk '/^homefs_fuse_ops_total\{/ {sub(/.*op="/,""); sub(/".*\} /," "); printf "%s ", $0}'; }
if [ -n "$STRACE" ]; then
  pid=$($B/bin/homefs status $T/m --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
  strace -c -f -p $pid -o $STRACE & sp=$!; sleep 1
fi
phase() {
  local name=$1 code=$2
  local c0 s e c1 o0 o1
  o0=$(ops); c0=$(cpu); s=$(date +%s.%N)
  python3 -c "$code" $T/m/d $N
  e=$(date +%s.%N); c1=$(cpu); o1=$(ops)
  printf "%-8s %-7s daemon_cpu_s=%.2f wall_s=%.2f load=%s\n" $L $name $(echo "$c1 - $c0" | bc) $(echo "$e - $s" | bc) "$(cut -d' ' -f1 /proc/loadavg)"
  python3 - "$o0" "$o1" <<'PY'
import sys
def parse(s):
    t = s.split(); return {t[i]: float(t[i + 1]) for i in range(0, len(t) - 1, 2)}
a, b = parse(sys.argv[1]), parse(sys.argv[2])
print('         requests: ' + ' '.join(f'{k}={int(b[k] - a.get(k, 0))}' for k in sorted(b) if b[k] - a.get(k, 0) > 0))
PY
}
phase create 'import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
  with open(f"{d}/f{i}", "wb") as f: f.write(b"x" * 100)'
phase delete 'import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n): os.unlink(f"{d}/f{i}")'
if [ -n "$STRACE" ]; then kill -INT $sp; wait $sp || true; fi
echo "$L served: $(metrics | awk '/^homefs_fuse_(served_total|awake_wait_ends_total)\{/ {sub(/^homefs_fuse_[a-z_]*\{[a-z]*="/,""); sub(/".*\} /,"="); printf "%s ", $0}')"
$B/bin/homefs sleep $T/m >/dev/null 2>&1 || fusermount3 -u $T/m
sleep 1; rm -rf $T /dev/shm/cdel-$$

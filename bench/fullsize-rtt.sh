#!/usr/bin/env bash
# The full-size home over a real store, by hand: the test Ceph with its OSD on bluestore (memstore cannot
# hold 8 GB on this machine), the home pushed once at +0 ms, then through bench/latency-proxy.ts at +RTT ms
# (default 20), each step on a fresh state and cache directory with the page cache dropped:
#   find  a cold `find` over the never-mounted home (the hot-set record and wake pack removed first);
#   wake  the agent's resume (cat of a note, `git status` of the checkout, `grep -r` through its sources)
#         on a fresh host with no hot set;
#   move  the same on the next fresh host, after the wake's session recorded its hot set.
# Each prints the step's times since the mount started and the daemon's peak RSS; the move also prints what
# its warm-up fetched and the push pack served (`homefs status --json`), and its store requests by kind (`homefs status --metrics`).
#
#   bench/fullsize-rtt.sh [RTT]        (needs the home of bench/lib/agenthome.ts at scale 8 in $SRC)
#
# STEPS picks steps (default "find wake move"; a move alone takes the hot set the last session of the home
# recorded); HOMEFS=<a build's bin/homefs> mounts with another build (A/B, alternating by hand); WAIT=N
# waits N s after the mount returns and times the resume from then: what serving costs once the warm-up has
# brought everything in; PROF=DIR writes the daemon's CPU profile there (dist/bench/lib/tools/cpuwindow.js reads
# a window of it: each step prints its start on CLOCK_MONOTONIC); FTRACE=1 (root, a kernel with the fuse
# tracepoints) prints the FUSE requests of each client process as the kernel saw them during each step,
# waiting included, and each request of the first `cat` (bench/fusetrace.py; the trace is kept in $W).
# SRC defaults to /var/tmp/big/home (see bench/find-local.sh for how to make it); WORK to /var/tmp/s8. The
# Ceph keeps running afterwards (its state is in $HOMEFS_CEPH_DIR, default /var/tmp/bsceph): stop it with
# `HOMEFS_CEPH_DIR=/var/tmp/bsceph test/support/ceph.sh stop`. A second run reuses the pushed home while the
# cluster runs.
set -u
cd "$(dirname "$0")/.."
export PATH=/usr/local/bin:$PATH
RTT=${1:-20}
HOMEFS=${HOMEFS:-bin/homefs}
SRC=${SRC:-/var/tmp/big/home}
W=${WORK:-/var/tmp/s8}; mkdir -p "$W"
export HOMEFS_CEPH_OBJECTSTORE=bluestore HOMEFS_CEPH_DIR=${HOMEFS_CEPH_DIR:-/var/tmp/bsceph}
eval "$(test/support/ceph.sh start)" || exit 1
URL0=${HOMEFS_TEST_S3_URL/\/test\?/\/big?}
EP=$(echo "$URL0" | sed -E 's|.*endpoint=http://([^&]*).*|\1|')
MARK=$HOMEFS_CEPH_DIR/pushed-acme-big # gone with the cluster
if [ ! -e "$MARK" ]; then
  sync; echo 3 > /proc/sys/vm/drop_caches
  /usr/bin/time -f "push %e s, peak RSS %M KB" bin/homefs push "$SRC" acme/big --store "$URL0" && touch "$MARK"
fi
PORT=18020
node dist/bench/latency-proxy.js $PORT "$EP" "$RTT" & PX=$!
trap 'kill $PX 2>/dev/null' EXIT
sleep 1
URL=$(echo "$URL0" | sed -E "s|endpoint=http://[^&]*|endpoint=http://127.0.0.1:$PORT|")
M=$W/mnt; mkdir -p "$M"
now() { python3 -c 'import time; print(time.monotonic())'; }
since() { echo "$(now) - $1" | bc; }
TR=/sys/kernel/tracing
ftrace_on() {
  [ "${FTRACE:-0}" = 1 ] || return 0
  TRCLOCK=$(sed -E 's/.*\[([a-z0-9_-]+)\].*/\1/' $TR/trace_clock); TRKB=$(cat $TR/buffer_size_kb)
  echo 0 > $TR/tracing_on; echo mono > $TR/trace_clock; echo 32768 > $TR/buffer_size_kb; echo > $TR/trace
  echo 1 > $TR/events/fuse/fuse_request_send/enable; echo 1 > $TR/events/fuse/fuse_request_end/enable; echo 1 > $TR/tracing_on
}
ftrace_off() { # step name, its start (Unix seconds)
  [ "${FTRACE:-0}" = 1 ] || return 0
  echo 0 > $TR/tracing_on; cp $TR/trace "$W/$1.ftrace"
  echo 0 > $TR/events/fuse/fuse_request_send/enable; echo 0 > $TR/events/fuse/fuse_request_end/enable
  echo "$TRCLOCK" > $TR/trace_clock; echo "$TRKB" > $TR/buffer_size_kb; echo > $TR/trace # (as they were)
  bench/fusetrace.py "$W/$1.ftrace" "$2" 60 cat | sed 's/^/  ftrace: /'
}
step() { # name, function
  local n=$1 t0 pid unix0
  rm -rf "$W/state-$n" "$W/cache-$n"; sync; echo 3 > /proc/sys/vm/drop_caches
  ftrace_on
  unix0=$(date +%s.%N)
  t0=$(now)
  ${PROF:+env NODE_OPTIONS=--cpu-prof\ --cpu-prof-dir=$PROF} $HOMEFS mount acme/big "$M" --store "$URL" --state-dir "$W/state-$n" --cache-dir "$W/cache-$n" > /dev/null || { echo "$n: mount failed"; return 1; }
  echo "$n (+$RTT ms): mount returns $(since "$t0") s (started at $t0)"
  if [ -n "${WAIT:-}" ]; then sleep "$WAIT"; t0=$(now); echo "  (timed from $WAIT s after the mount)"; fi
  "$2" "$t0"
  ftrace_off "$n" "$unix0"
  pid=$($HOMEFS status "$M" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
  [ "$n" = move ] && report
  echo "  daemon peak RSS: $(grep VmHWM /proc/"$pid"/status | awk '{print $2, $3}')"
  $HOMEFS sleep "$M" > /dev/null
}
dofind() { local n; n=$(find "$M" | wc -l); echo "  find ends $(since "$1") s, $n entries"; }
resume() {
  cat "$M/notes/u0.txt" > /dev/null; echo "  cat ends $(since "$1") s"
  git -C "$M/projects/app" status --porcelain > /dev/null; echo "  git status ends $(since "$1") s"
  local l; l=$(grep -r abc "$M/projects/app/src" | wc -l); echo "  grep -r ends $(since "$1") s ($l lines)"
}
report() {
  $HOMEFS status "$M" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); w=d["hotset"].get("warm") or {}; p=d.get("pushpack") or {}; print("  warm-up:", {k: w.get(k) for k in ["entries","fromPack","prefetched","bytesFetched","ms"]}, "push pack:", {k: p.get(k) for k in ["blocks","served"]}, "bytes fetched in all:", d["bytesFetched"])'
  $HOMEFS status --metrics "$M" | grep -E '^homefs_store_requests_total' | sed -E 's/^homefs_store_requests_total\{op="([^"]*)",kind="([^"]*)".*\} /  requests \1 \2: /'
}
for s in ${STEPS:-find wake move}; do
  case $s in
    find) node dist/bench/lib/tools/forget-hints.js "$URL0" acme/big; step find dofind ;;
    wake) node dist/bench/lib/tools/forget-hints.js "$URL0" acme/big; step wake resume ;;
    move) step move resume ;;
    *) echo "unknown step $s (find, wake, move)"; exit 2 ;;
  esac
done

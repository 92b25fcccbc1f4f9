#!/usr/bin/env bash
# `grep -r` through one directory of a home mounted again on the same host (new state directory, the block
# cache of the mount before it), by hand: native, the reference C FUSE server (libfuse's passthrough_hp, kept
# outside the repository; REF unset leaves it out) and homefs builds, ROUNDS times in alternation:
#
#   SRC=<tree on ext4> [DIR=projects/app/src] [REF=<fuse-reference dir>] [WORK=/var/tmp/grep-remount] \
#     [STORE=<store URL>] [ROUNDS=2] bench/grep-remount.sh <checkout with a built bin/homefs> ...
#
# The tree is pushed once to STORE (default: a file:// store under WORK; on the test Ceph, e.g. STORE=$(echo
# "$HOMEFS_TEST_S3_URL" | sed -E 's#(s3://[^/]+/[^?]*)#\1-grep#') after test/support/ceph.sh start). Each homefs round mounts once to bring DIR's blocks
# into a new cache directory (one grep, then sleep), then mounts again on that cache and times the first grep
# (the kernel's caches of the mount are cold, the cache's files are in the page cache) and a second one.
# The reference needs its library beside it as libfuse3.so.4 (LIB, default $REF/lib). PROF=DIR runs the
# remounted daemon under --cpu-prof and prints its first grep's window on CLOCK_MONOTONIC, for
# dist/bench/lib/tools/cpuwindow.js <profile> <from> <to>.
set -eu
SRC=${SRC:?a tree on ext4}; D=${DIR:-projects/app/src}
WORK=${WORK:-/var/tmp/grep-remount}; M=$WORK/mnt; mkdir -p "$M"
t() { local s n; s=$(date +%s.%N); n=$(grep -r abc "$1" | wc -l); echo "$(echo "$(date +%s.%N)-$s" | bc) s ($n lines)"; }
first=$1
STORE=${STORE:-file://$WORK/store}
"$first/bin/homefs" log acme/grep --store "$STORE" > /dev/null 2>&1 || "$first/bin/homefs" push "$SRC" acme/grep --store "$STORE" > /dev/null 2>&1
find "$SRC/$D" -type f -exec cat {} + > /dev/null
for r in $(seq "${ROUNDS:-2}"); do
  echo "round $r native: $(t "$SRC/$D"), again $(t "$SRC/$D")"
  if [ -n "${REF:-}" ]; then
    LD_LIBRARY_PATH=${LIB:-$REF/lib} "$REF/passthrough_hp" --foreground "$SRC" "$M" > "$WORK/ref.log" 2>&1 &
    ref=$!
    for _ in $(seq 50); do mountpoint -q "$M" && break; sleep 0.1; done
    echo "round $r reference: $(t "$M/$D"), again $(t "$M/$D")"
    fusermount3 -u "$M"; wait $ref || true
  fi
  for b in "$@"; do
    rm -rf "$WORK/state" "$WORK/cache"
    "$b/bin/homefs" mount acme/grep "$M" --store "$STORE" --state-dir "$WORK/state" --cache-dir "$WORK/cache" > /dev/null
    t "$M/$D" > /dev/null
    "$b/bin/homefs" sleep "$M" > /dev/null
    rm -rf "$WORK/state"
    ${PROF:+env NODE_OPTIONS=--cpu-prof\ --cpu-prof-dir=$PROF} "$b/bin/homefs" mount acme/grep "$M" --store "$STORE" --state-dir "$WORK/state" --cache-dir "$WORK/cache" > /dev/null
    from=$(python3 -c 'import time; print(time.monotonic())'); first=$(t "$M/$D"); to=$(python3 -c 'import time; print(time.monotonic())')
    echo "round $r homefs $b, remounted: $first, again $(t "$M/$D")${PROF:+ (first grep from $from to $to)}"
    "$b/bin/homefs" sleep "$M" > /dev/null
  done
done

#!/usr/bin/env bash
# `git status` alone on a fresh host over a file:// store (no prefetch, no latency), by hand:
#
#   SRC=<agent home> REPO=<repo inside it> bench/git-status-alone.sh [HOMEFS_BIN...]
#
# For each homefs binary (default: this checkout's bin/homefs): push SRC to a new file:// store, drop the
# page cache, mount on empty cache and state dirs, time `git status` in REPO, and print the objects and
# bytes the mount fetched for it (`homefs status --json`) and the size of the store's trees and snapshot.
# SRC defaults to bench/run's --scale 0.3 agent home; give it a refreshed git index (git update-index
# --refresh), as an agent's own `git status` keeps it.
set -u
cd "$(dirname "$0")/.."
SRC=${SRC:-/var/tmp/homefs-bench-after/inputs/agent-s0.3}
REPO=${REPO:-projects/app}
[ $# -gt 0 ] || set -- "$PWD/bin/homefs"
for B in "$@"; do
  W=$(mktemp -d /var/tmp/git-status-alone-XXXX); mkdir -p "$W/mnt"
  "$B" push "$SRC" bench/agent --store "file://$W/store" > /dev/null 2>&1
  meta=$(du -sb "$W/store/bench/meta" | cut -f1)
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
  "$B" mount bench/agent "$W/mnt" --store "file://$W/store" --state-dir "$W/state" --cache-dir "$W/cache" > /dev/null 2>&1
  t0=$(date +%s.%N); lines=$(cd "$W/mnt/$REPO" && git status --porcelain | wc -l); t1=$(date +%s.%N)
  fetched=$("$B" status "$W/mnt" --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["cacheMisses"], "objects,", s["bytesFetched"], "bytes")')
  echo "$B: git status $(echo "$t1 - $t0" | bc) s ($lines lines); fetched $fetched; trees+snapshot $meta bytes; load $(cut -d' ' -f1 /proc/loadavg)"
  "$B" sleep "$W/mnt" > /dev/null 2>&1
  rm -rf "$W"
done

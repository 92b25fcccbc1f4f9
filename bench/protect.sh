#!/usr/bin/env bash
# bench/protect.sh [--rtt LIST] [--rounds N] [--tar FILE] [--work DIR]
# Continuous protection against the test Ceph behind a latency proxy (bench/latency-proxy.ts), side by
# side for each variant in VARIANTS ("name=extra mount flags;name=flags", default: without write-behind
# and protection, and the defaults): on a fresh home, the foreground `tar x` of an archive (default: of
# /usr/include), then the write + fsync of a 50-byte file right after it, a second `tar x` into another
# directory, and `homefs sleep` right after that. Prints one line per variant, RTT and round (seconds).
# Needs: test/support/ceph.sh (started or reused here). Cleans up its mounts and its bucket prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
rtts=0,20 rounds=1 tarball= work=/var/tmp/homefs-protect-bench
while (($#)); do
  case $1 in
    --rtt) rtts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --tar) tarball=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
VARIANTS=${VARIANTS:-"off=--no-write-behind --protect-interval 0;on="}
HOMEFS=${HOMEFS:-bin/homefs}
eval "$(test/support/ceph.sh start 2>/dev/null)"
export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
up=$(sed -E 's#.*endpoint=http://([0-9.]+:[0-9]+).*#\1#' <<<"$HOMEFS_TEST_S3_URL")
mkdir -p "$work"
if [[ -z $tarball ]]; then
  tarball=$work/include.tar
  [[ -e $tarball ]] || tar cf "$tarball" -C /usr include
fi
proxy_pid=
mnt=$work/mnt
cleanup() {
  mountpoint -q "$mnt" && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; }
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null || true
}
trap cleanup EXIT
secs() { local t0=$1; echo "scale=3; ($(date +%s%N) - $t0) / 1000000000" | bc; }
fsync_small() { python3 -c "import os,sys; f=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644); os.write(f, b'n'*50); os.fsync(f); os.close(f)" "$1"; }
IFS=',' read -ra rttlist <<<"$rtts"
IFS=';' read -ra variants <<<"$VARIANTS"
for rtt in "${rttlist[@]}"; do
  port=$((20000 + RANDOM % 20000))
  node dist/bench/latency-proxy.js "$port" "$up" "$rtt" >/dev/null &
  proxy_pid=$!
  sleep 0.5
  for round in $(seq 1 "$rounds"); do
    for v in "${variants[@]}"; do
      name=${v%%=*} flags=${v#*=}
      prefix=bench-protect-$(date +%s)-$RANDOM
      store="s3://homefs-test/$prefix?endpoint=http://127.0.0.1:$port&region=us-east-1&pathStyle=true"
      rm -rf "$work/state" "$work/cache" && mkdir -p "$mnt"
      # shellcheck disable=SC2086
      "$HOMEFS" mount acme/protect "$mnt" --store "$store" --state-dir "$work/state" --cache-dir "$work/cache" $flags >/dev/null
      t=$(date +%s%N); tar xf "$tarball" -C "$mnt"; tarx=$(secs "$t")
      t=$(date +%s%N); fsync_small "$mnt/note.txt"; fs=$(secs "$t")
      mkdir "$mnt/again"
      t=$(date +%s%N); tar xf "$tarball" -C "$mnt/again"; tarx2=$(secs "$t")
      wb=$("$HOMEFS" status "$mnt" --json | python3 -c 'import json,sys; p=json.load(sys.stdin).get("protection") or {}; print(p.get("backlogFiles", "-"), p.get("blocksUploaded", "-"))')
      t=$(date +%s%N); "$HOMEFS" sleep "$mnt" >/dev/null; sl=$(secs "$t")
      echo "rtt=${rtt}ms round=$round variant=$name tar_x=${tarx}s fsync_after=${fs}s tar_x2=${tarx2}s backlog_blocks_at_sleep='$wb' sleep_after=${sl}s"
    done
  done
  kill "$proxy_pid" 2>/dev/null || true
  proxy_pid=
done

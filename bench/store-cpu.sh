#!/usr/bin/env bash
# The store's own CPU per uploaded object (docs/decisions/0068-loss-window-and-foreground-first.md): /usr/include is unpacked
# into a fresh mount with write-behind and protection off, then `homefs sleep` uploads it; prints the sleep's
# wall time and the CPU the test Ceph's RGW and OSD used meanwhile (from /proc/PID/stat), and the files sealed.
#   [RTT=20] bench/store-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/ceph-env.sh
. bench/lib/ceph-env.sh
export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
W=$(mktemp -d /var/tmp/store-cpu.XXXXXX); mkdir -p "$W/mnt"
tar cf "$W/include.tar" -C /usr include
node dist/bench/latency-proxy.js 23457 "$up" "${RTT:-20}" >/dev/null & PX=$!
trap 'kill $PX 2>/dev/null || true; fusermount3 -u "$W/mnt" 2>/dev/null || true; rm -rf "$W"' EXIT
sleep 0.5
STORE="s3://$bucket/store-cpu-$$?endpoint=http://127.0.0.1:23457&region=us-east-1&pathStyle=true"
bin/homefs mount acme/storecpu "$W/mnt" --store "$STORE" --state-dir "$W/st" --cache-dir "$W/ca" --no-write-behind --protect-interval 0 >/dev/null
tar xf "$W/include.tar" -C "$W/mnt"
s0=$(srv); t0=$(date +%s.%N)
bin/homefs sleep "$W/mnt" >/dev/null
t1=$(date +%s.%N); s1=$(srv)
files=$(grep -o '"files":[0-9]*' "$W/st/daemon.log" | tail -1 | cut -d: -f2)
echo "sleep $(echo "$t1 - $t0" | bc) s; RGW + OSD CPU $(echo "($s1 - $s0) / $(getconf CLK_TCK)" | bc -l | cut -c1-6) s; files sealed $files"

#!/usr/bin/env bash
# Just the mount, side by side: builds A and B mount the same home at each +RTT ms (main's latency proxy,
# bench/lib/tools/rttproxy) over the shared test Ceph, by hand:
#
#   [SRC=<dir>] [ROUNDS=4] bench/wake-mount.sh "0 200" LABEL=PATH/TO/bin/homefs LABEL=PATH/TO/bin/homefs
#
# Each mount is of a fresh fork of one pushed home (no hot set, no namespace pack), from empty dirs, builds
# alternating. Per mount: wall time until `homefs mount` returns, the CPU time (user+sys) of the command and
# of the daemon up to then, and the store requests the proxy saw. At a large RTT the wall time shows the
# round trips on the critical path; the CPU times show the start-up work, which a loaded machine (2 cores
# shared with other jobs) stretches far less than the wall time. Prints the median per build and RTT.
set -u
cd "$(dirname "$0")/.."
eval "$(test/support/ceph.sh start 2>/dev/null)"
S3=$HOMEFS_TEST_S3_URL
port=$(echo "$S3" | sed -E 's/.*endpoint=http:\/\/127.0.0.1:([0-9]+).*/\1/')
DIRECT=$(echo "$S3" | sed -E "s#(s3://[^/]+/[^?]*)#\1-wakemount-$$#")
SRC=${SRC:-/var/tmp/mount-bench/inputs/agent-s0.25/notes}
ROUNDS=${ROUNDS:-4}
RTTS=$1; shift
now() { date +%s.%N; }
bin/homefs push "$SRC" bench/src --store "$DIRECT" >/dev/null 2>&1 || { echo "push failed"; exit 1; }
out=$(mktemp /var/tmp/wakemount-XXXX.txt)
tck=$(getconf CLK_TCK)
for rtt in $RTTS; do
  node dist/bench/lib/tools/rttproxy.js "$port" "$rtt" /var/tmp/wakemount-rtt.port > /var/tmp/wakemount-rtt.out 2>&1 & PX=$!
  sleep 1; pport=$(cat /var/tmp/wakemount-rtt.port)
  URL=$(echo "$DIRECT" | sed -E "s#127.0.0.1:$port#127.0.0.1:$pport#")
  for ((r = 1; r <= ROUNDS; r++)); do
    builds=("$@"); ((r % 2 == 0)) && builds=($(printf '%s\n' "$@" | tac))
    for build in "${builds[@]}"; do
      label=${build%%=*}; B=${build#*=}
      home=bench/m$rtt-$r-$label
      bin/homefs fork bench/src "$home" --store "$DIRECT" >/dev/null 2>&1 || { echo "fork $home failed"; continue; }
      base=$(mktemp -d /var/tmp/wakemount-XXXX); mkdir -p "$base/mnt"
      t0=$(now)
      /usr/bin/time -f '%U %S' -o "$base/time" "$B" mount "$home" "$base/mnt" --store "$URL" --cache-dir "$base/cache" --state-dir "$base/state" >/dev/null 2>&1
      t1=$(now)
      pid=$(cat "$base/state/daemon.pid" 2>/dev/null | head -1 | tr -dc 0-9)
      dcpu=$(awk -v t="$tck" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$pid/stat" 2>/dev/null)
      ccpu=$(awk '{ printf "%.3f", $1 + $2 }' "$base/time")
      printf '%s rtt %s mount %.3f s cpu-command %s cpu-daemon %s\n' "$label" "$rtt" "$(echo "$t1-$t0" | bc)" "$ccpu" "${dcpu:-n/a}" | tee -a "$out"
      "$B" sleep "$base/mnt" >/dev/null 2>&1
      rm -rf "$base"
    done
  done
  kill -INT $PX; wait $PX
done
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'; }
echo "medians ($ROUNDS rounds):"
for rtt in $RTTS; do
  for build in "$@"; do
    label=${build%%=*}
    sel() { awk -v l="$label" -v r="$rtt" -v f="$1" '$1 == l && $3 == r { print $f }' "$out"; }
    printf '  +%s ms %s: mount %s s, cpu command %s s, cpu daemon %s s\n' "$rtt" "$label" "$(sel 5 | med)" "$(sel 8 | med)" "$(sel 10 | med)"
  done
done
rm -f "$out"

#!/usr/bin/env bash
# Wake side by side: builds A and B (e.g. main's and this branch's bin/homefs) resume the same agent home
# at +RTT ms through main's latency proxy (bench/lib/tools/rttproxy), over the shared test Ceph, by hand:
#
#   SRC=<agent home> [ROUNDS=3] [RTT=20] bench/wake-ab.sh LABEL=PATH/TO/bin/homefs LABEL=PATH/TO/bin/homefs
#
# The home is pushed once (directly); each wake mounts a fork of it made for that wake alone (so no wake
# finds a hot set or namespace pack another one left), from empty cache and state dirs with the page cache
# dropped, and times: the mount command returning, then cat, git status and grep -r (bench/wake-resume.sh's
# resume). Builds alternate their order each round. Prints one line per wake, with its wake.phases line
# (daemon log; n/a for builds without it), then the median of each build.
set -u
cd "$(dirname "$0")/.."
eval "$(test/support/ceph.sh start 2>/dev/null)"
S3=$HOMEFS_TEST_S3_URL
port=$(echo "$S3" | sed -E 's/.*endpoint=http:\/\/127.0.0.1:([0-9]+).*/\1/')
DIRECT=$(echo "$S3" | sed -E "s#(s3://[^/]+/[^?]*)#\1-wakeab-$$#")
SRC=${SRC:-/var/tmp/mount-bench/inputs/agent-s0.25}
ROUNDS=${ROUNDS:-3}
RTT=${RTT:-20}
now() { date +%s.%N; }
t=$(now); bin/homefs push "$SRC" bench/src --store "$DIRECT" >/dev/null 2>&1; echo "push $(echo "$(now) - $t" | bc) s"
out=$(mktemp /var/tmp/wakeab-XXXX.txt)
node dist/bench/lib/tools/rttproxy.js "$port" "$RTT" /var/tmp/wakeab-rtt.port > /var/tmp/wakeab-rtt.out 2>&1 & PX=$!
sleep 1; pport=$(cat /var/tmp/wakeab-rtt.port)
URL=$(echo "$DIRECT" | sed -E "s#127.0.0.1:$port#127.0.0.1:$pport#")
for ((r = 1; r <= ROUNDS; r++)); do
  builds=("$@"); ((r % 2 == 0)) && builds=($(printf '%s\n' "$@" | tac))
  for build in "${builds[@]}"; do
    label=${build%%=*}; B=${build#*=}
    home=bench/r$r-$label
    bin/homefs fork bench/src "$home" --store "$DIRECT" >/dev/null 2>&1 || { echo "fork $home failed"; continue; }
    base=$(mktemp -d /var/tmp/wakeab-XXXX); mkdir -p "$base/mnt"
    sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
    t0=$(now)
    "$B" mount "$home" "$base/mnt" --store "$URL" --cache-dir "$base/cache" --state-dir "$base/state" >/dev/null 2>&1
    t1=$(now); cat "$base/mnt/notes/u0.txt" > /dev/null
    t2=$(now); (cd "$base/mnt/projects/app" && git status > /dev/null 2>&1)
    t3=$(now); n=$(grep -r abc "$base/mnt/projects/app/src" | wc -l)
    t4=$(now)
    ph=$(grep -h '"wake.phases"' "$base/state/daemon.log" 2>/dev/null | sed -E 's/.*"ms":(\{[^}]*\}).*/\1/')
    printf '%s mount %.3f cat-end %.3f git-end %.3f grep-end %.3f s; grep lines %s; phases %s\n' "$label" \
      "$(echo "$t1-$t0" | bc)" "$(echo "$t2-$t0" | bc)" "$(echo "$t3-$t0" | bc)" "$(echo "$t4-$t0" | bc)" "$n" "${ph:-n/a}" | tee -a "$out"
    "$B" sleep "$base/mnt" >/dev/null 2>&1
    rm -rf "$base"
  done
done
kill -INT $PX; wait $PX
echo "median of $ROUNDS rounds at +$RTT ms:"
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'; }
for build in "$@"; do
  label=${build%%=*}
  printf '  %s: mount %s cat-end %s git-end %s grep-end %s s (n=%s)\n' "$label" \
    "$(awk -v l="$label" '$1 == l { print $3 }' "$out" | med)" "$(awk -v l="$label" '$1 == l { print $5 }' "$out" | med)" \
    "$(awk -v l="$label" '$1 == l { print $7 }' "$out" | med)" "$(awk -v l="$label" '$1 == l { print $9 }' "$out" | med)" \
    "$(awk -v l="$label" '$1 == l' "$out" | wc -l)"
done
rm -f "$out"

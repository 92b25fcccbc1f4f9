#!/usr/bin/env bash
# The first `find` over a never-mounted home, by hand, with the store RTT ms away (bench/lib/tools/rttproxy
# in front of the shared test Ceph):
#
#   [SRC=<dir>] [ROUNDS=5] [MOUNT_ARGS="--read-only"] bench/find-cold.sh RTT name=PATH/TO/bin/homefs ...
#   (or BINS="a=path b=path" bench/find-cold.sh RTT)
#
# SRC (default: an agent home of bench/lib/agenthome.ts) is pushed once with the first build; each round
# then mounts it with every build in turn (alternating order), from new cache and state directories, and
# times `find <mnt> | wc -l`: the mount's wake reads the namespace pack, and find then walks every
# directory. Between mounts the home's hot-set record and wake pack are removed (forget-hints), so every
# wake sees only what push stored. Prints per mount the wall time of find and the entries it listed, the
# daemon's CPU time during find, and the median per build.
set -u
cd "$(dirname "$0")/.."
RTT=${1:?usage: find-cold.sh RTT [name=bin ...]}; shift
builds=("$@"); [ ${#builds[@]} -eq 0 ] && read -r -a builds <<< "${BINS:-this=bin/homefs}"
eval "$(test/support/ceph.sh status 2>/dev/null || test/support/ceph.sh start 2>/dev/null)"
export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
S3=$HOMEFS_TEST_S3_URL
port=$(echo "$S3" | sed -E 's/.*endpoint=http:\/\/127.0.0.1:([0-9]+).*/\1/')
DIRECT=$(echo "$S3" | sed -E "s#(s3://[^/]+/[^?]*)#\1-findcold#")
SRC=${SRC:-/var/tmp/findbench/home}
ROUNDS=${ROUNDS:-5}
MOUNT_ARGS=${MOUNT_ARGS:-}
HOME_REF=bench/find
now() { date +%s.%N; }
tck=$(getconf CLK_TCK)
dcpu() { awk -v t="$tck" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat" 2>/dev/null; }
if [ ! -d "$SRC" ]; then
  node -e "import('$PWD/dist/bench/lib/agenthome.js').then((m) => m.agentHome('$SRC', 0.87, 'find'))" || exit 1
fi
first=${builds[0]#*=}
"$first" push "$SRC" "$HOME_REF" --store "$DIRECT" >/dev/null || { echo "push failed"; exit 1; }
node dist/bench/lib/tools/forget-hints.js "$DIRECT" "$HOME_REF"
node dist/bench/lib/tools/rttproxy.js "$port" "$RTT" /var/tmp/findcold-rtt.port > /var/tmp/findcold-rtt.out 2>&1 & PX=$!
sleep 1; pport=$(cat /var/tmp/findcold-rtt.port)
URL=$(echo "$DIRECT" | sed -E "s#127.0.0.1:$port#127.0.0.1:$pport#")
out=$(mktemp /var/tmp/findcold-XXXX.txt)
for ((r = 1; r <= ROUNDS; r++)); do
  order=("${builds[@]}"); ((r % 2 == 0)) && order=($(printf '%s\n' "${builds[@]}" | tac))
  for build in "${order[@]}"; do
    label=${build%%=*}; B=${build#*=}
    base=$(mktemp -d /var/tmp/findcold-XXXX); mkdir -p "$base/mnt"
    # shellcheck disable=SC2086
    "$B" mount "$HOME_REF" "$base/mnt" --store "$URL" --cache-dir "$base/cache" --state-dir "$base/state" $MOUNT_ARGS >/dev/null 2>&1 || { echo "mount failed"; continue; }
    pid=$(head -1 "$base/state/daemon.pid" 2>/dev/null | tr -dc 0-9)
    c0=$(dcpu "$pid"); t0=$(now)
    n=$(find "$base/mnt" | wc -l)
    t1=$(now); c1=$(dcpu "$pid")
    printf '%s round %d find %.3f s entries %d cpu-daemon %.3f s\n' "$label" "$r" "$(echo "$t1-$t0" | bc)" "$n" "$(echo "${c1:-0}-${c0:-0}" | bc)" | tee -a "$out"
    "$B" sleep "$base/mnt" >/dev/null 2>&1 || fusermount3 -u "$base/mnt" 2>/dev/null
    node dist/bench/lib/tools/forget-hints.js "$DIRECT" "$HOME_REF"
    rm -rf "$base"
  done
done
kill -INT $PX; wait $PX 2>/dev/null
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'; }
echo "medians ($ROUNDS rounds, +$RTT ms${MOUNT_ARGS:+, $MOUNT_ARGS}):"
for build in "${builds[@]}"; do
  label=${build%%=*}
  sel() { awk -v l="$label" -v f="$1" '$1 == l { print $f }' "$out"; }
  printf '  %s: find %s s, cpu daemon %s s, entries %s\n' "$label" "$(sel 5 | med)" "$(sel 10 | med)" "$(sel 8 | med)"
done
rm -f "$out"

#!/usr/bin/env bash
# homefs pull of two builds and restic restore, side by side, over the test Ceph behind a counting latency
# proxy (bench/counting-proxy.ts) (docs/benchmarks.md, "5. Push and pull").
#   bench/pull-ab.sh <before checkout, built> <home dir> [RTT_MS ...]   (default RTTs: 0 20; ROUNDS=N, default 1)
# The home is pushed once (this checkout's build, straight to RGW) and backed up once with restic; then per
# RTT and round: before pull, after pull, restic restore, each with the page cache dropped first (root).
# Per step: wall time, client CPU (user+sys, children included), client peak RSS, RGW + OSD CPU during the
# step (the shared test Ceph: includes whatever else uses it meanwhile), store requests (the proxy's count)
# and the 1-min load. Set PROFILE=DIR to also write a --cpu-prof of each homefs pull into DIR; PUSHED=PREFIX
# to pull a home pushed before to PREFIX (as bench/agent) and backed up to PREFIX-restic (kept afterwards).
# Each step writes into a directory of its own, all removed at the end: a step right after `rm -rf` of the
# previous one's ~24k files paid for that delete on this machine's root ext4, which has no journal (the
# kernel then skips inodes freed in the last 60 s, 360 s while their table block is dirty, scanning them
# again for every file created: up to half of a pull's system time, whoever ran second). Start a run a
# minute after any large delete on the same filesystem.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 <before checkout, built> <home dir> [RTT_MS ...]" >&2; exit 2; }
before=$(realpath "$1"); home=$(realpath "$2"); shift 2
rtts=("$@"); [ ${#rtts[@]} -eq 0 ] && rtts=(0 20)
rounds=${ROUNDS:-1}
# shellcheck source=lib/ceph-env.sh
. bench/lib/ceph-env.sh
work=$(mktemp -d /var/tmp/pull-ab.XXXXXX)
p=${PUSHED:-pull-ab-$$}
proxy=
purge() {
  env -u AWS_CA_BUNDLE RCLONE_CONFIG_BS_TYPE=s3 RCLONE_CONFIG_BS_PROVIDER=Ceph RCLONE_CONFIG_BS_ENDPOINT="http://$up" \
    RCLONE_CONFIG_BS_ENV_AUTH=true RCLONE_CONFIG_BS_REGION=us-east-1 RCLONE_CONFIG_BS_FORCE_PATH_STYLE=true \
    rclone purge "bs:$bucket/$1" --config /dev/null --checkers 32 --log-level ERROR 2>/dev/null || true
}
cleanup() {
  if [ -n "$proxy" ]; then kill "$proxy" 2>/dev/null || true; fi
  if [ -z "${PUSHED:-}" ]; then purge "$p"; purge "$p-restic"; fi
  rm -rf "$work"
}
trap cleanup EXIT
count() { kill -USR1 "$proxy"; sleep 0.3; node -e "console.log(JSON.parse(require('fs').readFileSync('$work/count','utf8')).total)"; }
measure() { # label command...
  local label=$1 s0 l0 e u s m r0; shift
  sync; echo 3 > /proc/sys/vm/drop_caches
  s0=$(srv); l0=$(cut -d' ' -f1 /proc/loadavg); count >/dev/null # the proxy counts since its last report
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/out" 2>&1; then echo "$label FAILED: $(tail -1 "$work/out")"; return; fi
  read -r e u s m < "$work/time"
  printf "%-22s wall %6.2f s  client CPU %6.2f s (user %5.2f sys %5.2f)  RSS %5d MB  server CPU %6.2f s  requests %5d  load %s\n" \
    "$label" "$e" "$(echo "$u + $s" | bc)" "$u" "$s" "$((m / 1024))" "$(echo "($(srv) - $s0) / 100" | bc -l)" "$(count)" "$l0"
}
direct="s3://$bucket/$p?endpoint=http://$up&region=us-east-1&pathStyle=true"
export RESTIC_PASSWORD=bench RESTIC_CACHE_DIR=$work/rc1
if [ -z "${PUSHED:-}" ]; then
  echo "setup: push and restic backup of $home (untimed)"
  node dist/src/cli/main.js push "$home" bench/agent --store "$direct" > /dev/null
  RESTIC_REPOSITORY=s3:http://$up/$bucket/$p-restic restic --quiet init > /dev/null
  (cd "$home" && RESTIC_REPOSITORY=s3:http://$up/$bucket/$p-restic restic --quiet backup --host a . > /dev/null)
fi
for rtt in "${rtts[@]}"; do
  node dist/bench/counting-proxy.js "$up" "$rtt" "$work/count" > "$work/port" & proxy=$!
  for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
  port=$(cat "$work/port")
  store="s3://$bucket/$p?endpoint=http://127.0.0.1:$port&region=us-east-1&pathStyle=true"
  for round in $(seq "$rounds"); do
    for v in before after restic; do
      if [ $v = restic ]; then
        RESTIC_REPOSITORY=s3:http://127.0.0.1:$port/$bucket/$p-restic RESTIC_CACHE_DIR=$work/rc-$rtt-$round \
          measure "+$rtt restic restore" restic --quiet restore latest --target "$work/restored-$rtt-$round"
      else
        bin=$PWD/dist/src/cli/main.js; [ $v = before ] && bin=$before/dist/src/cli/main.js
        prof=(); [ -n "${PROFILE:-}" ] && prof=(--cpu-prof --cpu-prof-dir="$PROFILE/$v-$rtt-$round")
        measure "+$rtt $v pull" node "${prof[@]}" "$bin" pull bench/agent "$work/pulled-$v-$rtt-$round" --store "$store"
      fi
    done
  done
  kill "$proxy"; wait "$proxy" 2>/dev/null || true; proxy=
done

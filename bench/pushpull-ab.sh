#!/usr/bin/env bash
# push and pull of two homefs builds and restic, side by side, over the test Ceph behind
# bench/latency-proxy.ts (docs/benchmarks.md, "5. Push and pull").
#   bench/pushpull-ab.sh <before checkout, built> <home dir> [RTT_MS ...]   (default RTTs: 0 20)
#   ONLY="before restic" bench/pushpull-ab.sh ...   runs only those (a step to repeat)
# Per step: wall time, client CPU (user+sys, children included), client peak RSS, RGW + OSD CPU during the step (the shared
# test Ceph: includes whatever else uses it meanwhile), the store requests by method (bench/counting-proxy.ts) and the 1-min load. Page cache dropped before each
# step (root). Every step uses a fresh prefix of the bucket.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 <before checkout, built> <home dir> [RTT_MS ...]" >&2; exit 2; }
before=$(realpath "$1"); home=$(realpath "$2"); shift 2
rtts=("$@"); [ ${#rtts[@]} -eq 0 ] && rtts=(0 20)
eval "$(test/support/ceph.sh start 2>/dev/null)"
up=$(echo "$HOMEFS_TEST_S3_URL" | sed -E 's#.*endpoint=http://([0-9.]+:[0-9]+).*#\1#')
bucket=$(echo "$HOMEFS_TEST_S3_URL" | sed -E 's#s3://([^/?]+).*#\1#')
cephdir=${HOMEFS_CEPH_DIR:-/tmp/homefs-ceph-$(id -u)}
rgw=$(cat "$cephdir/run/client.rgw.pid"); osd=$(cat "$cephdir/run/osd.0.pid")
srv() { echo $(( $(awk '{print $14+$15}' /proc/$rgw/stat) + $(awk '{print $14+$15}' /proc/$osd/stat) )); }
work=$(mktemp -d /var/tmp/pushpull-ab.XXXXXX)
proxy=
# Every prefix written is deleted again, also on failure (the test Ceph keeps objects in RAM).
purge() {
  env -u AWS_CA_BUNDLE RCLONE_CONFIG_BS_TYPE=s3 RCLONE_CONFIG_BS_PROVIDER=Ceph RCLONE_CONFIG_BS_ENDPOINT="http://$up" \
    RCLONE_CONFIG_BS_ENV_AUTH=true RCLONE_CONFIG_BS_REGION=us-east-1 RCLONE_CONFIG_BS_FORCE_PATH_STYLE=true \
    rclone purge "bs:$bucket/$1" --config /dev/null --checkers 32 --log-level ERROR 2>/dev/null || true
}
p=
cleanup() {
  if [ -n "$proxy" ]; then kill "$proxy" 2>/dev/null || true; fi
  if [ -n "$p" ]; then purge "$p"; fi
  rm -rf "$work"
}
trap cleanup EXIT
measure() { # label command...
  local label=$1 s0 l0 e u s; shift
  s0=$(srv); l0=$(cut -d' ' -f1 /proc/loadavg); sync; echo 3 > /proc/sys/vm/drop_caches
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/out" 2>&1; then echo "$label FAILED: $(tail -1 "$work/out")"; return; fi
  read -r e u s m < "$work/time"
  kill -USR1 "$proxy"; sleep 0.5
  printf "%-22s wall %6.2f s  client CPU %6.2f s  RSS %5d MB  server CPU %6.2f s  load %s  requests %s\n" "$label" "$e" "$(echo "$u + $s" | bc)" "$((m / 1024))" "$(echo "($(srv) - $s0) / 100" | bc -l)" "$l0" "$(cat "$work/counts")"
}
for rtt in "${rtts[@]}"; do
  node dist/bench/counting-proxy.js "$up" "$rtt" "$work/counts" > "$work/port" & proxy=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
  port=$(cat "$work/port")
  for v in ${ONLY:-before after restic}; do
    p=pushpull-ab-$v-$rtt-$$
    store="s3://$bucket/$p?endpoint=http://127.0.0.1:$port&region=us-east-1&pathStyle=true"
    if [ $v = restic ]; then
      export RESTIC_REPOSITORY=s3:http://127.0.0.1:$port/$bucket/$p RESTIC_PASSWORD=bench RESTIC_CACHE_DIR=$work/rc1
      restic --quiet init > /dev/null; kill -USR1 "$proxy"
      measure "+$rtt restic backup" bash -c "cd '$home' && restic --quiet backup --host a ."
      RESTIC_CACHE_DIR=$work/rc2 measure "+$rtt restic restore" restic --quiet restore latest --target "$work/restored"
    else
      bin=$PWD/dist/src/cli/main.js; [ $v = before ] && bin=$before/dist/src/cli/main.js
      measure "+$rtt $v push" node "$bin" push "$home" bench/agent --store "$store"
      measure "+$rtt $v pull" node "$bin" pull bench/agent "$work/pulled" --store "$store"
    fi
    rm -rf "$work/pulled" "$work/restored" "$work"/rc*
    purge "$p"; p=
  done
  kill "$proxy"; proxy=
done

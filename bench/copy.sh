#!/usr/bin/env bash
# homefs copy against rclone sync of the same objects, side by side, between two prefixes of the test Ceph
# behind a counting latency proxy (bench/counting-proxy.ts) (docs/benchmarks.md, "5. Push and pull").
#   bench/copy.sh <home dir> [RTT_MS ...]   (default RTTs: 0 20; ROUNDS=N, default 1)
# The home is pushed once, straight to RGW (untimed). Then per RTT and round, each to a fresh target:
# `homefs copy` of the org, a second `homefs copy` right after (incremental: nothing to send), `rclone sync`
# of the org's prefix, and a second `rclone sync`. Per step: wall time, client CPU, peak RSS, RGW + OSD CPU,
# store requests (the proxy's count) and the 1-min load. rclone runs with server-side copy disabled, so its bytes
# pass the client as they would between two endpoints (as homefs copy's always do). Everything written is purged at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 <home dir> [RTT_MS ...]" >&2; exit 2; }
home=$(realpath "$1"); shift
rtts=("$@"); [ ${#rtts[@]} -eq 0 ] && rtts=(0 20)
rounds=${ROUNDS:-1}
# shellcheck source=lib/ceph-env.sh
. bench/lib/ceph-env.sh
work=$(mktemp -d /var/tmp/copy-bench.XXXXXX)
p=copy-bench-$$
proxy=
# rclone against $ENDPOINT (default: RGW itself) with the test credentials; a script, so that time(1) can run it
cat > "$work/rc" <<EOS
#!/bin/sh
exec env -u AWS_CA_BUNDLE RCLONE_CONFIG_BS_TYPE=s3 RCLONE_CONFIG_BS_PROVIDER=Ceph RCLONE_CONFIG_BS_ENDPOINT="http://\${ENDPOINT:-$up}" \\
  RCLONE_CONFIG_BS_ENV_AUTH=true RCLONE_CONFIG_BS_REGION=us-east-1 RCLONE_CONFIG_BS_FORCE_PATH_STYLE=true \\
  rclone "\$@" --config /dev/null --log-level ERROR
EOS
chmod +x "$work/rc"
rc() { "$work/rc" "$@"; }
cleanup() {
  if [ -n "$proxy" ]; then kill "$proxy" 2>/dev/null || true; fi
  rc purge "bs:$bucket/$p" --checkers 32 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
count() { kill -USR1 "$proxy"; sleep 0.3; node -e "console.log(JSON.parse(require('fs').readFileSync('$work/count','utf8')).total)"; }
measure() { # label command...
  local label=$1 s0 l0 e u s m; shift
  s0=$(srv); l0=$(cut -d' ' -f1 /proc/loadavg); count >/dev/null
  if ! /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/out" 2>&1; then echo "$label FAILED: $(tail -1 "$work/out")"; return; fi
  read -r e u s m < "$work/time"
  printf "%-26s wall %6.2f s  client CPU %6.2f s  RSS %5d MB  server CPU %6.2f s  requests %6d  load %s  %s\n" \
    "$label" "$e" "$(echo "$u + $s" | bc)" "$((m / 1024))" "$(echo "($(srv) - $s0) / 100" | bc -l)" "$(count)" "$l0" "$(head -c 160 "$work/out" | tr '\n' ' ')"
}
url() { echo "s3://$bucket/$p/$1?endpoint=http://$2&region=us-east-1&pathStyle=true"; }
echo "setup: push of $home (untimed)"
node dist/src/cli/main.js push "$home" bench/agent --store "$(url src "$up")" > /dev/null
for rtt in "${rtts[@]}"; do
  node dist/bench/counting-proxy.js "$up" "$rtt" "$work/count" > "$work/port" & proxy=$!
  for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
  port=$(cat "$work/port")
  for round in $(seq "$rounds"); do
    t=hc-$rtt-$round
    measure "+$rtt homefs copy" node dist/src/cli/main.js copy bench --store "$(url src 127.0.0.1:$port)" --to "$(url $t 127.0.0.1:$port)" --json
    measure "+$rtt homefs copy again" node dist/src/cli/main.js copy bench --store "$(url src 127.0.0.1:$port)" --to "$(url $t 127.0.0.1:$port)" --json
    t=rc-$rtt-$round
    export ENDPOINT=127.0.0.1:$port
    measure "+$rtt rclone sync" "$work/rc" sync "bs:$bucket/$p/src/bench" "bs:$bucket/$p/$t/bench" --transfers 32 --checkers 32 --disable Copy
    measure "+$rtt rclone sync again" "$work/rc" sync "bs:$bucket/$p/src/bench" "bs:$bucket/$p/$t/bench" --transfers 32 --checkers 32 --disable Copy
    unset ENDPOINT
  done
  kill "$proxy"; wait "$proxy" 2>/dev/null || true; proxy=
done

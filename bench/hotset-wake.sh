#!/usr/bin/env bash
# bench/hotset-wake.sh [--rtt MS] [--scale X] [--work DIR] [--skip-peers] [--no-wake] [--reuse PREFIX]
# Measures the hot set and the wake against the test Ceph behind a latency proxy (bench/latency-proxy.ts):
# first push vs restic backup, pull vs restic restore, and the agent-resumes session (mount, cat a note,
# grep -r through the checkout) on a fresh host: first wake, hot-set wake with the wake pack, and hot-set
# wake with plain parallel prefetch (the same record without its pack). Prints one line per step.
# Needs: test/support/ceph.sh (started or reused here), restic. Cleans up its mounts and bucket prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
# --no-wake: push and pull only. --reuse PREFIX: the wake sessions only, on a bucket prefix (bench-...) that
# an earlier run pushed and woke once (it has a hot set).
rtt=20 scale=0.2 work=/var/tmp/homefs-hotset-bench peers=1 wake=1 reuse=
while (($#)); do
  case $1 in
    --rtt) rtt=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --skip-peers) peers=0; shift ;;
    --no-wake) wake=0; shift ;;
    --reuse) reuse=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
eval "$(test/support/ceph.sh start 2>/dev/null)"
up=$(sed -E 's#.*endpoint=http://([0-9.]+:[0-9]+).*#\1#' <<<"$HOMEFS_TEST_S3_URL")
port=$((20000 + RANDOM % 20000))
run=$(date +%s)-$RANDOM
prefix=${reuse:-bench-$run}
store="s3://homefs-test/$prefix?endpoint=http://127.0.0.1:$port&region=us-east-1&pathStyle=true"
homefs=(node bin/homefs)
mkdir -p "$work"
proxy_pid=
cleanup() {
  local m
  for m in $(awk -v w="$work/" 'index($2, w) == 1 && $3 ~ /^fuse/ { print $2 }' /proc/mounts | sort -r); do
    fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null || true
}
trap cleanup EXIT
node dist/bench/latency-proxy.js "$port" "$up" "$rtt" >/dev/null &
proxy_pid=$!
sleep 0.5

src=$work/src-$scale
if [[ ! -e $src/.manifest.json ]]; then
  rm -rf "$src" && mkdir -p "$src"
  node -e "import('$PWD/dist/bench/lib/agenthome.js').then(m => m.agentHome('$src', $scale, 'hot')).then(x => require('node:fs').writeFileSync('$src/.manifest.json', JSON.stringify(x)))"
fi
small=$(node -p "require('$src/.manifest.json').smallFile")
checkout=$(node -p "require('$src/.manifest.json').checkout")
files=$(find "$src" -type f | wc -l)
bytes=$(du -sb "$src" | cut -f1)
echo "home: $files files, $((bytes / 1048576)) MiB; rtt +${rtt} ms; store $store"

t() { local s=$(date +%s.%N); "$@" >/dev/null; echo "$(date +%s.%N) - $s" | bc; }

if [[ -z $reuse ]]; then
echo "push (first): $(t "${homefs[@]}" push "$src" acme/agent --store "$store") s"
if ((peers)); then
  export RESTIC_PASSWORD=bench RESTIC_REPOSITORY="s3:http://127.0.0.1:$port/homefs-test/restic-$run"
  restic init -q >/dev/null
  echo "restic backup (first): $(t restic backup -q "$src") s"
fi
rm -rf "$work/pulled" "$work/restored"
echo "homefs pull: $(t "${homefs[@]}" pull acme/agent "$work/pulled" --store "$store") s"
((peers)) && echo "restic restore: $(t restic restore -q latest --target "$work/restored") s"
rm -rf "$work/pulled" "$work/restored"
fi
((wake)) || exit 0

session() { # host label
  local host=$1 mnt=$work/mnt-$1
  mkdir -p "$mnt"
  local s=$(date +%s.%N)
  "${homefs[@]}" mount acme/agent "$mnt" --store "$store" --state-dir "$work/$host/state" --cache-dir "$work/$host/cache" >/dev/null
  cat "$mnt/$small" >/dev/null
  grep -r zzqqxx "$mnt/$checkout" >/dev/null || true
  local e=$(date +%s.%N)
  local st=$("${homefs[@]}" status "$mnt" --json)
  local ss=$(date +%s.%N)
  "${homefs[@]}" sleep "$mnt" >/dev/null
  local se=$(date +%s.%N)
  echo "$2: session $(echo "$e - $s" | bc) s; sleep $(echo "$se - $ss" | bc) s; $(node -p "const s=$st; 'pulled ' + s.bytesFetched + ' B, touched ' + s.bytesTouched + ' B, warm ' + JSON.stringify(s.hotset.warm)")"
}
[[ -n $reuse ]] || session a "first wake (no hot set)"
session b "hot-set wake, pack"
# The same record without its pack: plain parallel prefetch of every recorded object.
node --input-type=module -e "
import { openStore } from '$PWD/dist/src/store/open.js';
import { decodeHotSet, encodeHotSet } from '$PWD/dist/src/transfer/hotset.js';
const s = await openStore('$store', { write: true, create: false });
const r = decodeHotSet(await s.get('acme/homes/agent/HOTSET'));
for (const e of r.entries) e.packed = false;
await s.put('acme/homes/agent/HOTSET', encodeHotSet({ ...r, packBytes: 0 }));
await s.delete('acme/homes/agent/WAKEPACK');
await s.close();"
session c "hot-set wake, prefetch only"
session d "hot-set wake, pack (again)"
rm -rf "$work"/{a,b,c,d}

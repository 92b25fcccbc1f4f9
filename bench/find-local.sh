#!/usr/bin/env bash
# The first `find` over a never-mounted home on a file:// store, by hand, with the page cache dropped:
#
#   REPO=<checkout with a built bin/homefs> [STORE=/var/tmp/big/store] [HOME_REF=acme/big] bench/find-local.sh RUN
#
# The home must be pushed to STORE first (bench/lib/agenthome.ts at scale 8 is the full-size home:
#   node -e "import('./dist/bench/lib/agenthome.js').then((m) => m.agentHome('/var/tmp/big/home', 8, 'big'))"
#   bin/homefs push /var/tmp/big/home acme/big --store file:///var/tmp/big/store).
# Mounts from new state and cache directories named after RUN, times `find | wc -l` cold and warm with
# the daemon's CPU time and FUSE requests by op, then `grep -r` through GREP_DIR (default projects/app/src: the sources of one repo, as the resume of bench/run greps), prints what its
# cache directory holds, sleeps the mount, and prints the daemon's peak RSS through all of it (VmHWM, read
# until the daemon exits; SEMI=N runs the daemon with V8's --max-semi-space-size=N instead of bin/homefs's own
# flags; MOUNT_ARGS adds mount flags, e.g. MOUNT_ARGS='--max-records 0'); then removes the home's hot-set record and wake pack (forget-hints), so the
# next run is as cold.
set -u
export PATH=/usr/local/bin:$PATH
cd ${REPO:?}
WORK=${WORK:-/var/tmp/big}
STORE=${STORE:-$WORK/store}
HOME_REF=${HOME_REF:-acme/big}
N=$1
M=$WORK/mnt; mkdir -p $M
sync; echo 3 > /proc/sys/vm/drop_caches
t0=$(date +%s.%N)
${PROFILE:+env NODE_OPTIONS=--cpu-prof\ --cpu-prof-dir=$PROFILE} ${SEMI:+node --max-semi-space-size=$SEMI} bin/homefs mount $HOME_REF $M --store file://$STORE --state-dir $WORK/state-$N --cache-dir $WORK/cache-$N ${MOUNT_ARGS:-} >$WORK/mount-$N.out 2>&1 || { echo mount failed; cat $WORK/mount-$N.out; exit 1; }
t1=$(date +%s.%N)
pid=$(bin/homefs status $M --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("pid"))')
echo "mount $(echo "$t1-$t0"|bc) s pid $pid"
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' /proc/$pid/stat; }
# FUSE requests by op between two `homefs status --metrics` scrapes (homefs_fuse_ops_total).
ops() { python3 - "$1" "$2" <<'PY'
import re, sys
def parse(f):
    return {m.group(1): float(m.group(2)) for m in (re.match(r'^homefs_fuse_ops_total\{op="(\w+)"[^}]*\} ([\d.e+-]+)', l) for l in open(f)) if m}
a, b = parse(sys.argv[1]), parse(sys.argv[2])
print(' '.join(f'{k} {int(v - a.get(k, 0))}' for k, v in sorted(b.items()) if v - a.get(k, 0) > 0) or 'none')
PY
}
bin/homefs status --metrics $M > $WORK/ops0-$N
c0=$(cpu); a=$(python3 -c 'import time; print(time.monotonic())')
n=$(find $M | wc -l)
b=$(python3 -c 'import time; print(time.monotonic())'); c1=$(cpu)
bin/homefs status --metrics $M > $WORK/ops1-$N
echo "cold find $(echo "$b-$a"|bc) s entries $n daemon-cpu $(echo "$c1-$c0"|bc) from $a to $b requests $(ops $WORK/ops0-$N $WORK/ops1-$N)"
cold_from=$a; cold_to=$b
bin/homefs status --metrics $M > $WORK/ops0-$N
c0=$(cpu); a=$(python3 -c 'import time; print(time.monotonic())')
n=$(find $M | wc -l)
b=$(python3 -c 'import time; print(time.monotonic())'); c1=$(cpu)
bin/homefs status --metrics $M > $WORK/ops1-$N
echo "warm find $(echo "$b-$a"|bc) s entries $n daemon-cpu $(echo "$c1-$c0"|bc) requests $(ops $WORK/ops0-$N $WORK/ops1-$N)"
rm -f $WORK/ops0-$N $WORK/ops1-$N
if [ -n "${GREP_DIR-projects/app/src}" ]; then
  a=$(python3 -c 'import time; print(time.monotonic())')
  n=$(grep -r abc $M/${GREP_DIR:-projects/app/src} | wc -l)
  b=$(python3 -c 'import time; print(time.monotonic())')
  echo "grep -r ${GREP_DIR:-projects/app/src} $(echo "$b-$a"|bc) s lines $n"
fi
grep -E "VmHWM|VmRSS" /proc/$pid/status | tr '\n' ' '; echo
echo "cache-dir $(du -sh $WORK/cache-$N | cut -f1) files $(find $WORK/cache-$N -type f | wc -l)"
[ -n "${NOSLEEP:-}" ] && exit 0
[ -z "${KEEPHINTS:-}" ] && trap "node dist/bench/lib/tools/forget-hints.js file://$STORE $HOME_REF" EXIT
s0=$(date +%s.%N)
( hwm=; while h=$(grep VmHWM /proc/$pid/status 2>/dev/null); do hwm=$h; sleep 0.05; done; echo "through sleep: $hwm" ) &
bin/homefs sleep $M > $WORK/sleep-$N.out 2>&1 || { echo sleep failed; cat $WORK/sleep-$N.out; fusermount3 -u $M; }
echo "sleep $(echo "$(date +%s.%N)-$s0"|bc) s"
wait
if [ -n "${PROFILE:-}" ]; then
  while [ -e /proc/$pid ]; do sleep 0.2; done
  node dist/bench/lib/tools/cpuwindow.js "$(ls -t $PROFILE/*.cpuprofile | head -1)" $cold_from $cold_to 30
fi

#!/usr/bin/env bash
# The agent-resumes wake and a cold `find`, homefs only, over the shared test Ceph through main's latency
# proxy (bench/lib/tools/rttproxy), with the daemon under --cpu-prof, by hand:
#
#   SRC=<agent home> PROF=<dir> [STEPS="resume find"] bench/wake-prof.sh RTT [RTT...]
#
# SRC defaults to bench/run's --scale 0.3 agent home. It is pushed once per RTT and step (directly, no
# proxy) so that each wake starts on a home with no hot set; each step starts from empty cache and state
# dirs with the page cache dropped. Profiles land in PROF/<rtt>-resume and PROF/<rtt>-find (summarize with
# `node dist/bench/lib/tools/cpuprofile.js PROF/<rtt>-resume/*.cpuprofile`).
set -u
cd "$(dirname "$0")/.."
eval "$(test/support/ceph.sh start 2>/dev/null)"
S3=$HOMEFS_TEST_S3_URL
port=$(echo "$S3" | sed -E 's/.*endpoint=http:\/\/127.0.0.1:([0-9]+).*/\1/')
DIRECT=$(echo "$S3" | sed -E "s#(s3://[^/]+/[^?]*)#\1-wakeprof-$$#")
SRC=${SRC:-/var/tmp/homefs-bench-after/inputs/agent-s0.3}
PROF=${PROF:-/var/tmp/wake-prof}
B=bin/homefs
now() { date +%s.%N; }
for rtt in "$@"; do
  for step in ${STEPS:-resume find}; do
    home=bench/$step$rtt
    t=$(now); $B push "$SRC" $home --store "$DIRECT" >/dev/null 2>&1; echo "push $home $(echo "$(now) - $t" | bc) s"
    node dist/bench/lib/tools/rttproxy.js "$port" "$rtt" /var/tmp/wakeprof-rtt.port > /var/tmp/wakeprof-rtt.out 2>&1 & PX=$!
    sleep 1; pport=$(cat /var/tmp/wakeprof-rtt.port)
    URL=$(echo "$DIRECT" | sed -E "s#127.0.0.1:$port#127.0.0.1:$pport#")
    base=$(mktemp -d /var/tmp/wakeprof-XXXX); mkdir -p "$base/mnt" "$PROF/$rtt-$step"
    sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    t0=$(now)
    NODE_OPTIONS="--cpu-prof --cpu-prof-dir=$PROF/$rtt-$step" $B mount $home "$base/mnt" --store "$URL" --cache-dir "$base/cache" --state-dir "$base/state" >/dev/null 2>&1
    t1=$(now)
    if [ $step = resume ]; then
      cat "$base/mnt/notes/u0.txt" > /dev/null; t2=$(now)
      (cd "$base/mnt/projects/app" && git status > /dev/null 2>&1); t3=$(now)
      n=$(grep -r abc "$base/mnt/projects/app/src" | wc -l); t4=$(now)
      what="mount $(echo "$t1-$t0"|bc) cat-end $(echo "$t2-$t0"|bc) git-end $(echo "$t3-$t0"|bc) grep-end $(echo "$t4-$t0"|bc) s; grep lines $n"
    else
      n=$(find "$base/mnt" | wc -l); t4=$(now)
      what="mount $(echo "$t1-$t0"|bc) find-end $(echo "$t4-$t0"|bc) s; entries $n"
    fi
    req=$($B status "$base/mnt" --metrics 2>/dev/null | grep '^homefs_store_requests_total' | awk '{s+=$2} END {print s}')
    $B sleep "$base/mnt" >/dev/null 2>&1
    kill -INT $PX; wait $PX
    echo "+$rtt ms $step: $what; requests(metric) ${req:-n/a}; load $load; proxy $(tail -1 /var/tmp/wakeprof-rtt.out)"
    rm -rf "$base"
  done
done

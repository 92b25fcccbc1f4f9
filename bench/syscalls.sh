#!/bin/bash
# usage: bench/syscalls.sh CHECKOUT N 'COMMAND'
#   A fresh mount of the CHECKOUT's build (file:// store, state and cache directories on /dev/shm), then
#   COMMAND under bash with $M set to the mountpoint while `strace -f` follows the daemon: prints the
#   system calls of the daemon's serving (main) thread per operation, by name, and those of its other
#   threads (thread pool, V8's helpers, idle pollers), each divided by N, the operations COMMAND makes.
#   WARM='COMMAND' runs first, untraced. MOUNT_ARGS="...": more `homefs mount` options.
#   Example: WARM='bench/createfiles.py $M/w 2000' bench/syscalls.sh . 1000 'bench/createfiles.py $M/c 1000'
B=$1; N=$2; CMD=$3
T=$(mktemp -d /dev/shm/sysc.XXXX); mkdir -p $T/m $T/c $T/s
$B/bin/homefs mount o/h $T/m --store file://$T/store --cache-dir $T/c --state-dir $T/s $MOUNT_ARGS >/dev/null || exit 1
export M=$T/m
[ -n "$WARM" ] && bash -c "$WARM" >/dev/null
P=$(pgrep -f "homefs mount o/h $T/m" | head -1)
strace -f -qq -p $P -o $T/trace 2>/dev/null & S=$!
sleep 1
bash -c "$CMD" >/dev/null
sleep 0.3; kill -INT $S; wait $S 2>/dev/null
python3 - $T/trace $P $N <<'PY'
import collections, re, sys
path, main, n = sys.argv[1], sys.argv[2], float(sys.argv[3])
mine, other = collections.Counter(), 0
for line in open(path):
    m = re.match(r'^(\d+)\s+(<\.\.\. )?(\w+)', line)
    if not m or m.group(2): continue  # a resumed call was counted where it started
    if m.group(1) == main: mine[m.group(3)] += 1
    else: other += 1
print('serving thread: %.1f system calls per operation' % (sum(mine.values()) / n))
print('  ' + ', '.join('%s %.2f' % (k, v / n) for k, v in mine.most_common() if v / n >= 0.05))
print('other threads: %.1f per operation' % (other / n))
PY
$B/bin/homefs sleep $M >/dev/null 2>&1 || fusermount3 -u $M
rm -rf $T

#!/bin/bash
# usage: bench/opcount.sh CHECKOUT 'COMMAND'
#   A fresh mount of the CHECKOUT's build (file:// store on /dev/shm, state directory on disk), then
#   COMMAND under bash with $M set to the mountpoint; prints its wall time, the daemon's CPU time
#   (process_cpu_seconds_total) and the FUSE requests it caused, by op (homefs_fuse_ops_total, and
#   getxattr/listxattr the binding answered itself), with each op's mean handler time where the metrics
#   keep one. MOUNT_ARGS="...": more `homefs mount` options (e.g. --fuse-spin-us 0).
#   Example: bench/opcount.sh . 'sync; echo 3 > /proc/sys/vm/drop_caches; tar xf /tmp/x.tar -C $M'
B=$1; CMD=$2
T=$(mktemp -d /var/tmp/opc.XXXX); mkdir -p $T/m /dev/shm/opc-$$
$B/bin/homefs mount o/h $T/m --store file:///dev/shm/opc-$$ --cache-dir $T/c --state-dir $T/s $MOUNT_ARGS >/dev/null
export M=$T/m
$B/bin/homefs status --metrics $M > $T/m0
s=$(date +%s.%N); bash -c "$CMD"; e=$(date +%s.%N)
$B/bin/homefs status --metrics $M > $T/m1
python3 - $T/m0 $T/m1 $(echo "$e - $s" | bc) <<'PY'
import re, sys
def parse(f):
    d = {}
    for l in open(f):
        m = re.match(r'^(homefs_fuse_ops_total|homefs_fuse_native_replies_total)\{op="(\w+)"[^}]*\} ([\d.e+-]+)', l)
        if m: d[m.group(1)[12:] + ':' + m.group(2)] = float(m.group(3))
        m = re.match(r'^homefs_fuse_op_seconds_(sum|count)\{[^}]*op="(\w+)"[^}]*\} ([\d.e+-]+)', l)
        if m: d[m.group(1) + ':' + m.group(2)] = float(m.group(3))
        m = re.match(r'^process_cpu_seconds_total\S* ([\d.]+)', l)
        if m: d['cpu'] = float(m.group(1))
    return d
a, b = parse(sys.argv[1]), parse(sys.argv[2])
ops = {k: b[k] - a.get(k, 0) for k in b if k.startswith(('ops_total', 'native_replies')) and b[k] - a.get(k, 0) > 0}
tot = sum(ops.values())
print('wall %.2f s, daemon cpu %.2f s, requests %d' % (float(sys.argv[3]), b.get('cpu', 0) - a.get('cpu', 0), tot))
for k, v in sorted(ops.items(), key=lambda x: -x[1]):
    op = k.split(':')[1]
    c = b.get('count:' + op, 0) - a.get('count:' + op, 0)
    mean = (b.get('sum:' + op, 0) - a.get('sum:' + op, 0)) / c * 1e6 if c and k.startswith('ops') else 0
    print('  %-28s %7d  handler mean %.0f us' % (k, v, mean))
PY
$B/bin/homefs sleep $M >/dev/null 2>&1 || fusermount3 -u $M
rm -rf $T /dev/shm/opc-$$

#!/bin/bash
# usage: bench/xattr-create.sh CHECKOUT LABEL — create 10,000 files of 100 B from one python process in a fresh mount; daemon CPU + wall
set -e
B=$1; L=$2
T=$(mktemp -d /var/tmp/xacreate.XXXX); mkdir -p $T/c $T/s $T/m /dev/shm/xc-$$
$B/bin/homefs mount o/h $T/m --store file:///dev/shm/xc-$$ --cache-dir $T/c --state-dir $T/s >/dev/null
cpu() { $B/bin/homefs status --metrics $T/m | awk '/^process_cpu_seconds_total/ {print $2}'; }
c0=$(cpu); s=$(date +%s.%N)
python3 -c "
import os
os.mkdir('$T/m/d')
for i in range(10000):
  with open(f'$T/m/d/f{i}', 'wb') as f: f.write(b'x' * 100)
"
e=$(date +%s.%N); c1=$(cpu)
m=$($B/bin/homefs status --metrics $T/m)
js=$(echo "$m" | awk '/^homefs_fuse_ops_total\{op="getxattr"/ {print $2}')
nat=$(echo "$m" | awk '/^homefs_fuse_native_replies_total\{op="getxattr"/ {print $2}')
printf "%-7s create10k getxattr_js=%s getxattr_native=%s daemon_cpu_s=%.2f wall_s=%.2f load=%s\n" $L ${js:-0} ${nat:-n/a} $(echo "$c1 - $c0" | bc) $(echo "$e - $s" | bc) "$(cut -d' ' -f1 /proc/loadavg)"
$B/bin/homefs sleep $T/m >/dev/null; rm -rf $T /dev/shm/xc-$$

#!/bin/bash
# usage: bench/xattr-count.sh CHECKOUT LABEL [SRC] — tar xf of directory SRC (default /usr/include) into a fresh mount;
# prints entries, getxattr requests that reached JS / were answered by the binding, the daemon's CPU seconds during tar, wall
set -e
B=$1; L=$2; SRC=${3:-/usr/include}
T=$(mktemp -d /var/tmp/xacount.XXXX); mkdir -p $T/c $T/s $T/m /dev/shm/xa-$$
tar cf $T/src.tar -C $(dirname $SRC) $(basename $SRC)
$B/bin/homefs mount o/h $T/m --store file:///dev/shm/xa-$$ --cache-dir $T/c --state-dir $T/s >/dev/null
cpu() { $B/bin/homefs status --metrics $T/m | awk '/^process_cpu_seconds_total/ {print $2}'; }
c0=$(cpu); s=$(date +%s.%N); tar xf $T/src.tar -C $T/m; e=$(date +%s.%N); c1=$(cpu)
files=$(find $T/m | wc -l)
m=$($B/bin/homefs status --metrics $T/m)
js=$(echo "$m" | awk '/^homefs_fuse_ops_total\{op="getxattr"/ {print $2}')
nat=$(echo "$m" | awk '/^homefs_fuse_native_replies_total\{op="getxattr"/ {print $2}')
printf "%-7s entries=%d getxattr_js=%s getxattr_native=%s daemon_cpu_s=%.2f wall_s=%.2f load=%s\n" $L $files ${js:-0} ${nat:-n/a} $(echo "$c1 - $c0" | bc) $(echo "$e - $s" | bc) "$(cut -d' ' -f1 /proc/loadavg)"
$B/bin/homefs sleep $T/m >/dev/null; rm -rf $T /dev/shm/xa-$$

#!/bin/bash
# usage: bench/reqfloor.sh CHECKOUT [N] [DAEMON_CPUS CLIENT_CPUS]
#   The per-request floor (bench/reqfloor.py) on a fresh mount (file:// store on /dev/shm, state directory
#   on disk), then on ext4 under /var/tmp. DAEMON_CPUS / CLIENT_CPUS: taskset CPU lists for the mount and
#   the loop (e.g. 0 0: both on one CPU). MOUNT_ARGS="...": more `homefs mount` options (--fuse-spin-us 0).
B=$1; N=${2:-20000}; DC=${3:-}; CC=${4:-}
here=$(dirname "$0")
T=$(mktemp -d /var/tmp/reqfloor.XXXX); mkdir -p $T/c $T/s $T/m $T/native /dev/shm/reqfloor-$$
ts() { if [ -n "$1" ]; then echo taskset -c $1; fi; }
$(ts $DC) $B/bin/homefs mount o/h $T/m --store file:///dev/shm/reqfloor-$$ --cache-dir $T/c --state-dir $T/s $MOUNT_ARGS >/dev/null
echo "== homefs ($B${DC:+, daemon on $DC, loop on $CC})"; $(ts $CC) python3 $here/reqfloor.py $T/m $N
echo "== ext4"; python3 $here/reqfloor.py $T/native $N
$B/bin/homefs sleep $T/m >/dev/null 2>&1 || fusermount3 -u $T/m
sleep 1; rm -rf $T /dev/shm/reqfloor-$$

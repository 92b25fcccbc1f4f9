#!/bin/bash
# usage: bench/xattr-micro.sh CHECKOUT LABEL — in a fresh mount with 10,000 files of 100 B: (a) 100,000 getxattr of one
# file from one process, (b) a lookup of each of the 10,000 files after the kernel dropped its dentries.
# Prints the daemon's CPU seconds and the wall time of each.
set -e
B=$1; L=$2
T=$(mktemp -d /var/tmp/xamicro.XXXX); mkdir -p $T/c $T/s $T/m /dev/shm/xm-$$
$B/bin/homefs mount o/h $T/m --store file:///dev/shm/xm-$$ --cache-dir $T/c --state-dir $T/s >/dev/null
cpu() { $B/bin/homefs status --metrics $T/m | awk '/^process_cpu_seconds_total/ {print $2}'; }
python3 -c "
import os
os.mkdir('$T/m/d')
for i in range(10000):
  with open(f'$T/m/d/f{i}', 'wb') as f: f.write(b'x' * 100)
"
$B/bin/homefs sync $T/m >/dev/null
c0=$(cpu); s=$(date +%s.%N)
python3 -c "
import os
for i in range(100000):
  try: os.getxattr('$T/m/d/f1', 'user.none')
  except OSError: pass
"
e=$(date +%s.%N); c1=$(cpu)
echo 2 > /proc/sys/vm/drop_caches
c2=$(cpu); s2=$(date +%s.%N)
python3 -c "
import os
for i in range(10000): os.stat(f'$T/m/d/f{i}')
"
e2=$(date +%s.%N); c3=$(cpu)
printf "%-7s getxattr100k cpu=%.2f wall=%.2f | lookup10k cpu=%.2f wall=%.2f load=%s\n" $L $(echo "$c1 - $c0" | bc) $(echo "$e - $s" | bc) $(echo "$c3 - $c2" | bc) $(echo "$e2 - $s2" | bc) "$(cut -d' ' -f1 /proc/loadavg)"
$B/bin/homefs sleep $T/m >/dev/null; rm -rf $T /dev/shm/xm-$$

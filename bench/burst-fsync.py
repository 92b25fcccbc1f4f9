#!/usr/bin/env python3
"""bench/burst-fsync.py DIR [N]: the fsync right after a burst of new files, inside a mount.

Creates N (default 10,000) files of 100 bytes in DIR/many, one after another, then writes 50 bytes to
DIR/note and fsyncs it. Prints the creates' time, the fsync's, and the fsync's window in CLOCK_MONOTONIC
seconds (for `node dist/bench/lib/tools/cpuwindow.js <daemon profile> FROM TO`). With bench/opcount.sh, on a
home that has a HEAD first (so the fsync can go to the log):

  bench/opcount.sh <build> 'echo x > $M/seed; <build>/bin/homefs sync $M; sleep 1; python3 bench/burst-fsync.py $M'
"""
import os
import sys
import time

d = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
os.makedirs(f'{d}/many', exist_ok=True)
t0 = time.monotonic()
for i in range(n):
    fd = os.open(f'{d}/many/f{i}', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b'x' * 100)
    os.close(fd)
t1 = time.monotonic()
fd = os.open(f'{d}/note', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b'y' * 50)
f0 = time.monotonic()
os.fsync(fd)
f1 = time.monotonic()
os.close(fd)
print(f'creates {t1 - t0:.2f} s fsync {(f1 - f0) * 1000:.0f} ms window {f0} {f1}')

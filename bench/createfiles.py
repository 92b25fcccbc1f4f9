#!/usr/bin/env python3
"""Creates N files of 100 bytes in DIR, one after another (open O_CREAT|O_TRUNC, write, close): the
"create 10,000 files" row of bench/writepath.py, alone, for bench/opcount.sh and bench/syscalls.sh.

usage: bench/createfiles.py DIR [N=10000]
"""
import os
import sys
import time

d = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
os.makedirs(d, exist_ok=True)
t = time.monotonic()
for i in range(n):
    fd = os.open(f'{d}/f{i}', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b'x' * 100)
    os.close(fd)
print('%d creates in %.3f s' % (n, time.monotonic() - t))

#!/usr/bin/env python3
"""bench/create10k.py DIR: creates 10,000 files of 100 bytes in DIR (made if absent), one after another,
as an agent's tool would, and prints the wall time. Used beside the reference C server (docs/benchmarks.md,
"Create: homefs beside the C reference"); Python's open() also asks isatty, so each file costs one
FUSE_IOCTL more than a shell's redirection would."""
import os
import sys
import time

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
t = time.monotonic()
for i in range(10000):
    with open(f'{d}/f{i:05d}', 'w') as f:
        f.write('x' * 100)
print(f'create 10000: {time.monotonic() - t:.2f} s')

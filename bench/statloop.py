#!/usr/bin/env python3
"""stat of many files with the kernel's dentries dropped before each round (the stat row of the write path).

  python3 bench/statloop.py DIR [ROUNDS]   (DIR holds f0 … f9999, e.g. made by writepath's create row)

Per round: sync, `echo 2 > /proc/sys/vm/drop_caches` (dentries and inodes; needs root), then os.stat of
DIR/f0 … DIR/f9999; prints each round's time. On a FUSE mount every stat is then one lookup request.
"""
import os
import sys
import time


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit('usage: bench/statloop.py DIR [ROUNDS]')
    d, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 5
    times = []
    for _ in range(rounds):
        os.sync()
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('2')
        t = time.perf_counter()
        for i in range(10_000):
            os.stat(f'{d}/f{i}')
        times.append(time.perf_counter() - t)
    print(' '.join(f'{x * 1000:.0f} ms' for x in times))


if __name__ == '__main__':
    main()

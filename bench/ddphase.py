#!/usr/bin/env python3
"""The large-write row split into its phases: write(2)s and fsync timed apart.

  python3 bench/ddphase.py SOURCE DEST   (e.g. SOURCE a 512 MiB file of random data, DEST a path on a mount)

Reads SOURCE into memory first (so no read of the input is timed), then writes it to DEST in 1 MiB write(2)s
and calls fsync once; prints the milliseconds of the write phase, of the fsync and of both.
"""
import os
import sys
import time


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: bench/ddphase.py SOURCE DEST')
    data = open(sys.argv[1], 'rb').read()
    t0 = time.perf_counter()
    fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    view = memoryview(data)
    for off in range(0, len(data), 1 << 20):
        os.write(fd, view[off:off + (1 << 20)])
    t1 = time.perf_counter()
    os.fsync(fd)
    t2 = time.perf_counter()
    os.close(fd)
    print(f'write {1000 * (t1 - t0):.0f} ms fsync {1000 * (t2 - t1):.0f} ms total {1000 * (t2 - t0):.0f} ms')


if __name__ == '__main__':
    main()

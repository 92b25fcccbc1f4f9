#!/usr/bin/env python3
"""The per-request floor of a mount: µs per call of loops that each cost one FUSE request or none.

  python3 bench/reqfloor.py DIR [N]   (bench/reqfloor.sh mounts a fresh home and runs it there and on ext4)

stat of a cached file (no request), getxattr of a name a file without xattrs lacks (answered by the binding
in C), getxattr of an xattr the file has (answered by JS), utime of an open fd (one setattr: JS, a journal
batch and its redo-log append).
"""
import os, sys, time
d = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
a = f'{d}/floor-a'; b = f'{d}/floor-b'
for p in (a, b):
    with open(p, 'wb') as f: f.write(b'x')
os.setxattr(b, 'user.k', b'v')
def loop(name, fn):
    fn(); fn()
    t = time.perf_counter()
    for _ in range(n): fn()
    dt = time.perf_counter() - t
    print(f'{name:34s} {dt / n * 1e6:7.1f} us/call')
def gx(p, k):
    def f():
        try: os.getxattr(p, k)
        except OSError: pass
    return f
loop('stat (kernel cache)', lambda: os.stat(a))
loop('getxattr, no xattrs (binding only)', gx(a, 'user.none'))
loop('getxattr, has xattr (binding + JS)', gx(b, 'user.k'))
fd = os.open(a, os.O_RDWR)
loop('utime fd (setattr, JS + journal)', lambda: os.utime(fd, (1, 2)))
os.close(fd)

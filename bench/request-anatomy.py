#!/usr/bin/env python3
"""Which FUSE requests each system call of a file extraction causes (docs/benchmarks.md, the write path).

Usage: python3 bench/request-anatomy.py MNT [tar|git]   (MNT: a mounted homefs home, writeback cache on, the default)

Makes the calls tar x makes for one file (create exclusive, write, write, fchown, fchmod, close, utimensat by
path after another create in the directory), one at a time, and prints the difference of the mount's
`homefs_fuse_ops_total` counters (`homefs status --metrics MNT`) around each call. The counters are read by
another process, so the writeback of a call's pages (write, then a setattr of mtime) may land in that call's
row or the next; the sum over the rows is exact. The files it makes are removed at the end. `git` makes the
calls of git's checkout of one file instead (lstat of the missing name, create exclusive, write, fstat,
close, then the same for a second file in the same directory).
"""
import os
import re
import subprocess
import sys

CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'dist', 'src', 'cli', 'main.js')


def counts(mnt):
    out = subprocess.run(['node', CLI, 'status', '--metrics', mnt], capture_output=True, text=True, check=True).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'^homefs_fuse_ops_total\{op="(\w+)".*\} (\d+)', out, re.M)}


def main():
    if len(sys.argv) not in (2, 3) or not os.path.ismount(sys.argv[1]) or sys.argv[2:] not in ([], ['tar'], ['git']):
        sys.exit('usage: bench/request-anatomy.py MNT [tar|git] (MNT: a mounted homefs home)')
    mnt = sys.argv[1]
    d = os.path.join(mnt, f'anatomy-{os.getpid()}')
    os.mkdir(d)
    p, q = os.path.join(d, 'a'), os.path.join(d, 'b')
    fd = None

    def create():
        nonlocal fd
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)

    def missing(path):
        try:
            os.lstat(path)
        except FileNotFoundError:
            return
        raise RuntimeError(f'{path} exists')

    git = [
        ('lstat (missing)', lambda: missing(p)),
        ('open(O_CREAT|O_EXCL)', create),
        ('write 100 B', lambda: os.write(fd, b'x' * 100)),
        ('fstat', lambda: os.fstat(fd)),
        ('close', lambda: os.close(fd)),
        ('lstat (missing) 2nd', lambda: missing(q)),
        ('create 2nd, write', lambda: os.write(fd2(), b'y' * 100)),
        ('fstat 2nd', lambda: os.fstat(fd)),
        ('close 2nd', lambda: os.close(fd)),
        ('lstat both', lambda: (os.lstat(p), os.lstat(q))),
    ]

    def fd2():
        nonlocal fd
        fd = os.open(q, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        return fd

    steps = git if sys.argv[2:] == ['git'] else [
        ('open(O_CREAT|O_EXCL)', create),
        ('write 100 B', lambda: os.write(fd, b'x' * 100)),
        ('write 100 B again', lambda: os.write(fd, b'x' * 100)),
        ('fchown', lambda: os.fchown(fd, os.getuid(), os.getgid())),
        ('fchmod', lambda: os.fchmod(fd, 0o644)),
        ('close', lambda: os.close(fd)),
        ('utimensat by path', lambda: os.utime(p, ns=(1, 2))),
        ('utimensat again', lambda: os.utime(p, ns=(3, 4))),
        ('create another file', lambda: os.close(os.open(q, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))),
        ('utimensat after it', lambda: os.utime(p, ns=(5, 6))),
        ('stat', lambda: os.stat(p)),
    ]
    try:
        for name, fn in steps:
            before = counts(mnt)
            fn()
            after = counts(mnt)
            diff = {k: after[k] - before.get(k, 0) for k in sorted(after) if after[k] != before.get(k, 0)}
            print(f'{name:24} ' + (', '.join(f'{k} {v}' for k, v in diff.items()) or '-'))
    finally:
        for f in (p, q):
            if os.path.exists(f):
                os.unlink(f)
        os.rmdir(d)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""The fsx tester (fstests/fsx.py) for a given number of operations, without the suite's time limits:
the 1,000,000-op run with fsync does not fit them on a loaded host.

  fstests/fsxrun.py OPS [--seed S] [--only small,medium,large] [--keep]

Mounts a fresh home over a file:// store (default `--fsync store`: every fsync, fdatasync and msync(MS_SYNC)
is a log segment or a seal), runs fsx.py's three files one after another with OPS split as the full suite
splits its 1,000,000 (small 80 %, medium 15 %, large 5 %), then puts the home to sleep and verifies the
store. `--only` runs some of the files (still their share of OPS: `1000000 --only large` is the 50,000
large-file operations of the million, with the same seed as in the whole run). Prints each file's result; the last line is `fsxrun: OK ...` or `fsxrun: FAILED ...` (exit 1).
"""
import argparse
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fsx import MIB, Fsx  # noqa: E402
from lib.homefs import HomefsEnv  # noqa: E402

# name, share of OPS, maxsize, maxlen, full_every, seals: fsx.py's full-run parameters
FILES = [('small', 0.80, 256 * 1024, 16 * 1024, 200, 3),
         ('medium', 0.15, 2 * MIB, 128 * 1024, 500, 3),
         ('large', 0.05, 20 * MIB, 1 * MIB, 500, 2)]


class Ctx:
    """What Fsx needs of a check's context."""

    def __init__(self, env, mnt, d, scratch, seed):
        self.env, self.mnt, self.d, self.scratch, self.seed = env, mnt, d, scratch, seed

    def p(self, *parts):
        return os.path.join(self.d, *parts)

    def log(self, msg):
        print(f'     {msg}', flush=True)


def main():
    ap = argparse.ArgumentParser(prog='fstests/fsxrun.py')
    ap.add_argument('ops', type=int)
    ap.add_argument('--seed', type=int)
    ap.add_argument('--only', help='comma-separated: small, medium, large')
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 2**31)
    print(f'fsxrun: {a.ops} ops, seed {seed}', flush=True)
    base = tempfile.mkdtemp(prefix='fsxrun.')
    env = HomefsEnv(os.path.join(base, 'homefs'))
    t0 = time.monotonic()
    ok = False
    try:
        cache, state, mnt = env.fresh_dirs('fsx')
        env.mount('fstests/fsx', mnt, cache, state)
        d = os.path.join(mnt, 'fsx')
        os.makedirs(d)
        for k, (name, share, maxsize, maxlen, full_every, seals) in enumerate(FILES, start=1):
            if a.only and name not in a.only.split(','):
                continue
            scratch = os.path.join(base, 'scratch', name)
            os.makedirs(scratch)
            t1 = time.monotonic()
            Fsx(Ctx(env, mnt, d, scratch, seed), name, (seed * 1_000_003 + k) % (2 ** 31), int(a.ops * share),
                maxsize=maxsize, maxlen=maxlen, full_every=full_every, seals=seals).run()
            print(f'ok   fsx.{name}: {int(a.ops * share)} ops in {time.monotonic() - t1:.0f}s', flush=True)
        env.sleep(mnt)
        p = env.verify('fstests/fsx')
        if p.returncode != 0:
            raise AssertionError(f'homefs verify: exit {p.returncode}: {p.stderr.decode().strip()[-300:]}')
        ok = True
    except (AssertionError, OSError) as e:
        print(f'FAIL {e}', flush=True)
    finally:
        env.teardown_all()
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f'fsxrun: {"OK" if ok else "FAILED"}: {a.ops} ops, seed {seed}, {time.monotonic() - t0:.0f}s', flush=True)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

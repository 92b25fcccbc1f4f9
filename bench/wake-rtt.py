#!/usr/bin/env python3
"""Wake over a store one network hop away, until `bench/run --rtt` exists: a synthetic home is
pushed to the test Ceph directly, then mounted on an empty host through fstests/lib/proxy.py adding RTT_MS
before every request, and an agent's first steps are timed: mount, cat one notes file, `find` over the
home, grep -r through one repo (its files read one by one). Prints one Markdown row per build given, with
the store requests of the wake by kind (as the proxy counted them).

  eval "$(test/support/ceph.sh start)"
  bench/wake-rtt.py [--rtt MS] [--dirs N] [--prof DIR] LABEL=PATH/TO/bin/homefs [LABEL=...]

--prof DIR: the daemons run with --cpu-prof into DIR/LABEL (summarize with
`node dist/bench/lib/tools/cpuprofile.js DIR/LABEL/*.cpuprofile`).

Each build gets fresh cache and state directories; page caches are not dropped (the mount is new, so
nothing of it is cached in the kernel)."""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'fstests'))
from lib.proxy import FaultProxy, endpoint_of, rewrite_url  # noqa: E402


def make_home(root, dirs, rng):
    """`dirs` directories three levels deep; repo/ holds a third of them (sources of 1-12 KiB), notes/ a few
    notes; the rest are caches of small and medium files."""
    os.makedirs(os.path.join(root, 'notes'))
    for i in range(5):
        with open(os.path.join(root, 'notes', f'note{i}.md'), 'w') as f:
            f.write(f'# note {i}\n' + 'remember the plan\n' * (50 + i))
    for d in range(dirs):
        top = 'repo' if d % 3 == 0 else 'cache'
        p = os.path.join(root, top, f'a{d % 7}', f'b{d}')
        os.makedirs(p, exist_ok=True)
        for k in range(rng.randrange(2, 9)):
            size = rng.randrange(1024, 12 * 1024) if top == 'repo' else rng.randrange(512, 64 * 1024)
            with open(os.path.join(p, f'f{k}.{"ts" if top == "repo" else "bin"}'), 'wb') as f:
                f.write(rng.randbytes(size))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, **kw)


def timed(fn):
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def one(label, binary, home, direct, url, rtt, work, prof=None):
    proxy = FaultProxy(*endpoint_of(direct)).start()
    proxy.add('latency', None, None, seconds=rtt / 1000)
    purl = rewrite_url(url, port=proxy.port)
    base = tempfile.mkdtemp(prefix=f'{label}-', dir=work)
    cache, state, mnt = (os.path.join(base, x) for x in ('cache', 'state', 'mnt'))
    os.makedirs(mnt)
    row = {}
    try:
        env = dict(os.environ)
        if prof:
            os.makedirs(os.path.join(prof, label), exist_ok=True)
            env['NODE_OPTIONS'] = f'--cpu-prof --cpu-prof-dir={os.path.join(prof, label)}'
        row['mount'] = timed(lambda: run([binary, 'mount', home, mnt, '--store', purl, '--cache-dir', cache, '--state-dir', state], timeout=120, env=env))
        row['cat'] = timed(lambda: run(['cat', os.path.join(mnt, 'notes', 'note0.md')], timeout=120))
        row['find'] = timed(lambda: run(['find', mnt], timeout=600))
        row['grep'] = timed(lambda: subprocess.run(['grep', '-r', 'zzzzzzzz', os.path.join(mnt, 'repo')], capture_output=True, timeout=600))
        row['total'] = row['mount'] + row['cat'] + row['find'] + row['grep']
        row['meta'] = proxy.count('GET', 'meta')
        row['blocks'] = proxy.count('GET', 'blocks')
        row['other'] = sum(proxy.counts.get((m, k), 0) for (m, k) in list(proxy.counts) if k in ('homes', 'other'))
    finally:
        subprocess.run([binary, 'sleep', mnt], capture_output=True, timeout=300)
        proxy.stop()
        shutil.rmtree(base, ignore_errors=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rtt', type=float, default=20)
    ap.add_argument('--dirs', type=int, default=600)
    ap.add_argument('--work', default='/var/tmp/homefs-wake-rtt')
    ap.add_argument('--prof', help='write the daemons\' CPU profiles here')
    ap.add_argument('builds', nargs='+')
    a = ap.parse_args()
    s3 = os.environ.get('HOMEFS_TEST_S3_URL')
    if not s3:
        sys.exit('wake-rtt: HOMEFS_TEST_S3_URL is unset; run: eval "$(test/support/ceph.sh start)"')
    os.makedirs(a.work, exist_ok=True)
    src = tempfile.mkdtemp(prefix='src-', dir=a.work)
    make_home(src, a.dirs, random.Random(11))
    nfiles = sum(len(f) for _, _, f in os.walk(src))
    ndirs = sum(len(d) for _, d, _ in os.walk(src)) + 1
    repo = sum(len(f) for _, _, f in os.walk(os.path.join(src, 'repo')))
    prefix = f'wake-rtt-{os.getpid()}'
    direct = rewrite_url(s3, prefix_suffix=prefix)
    home = 'bench/wake'
    first = a.builds[0].split('=', 1)[1]
    run([first, 'push', src, home, '--store', direct], timeout=600)
    print(f'home: {ndirs} directories, {nfiles} files (repo/: {repo} files); RTT {a.rtt:g} ms added before every request')
    print('| build | mount | cat notes | find | grep -r repo/ | total | GETs meta | GETs blocks | other requests |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
    for b in a.builds:
        label, binary = b.split('=', 1)
        r = one(label, binary, home, direct, direct, a.rtt, a.work, a.prof)
        print(f"| {label} | {r['mount']:.2f} s | {r['cat']:.2f} s | {r['find']:.2f} s | {r['grep']:.2f} s | {r['total']:.2f} s | {r['meta']} | {r['blocks']} | {r['other']} |", flush=True)
    shutil.rmtree(src, ignore_errors=True)


if __name__ == '__main__':
    main()

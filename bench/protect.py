#!/usr/bin/env python3
"""Continuous protection through the test Ceph behind a latency proxy, variants side by side in one run.

  bench/protect.py [--rtt 0,20] [--rounds 1] [--only tar,npmci,clone,create] [--variant NAME=FLAGS ...]
                   [--pause S] [--work /var/tmp/homefs-protect-bench]

For each RTT, round and row, every variant runs once in turn (each round starting one variant further
on) on a fresh home (its own bucket prefix, state and cache): the default variants are `off`
(--no-write-behind --protect-interval 0: what homefs did before write-behind) and `on` (the defaults); FLAGS may start with `@PATH` to run another build's bin/homefs
(e.g. `before=@/var/tmp/before/bin/homefs`). Each row times the foreground workload, then the write +
fsync of a 50-byte file right after it (`fsync`), and, for tar, a second `tar x` into another directory
followed by `homefs sleep` right after it (`sleep`); other rows time `homefs sleep` right after the
workload. `--pause S` waits S seconds before the sleep instead (an agent between two commands). Rows: tar = tar x of /usr/include; npmci = npm ci of 150 packages from a local cache (bench/run's
fixture, --offline); clone = git clone --no-hardlinks of a 20,000-file repository (fixture); create =
10,000 files of 100 bytes from one process. Each home gets a HEAD first (the fsync of a seed file), as a
home that exists has. Prints one line per measurement and a table of medians with
each variant's ratio to the first. PROF=DIR: each daemon runs under `node --cpu-prof` (profiles in DIR, written
at the sleep), and the foreground step's window is printed for dist/bench/lib/tools/cpuwindow.js.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'bench'))
from writepath import fixtures, workload  # noqa: E402  (bench/writepath.py: bench/run's tool fixtures and rows)

HOMEFS = os.path.join(ROOT, 'bin', 'homefs')


def sh(*args, **kw):
    return subprocess.run(list(args), check=True, **kw)


def ceph_env():
    out = subprocess.run([os.path.join(ROOT, 'test/support/ceph.sh'), 'start'], check=True, capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith('export '):
            k, v = line[len('export '):].split('=', 1)
            env[k] = v.strip("'")
    return env


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def fsync_small(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b'n' * 50)
        os.fsync(fd)
    finally:
        os.close(fd)


def create_files(d, n=10_000):
    os.makedirs(d)
    for i in range(n):
        with open(f'{d}/f{i:05d}', 'wb') as f:
            f.write(b'%05d' % i * 20)


def foreground(row, mnt, tarball, fx):
    if row == 'tar':
        return timed(lambda: sh('tar', 'xf', tarball, '-C', mnt))
    if row in ('clone', 'npmci'):
        return workload(row, mnt, tarball, None, fx)
    if row == 'create':
        return timed(lambda: create_files(f'{mnt}/many'))
    raise ValueError(row)


def run_row(row, flags, store, work, tarball, fx, env, pause=0.0):
    homefs = HOMEFS
    if flags and flags[0].startswith('@'):
        homefs, flags = flags[0][1:], flags[1:]
    mnt, state, cache = f'{work}/mnt', f'{work}/state', f'{work}/cache'
    for d in (state, cache):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(mnt, exist_ok=True)
    prof = os.environ.get('PROF')
    menv = {**env, 'NODE_OPTIONS': f'--cpu-prof --cpu-prof-dir={prof}'} if prof else env
    sh(homefs, 'mount', 'acme/protect', mnt, '--store', store, '--state-dir', state, '--cache-dir', cache, *flags, env=menv, stdout=subprocess.DEVNULL)
    try:
        fsync_small(f'{mnt}/seed.txt')  # a home that exists: its first fsync seals (the log follows a HEAD)
        t0 = time.monotonic()
        out = {'fg': foreground(row, mnt, tarball, fx)}
        if prof:
            print(f'  foreground window (monotonic, for cpuwindow.js): {t0:.3f} {time.monotonic():.3f}', flush=True)
        out['fsync'] = timed(lambda: fsync_small(f'{mnt}/note.txt'))
        if row == 'tar':
            os.makedirs(f'{mnt}/again')
            out['fg2'] = timed(lambda: sh('tar', 'xf', tarball, '-C', f'{mnt}/again'))
        time.sleep(pause)
        out['sleep'] = timed(lambda: sh(homefs, 'sleep', mnt, env=env, stdout=subprocess.DEVNULL))
        return out
    except BaseException:
        subprocess.run(['fusermount3', '-u', mnt], check=False)
        raise


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rtt', default='0,20')
    ap.add_argument('--rounds', type=int, default=1)
    ap.add_argument('--only', default='tar,npmci,clone,create')
    ap.add_argument('--variant', action='append')
    ap.add_argument('--pause', type=float, default=0.0)
    ap.add_argument('--work', default='/var/tmp/homefs-protect-bench')
    a = ap.parse_args()
    variants = [(v.split('=', 1)[0], v.split('=', 1)[1].split()) for v in (a.variant or ['off=--no-write-behind --protect-interval 0', 'on='])]
    rows = a.only.split(',')
    os.makedirs(a.work, exist_ok=True)
    tarball = f'{a.work}/include.tar'
    if not os.path.exists(tarball):
        sh('tar', 'cf', tarball, '-C', '/usr', 'include')
    fx = fixtures(a.work) if {'npmci', 'clone'} & set(rows) else None
    env = {**os.environ, **ceph_env()}
    up = env['HOMEFS_TEST_S3_URL'].split('endpoint=http://')[1].split('&')[0]
    results = {}
    for rtt in [int(x) for x in a.rtt.split(',')]:
        port = 20000 + os.getpid() % 20000
        proxy = subprocess.Popen(['node', os.path.join(ROOT, 'dist/bench/latency-proxy.js'), str(port), up, str(rtt)], stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            for rnd in range(a.rounds):
                for row in rows:
                    # Each round starts one variant further on: a run pays for the store's work left by the one before it.
                    for name, flags in variants[rnd % len(variants):] + variants[:rnd % len(variants)]:
                        prefix = f'bench-protect-{int(time.time())}-{os.getpid()}-{name}-{row}-{rtt}-{rnd}'
                        store = f's3://homefs-test/{prefix}?endpoint=http://127.0.0.1:{port}&region=us-east-1&pathStyle=true'
                        r = run_row(row, flags, store, a.work, tarball, fx, env, a.pause)
                        load = os.getloadavg()[0]
                        print(f'rtt={rtt}ms round={rnd + 1} row={row} variant={name} ' + ' '.join(f'{k}={v:.3f}s' for k, v in r.items()) + f' load={load:.1f}', flush=True)
                        for k, v in r.items():
                            results.setdefault((rtt, row, k), {}).setdefault(name, []).append(v)
        finally:
            proxy.terminate()
    names = [n for n, _ in variants]
    print(f"\n| rtt | row | step | {' | '.join(names)} | {' | '.join(f'{n}/{names[0]}' for n in names[1:])} |")
    print('|---|---|---|' + '---:|' * (2 * len(names) - 1))
    for (rtt, row, step), by in results.items():
        med = [statistics.median(by[n]) for n in names]
        ratios = [f'{m / med[0]:.2f}' if med[0] > 0 else '-' for m in med[1:]]
        print(f"| {rtt} ms | {row} | {step} | {' | '.join(f'{m:.3f} s' for m in med)} | {' | '.join(ratios)} |")


if __name__ == '__main__':
    main()

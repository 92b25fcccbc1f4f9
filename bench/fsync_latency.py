#!/usr/bin/env python3
"""fsync latency at an added store round-trip time, side by side with one plain 4 KiB PUT.

Puts fstests' latency proxy (fstests/lib/proxy.py) in front of the S3 endpoint of HOMEFS_TEST_S3_URL
(`eval "$(test/support/ceph.sh start)"`), mounts a fresh home with --fsync store through it, and times,
each as the median of --rounds runs:
  put        one plain 4 KiB PUT through the same proxy with the same client (homefs's S3 store)
  sqlite     one INSERT per transaction, WAL, synchronous=FULL (sqlite3 CLI, .timer)
  deep       write 4 KiB + fsync of a file 8 directories deep
  rootfile   write 4 KiB + fsync of a file at the root
  replace    write tmp + fsync + rename over + fsync of the directory (5 levels deep)
  gitcommit  `git commit` of one changed file in a small repository
With --sustained S (seconds), then: --writers threads each write 4 KiB + fsync a file of their own in a loop
while another thread forces seals (`homefs sync` after writing 256 KiB unsynced) back to back; it prints
p50/p99/max of those fsyncs, of the fsyncs that overlapped a forced seal, and the seals' durations, after
the same loops for as long without forced seals (what a seal adds is the difference).
Usage: bench/fsync_latency.py [--homefs DIR] [--latency-ms 20] [--rounds 20] [--label TEXT] [--sustained S] [--writers 4] [--only-sustained]
       [--daemon-log FILE]
(--homefs: a homefs checkout with dist/ built; default this one, so two builds can be compared.)"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'fstests'))
from lib.proxy import FaultProxy, endpoint_of, rewrite_url  # noqa: E402

PUT_JS = """
const [dist, url, rounds] = process.argv.slice(1);
const { openStore } = await import(dist + '/src/store/open.js');
const s = await openStore(url, { write: true, create: true });
const data = Buffer.alloc(4096, 7);
const ms = [];
for (let i = 0; i < Number(rounds); i++) {
  const t0 = performance.now();
  await s.put('bench/put/' + i, data);
  ms.push(performance.now() - t0);
}
await s.close();
console.log(JSON.stringify(ms));
"""


def median_ms(fn, rounds):
    out = []
    for i in range(rounds):
        t0 = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def write_fsync(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float('nan')


def sustained(homefs, mnt, seconds, writers, seals_on=True):
    """fsync latencies (ms) of `writers` loops while forced seals run back to back (unless not seals_on); which overlapped a seal."""
    stop = time.monotonic() + seconds
    lat, during, seals = [], [], []
    sealing = []  # (start, end) of each forced seal
    lock = threading.Lock()
    data = os.urandom(4096)
    os.makedirs(os.path.join(mnt, 'sustained', 'bulk'), exist_ok=True)

    def writer(k):
        path = os.path.join(mnt, 'sustained', f'w{k}')
        while time.monotonic() < stop:
            t0 = time.monotonic()
            write_fsync(path, data)
            t1 = time.monotonic()
            with lock:
                lat.append((t0, t1))

    def sealer():
        i = 0
        while time.monotonic() < stop:
            with open(os.path.join(mnt, 'sustained', 'bulk', f'b{i}'), 'wb') as f:
                f.write(os.urandom(256 * 1024))
            t0 = time.monotonic()
            subprocess.run([homefs, 'sync', mnt], check=True, capture_output=True, timeout=300)
            t1 = time.monotonic()
            sealing.append((t0, t1))
            seals.append((t1 - t0) * 1000)
            i += 1

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(writers)] + ([threading.Thread(target=sealer)] if seals_on else [])
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_ms = [(b - a) * 1000 for a, b in lat]
    # an fsync overlapped a forced seal if it started while `homefs sync` ran (the CLI's start-up included)
    during = [(b - a) * 1000 for a, b in lat if any(s0 <= a <= s1 for s0, s1 in sealing)]
    return all_ms, during, seals


def report(a, res):
    put = res['put']
    print(f'## fsync latency {a.label} (added RTT {a.latency_ms:g} ms, median of {a.rounds}; load {os.getloadavg()[0]:.1f})')
    print('| what | ms | × one PUT |')
    print('|---|---|---|')
    for k in ('put', 'sqlite', 'deep', 'rootfile', 'replace', 'gitcommit'):
        if k in res:
            print(f'| {k} | {res[k]:.1f} | {res[k] / put:.2f} |')
    if 'sustained' in res:
        all_ms, during, seals = res['sustained']
        quiet = res['quiet'][0]
        print(f'\n### sustained: {a.writers} fsync loops for {a.sustained:g} s without seals, then {a.sustained:g} s while forced seals run back to back')
        print('| what | n | p50 ms | p99 ms | max ms | max × one PUT |')
        print('|---|---|---|---|---|---|')
        rows = (('every fsync, no seals', quiet), ('every fsync, with seals', all_ms), ('fsyncs started during a forced seal', during),
                ('forced seal (`homefs sync`, CLI included)', seals))
        for name, xs in rows:
            print(f'| {name} | {len(xs)} | {pct(xs, 50):.1f} | {pct(xs, 99):.1f} | {max(xs, default=float("nan")):.1f} | {max(xs, default=float("nan")) / put:.2f} |')



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--homefs', default=os.path.join(HERE, '..'))
    ap.add_argument('--latency-ms', type=float, default=20)
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--label', default='')
    ap.add_argument('--sustained', type=float, default=0, help='seconds of fsync load with forced seals (0: skip)')
    ap.add_argument('--writers', type=int, default=4)
    ap.add_argument('--only-sustained', action='store_true', help='skip the single-workload timings')
    ap.add_argument('--daemon-log', default='', help='mount with --log-level debug and copy the daemon log here (fsync and seal phases)')
    ap.add_argument('--trace', action='store_true', help='print the requests of one deep fsync (start offset, method, path)')
    a = ap.parse_args()
    s3 = os.environ.get('HOMEFS_TEST_S3_URL')
    if not s3:
        sys.exit('fsync_latency: HOMEFS_TEST_S3_URL is not set; run eval "$(test/support/ceph.sh start)" first')
    homefs = os.path.join(os.path.abspath(a.homefs), 'bin', 'homefs')
    dist = os.path.join(os.path.abspath(a.homefs), 'dist')
    proxy = FaultProxy(*endpoint_of(s3)).start()
    if a.latency_ms > 0:
        proxy.add('latency', seconds=a.latency_ms / 1000)
    url = rewrite_url(s3, port=proxy.port, prefix_suffix=f'bench-fsync-{uuid.uuid4().hex[:8]}')
    work = tempfile.mkdtemp(prefix='homefs-fsyncbench-')
    cache, state, mnt = (os.path.join(work, x) for x in ('cache', 'state', 'mnt'))
    for d in (cache, state, mnt):
        os.makedirs(d)
    res = {}
    try:
        p = subprocess.run(['node', '--input-type=module', '-e', PUT_JS, dist, url, str(a.rounds)], capture_output=True, text=True, check=True)
        import json
        res['put'] = statistics.median(json.loads(p.stdout))
        subprocess.run([homefs, 'mount', 'bench/fsync', mnt, '--store', url, '--cache-dir', cache, '--state-dir', state, '--fsync', 'store'] + (['--log-level', 'debug'] if a.daemon_log else []),
                       check=True, capture_output=True, timeout=120)
        data = os.urandom(4096)
        write_fsync(os.path.join(mnt, 'warm'), data)
        deep = os.path.join(mnt, *[f'd{i}' for i in range(8)])
        os.makedirs(deep)
        write_fsync(os.path.join(deep, 'warm'), data)
        if a.only_sustained:
            res['quiet'] = sustained(homefs, mnt, a.sustained, a.writers, seals_on=False)
            res['sustained'] = sustained(homefs, mnt, a.sustained, a.writers)
            return report(a, res)
        if a.trace:
            seen = []
            orig = proxy._count

            def traced(method, path):
                seen.append((time.perf_counter(), method, path.split('?')[0]))
                orig(method, path)
            proxy._count = traced
            for i in range(5):
                seen.clear()
                t0 = time.perf_counter()
                write_fsync(os.path.join(deep, 'traced'), data)
                took = (time.perf_counter() - t0) * 1000
                if i == 0:
                    for t, m, pth in seen:
                        print(f'  +{(t - t0) * 1000:6.1f} ms {m} {pth}')
                print(f'  fsync returned after {took:.1f} ms; {len(seen)} requests, first at +{(seen[0][0] - t0) * 1000:.1f} ms, last at +{(seen[-1][0] - t0) * 1000:.1f} ms')
            proxy._count = orig
        res['rootfile'] = median_ms(lambda i: write_fsync(os.path.join(mnt, 'f'), data), a.rounds)
        res['deep'] = median_ms(lambda i: write_fsync(os.path.join(deep, 'f'), data), a.rounds)
        rdir = os.path.join(mnt, *[f'r{i}' for i in range(5)])
        os.makedirs(rdir)

        def replace(i):
            tmp, target = os.path.join(rdir, 'conf.tmp'), os.path.join(rdir, 'conf')
            write_fsync(tmp, data)
            os.rename(tmp, target)
            dfd = os.open(rdir, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        res['replace'] = median_ms(replace, a.rounds)
        db = os.path.join(mnt, 'db.sqlite')
        script = 'PRAGMA journal_mode=WAL;\nPRAGMA synchronous=FULL;\nCREATE TABLE t(x);\nINSERT INTO t VALUES(0);\n.timer on\n'
        script += ''.join(f"INSERT INTO t VALUES('{i}');\n" for i in range(a.rounds))
        p = subprocess.run(['sqlite3', db], input=script, capture_output=True, text=True, check=True, timeout=600)
        reals = [float(line.split()[3]) * 1000 for line in p.stdout.splitlines() if line.startswith('Run Time:')]
        res['sqlite'] = statistics.median(reals)
        repo = os.path.join(mnt, 'repo')
        os.makedirs(repo)
        git = ['git', '-c', 'user.name=bench', '-c', 'user.email=bench@localhost', '-c', 'core.fsync=all', '-c', 'core.fsyncMethod=fsync']
        subprocess.run(git + ['init', '-q'], cwd=repo, check=True)
        with open(os.path.join(repo, 'a.txt'), 'w') as f:
            f.write('0\n')
        subprocess.run(git + ['add', '.'], cwd=repo, check=True)
        subprocess.run(git + ['commit', '-qm', 'init'], cwd=repo, check=True)

        def commit(i):
            with open(os.path.join(repo, 'a.txt'), 'w') as f:
                f.write(f'{i + 1}\n')
            subprocess.run(git + ['commit', '-qam', f'c{i}'], cwd=repo, check=True)
        res['gitcommit'] = median_ms(commit, max(3, a.rounds // 4))
        if a.sustained > 0:
            res['quiet'] = sustained(homefs, mnt, a.sustained, a.writers, seals_on=False)
            res['sustained'] = sustained(homefs, mnt, a.sustained, a.writers)
    finally:
        subprocess.run([homefs, 'sleep', mnt], capture_output=True, timeout=120)
        subprocess.run(['fusermount3', '-u', mnt], capture_output=True)
        proxy.stop()
        if a.daemon_log:
            subprocess.run(['cp', os.path.join(state, 'daemon.log'), a.daemon_log])
        subprocess.run(['rm', '-rf', work])
    report(a, res)


if __name__ == '__main__':
    main()

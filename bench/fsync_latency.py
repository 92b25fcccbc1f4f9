#!/usr/bin/env python3
"""fsync latency at an added store round-trip time (issue 12), side by side with one plain 4 KiB PUT.

Puts fstests' latency proxy (fstests/lib/proxy.py) in front of the S3 endpoint of HOMEFS_TEST_S3_URL
(`eval "$(test/support/ceph.sh start)"`), mounts a fresh home with --fsync store through it, and times,
each as the median of --rounds runs:
  put        one plain 4 KiB PUT through the same proxy with the same client (homefs's S3 store)
  sqlite     one INSERT per transaction, WAL, synchronous=FULL (sqlite3 CLI, .timer)
  deep       write 4 KiB + fsync of a file 8 directories deep
  rootfile   write 4 KiB + fsync of a file at the root
  replace    write tmp + fsync + rename over + fsync of the directory (5 levels deep)
  gitcommit  `git commit` of one changed file in a small repository
Usage: bench/fsync_latency.py [--homefs DIR] [--latency-ms 20] [--rounds 20] [--label TEXT]
(--homefs: a homefs checkout with dist/ built; default this one, so two builds can be compared.)"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--homefs', default=os.path.join(HERE, '..'))
    ap.add_argument('--latency-ms', type=float, default=20)
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--label', default='')
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
        subprocess.run([homefs, 'mount', 'bench/fsync', mnt, '--store', url, '--cache-dir', cache, '--state-dir', state, '--fsync', 'store'],
                       check=True, capture_output=True, timeout=120)
        data = os.urandom(4096)
        write_fsync(os.path.join(mnt, 'warm'), data)
        deep = os.path.join(mnt, *[f'd{i}' for i in range(8)])
        os.makedirs(deep)
        write_fsync(os.path.join(deep, 'warm'), data)
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
    finally:
        subprocess.run([homefs, 'sleep', mnt], capture_output=True, timeout=120)
        subprocess.run(['fusermount3', '-u', mnt], capture_output=True)
        proxy.stop()
        subprocess.run(['rm', '-rf', work])
    put = res['put']
    print(f'## fsync latency {a.label} (added RTT {a.latency_ms:g} ms, median of {a.rounds})')
    print('| what | ms | × one PUT |')
    print('|---|---|---|')
    for k in ('put', 'sqlite', 'deep', 'rootfile', 'replace', 'gitcommit'):
        print(f'| {k} | {res[k]:.1f} | {res[k] / put:.2f} |')


if __name__ == '__main__':
    main()

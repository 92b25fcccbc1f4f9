#!/usr/bin/env python3
"""The fsync right after `npm ci`, once, with the daemon under --cpu-prof, through the test Ceph behind a latency proxy.

  bench/fsync-after-npmci.py [--rtt 20] [--work /var/tmp/homefs-protect-bench] [MOUNT FLAGS...]

Mounts a new home (fresh state and cache), gives it a HEAD (the fsync of a seed file), runs bench/run's
150-package `npm ci` fixture in it, then times the write + fsync of a 50-byte file between two
time.monotonic() stamps, and sleeps the mount (the profile is written at exit). Prints the fsync's time
and the window; the daemon's debug log (its `log` lines: segment bytes, ms, putMs, omitted) is in
WORK/pstate/daemon.log and its profile in WORK/prof. Then:

  node dist/bench/lib/tools/cpuwindow.js $(ls -S WORK/prof/*.cpuprofile | head -1) FROM TO 30
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'bench'))
import protect  # noqa: E402  (bench/protect.py: the Ceph environment and the fsync of a small file)
from writepath import fixtures, workload  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--rtt', type=int, default=20)
ap.add_argument('--work', default='/var/tmp/homefs-protect-bench')
a, flags = ap.parse_known_args()
fx = fixtures(a.work)
env = {**os.environ, **protect.ceph_env()}
up = env['HOMEFS_TEST_S3_URL'].split('endpoint=http://')[1].split('&')[0]
port = 20000 + os.getpid() % 20000
proxy = subprocess.Popen(['node', os.path.join(ROOT, 'dist/bench/latency-proxy.js'), str(port), up, str(a.rtt)], stdout=subprocess.DEVNULL)
time.sleep(0.5)
homefs = os.path.join(ROOT, 'bin', 'homefs')
mnt, state, cache, prof = (f'{a.work}/{d}' for d in ('mnt', 'pstate', 'pcache', 'prof'))
try:
    for d in (state, cache, prof):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(mnt, exist_ok=True)
    os.makedirs(prof)
    store = f's3://homefs-test/npmci-fsync-{int(time.time())}?endpoint=http://127.0.0.1:{port}&region=us-east-1&pathStyle=true'
    penv = {**env, 'NODE_OPTIONS': f'--cpu-prof --cpu-prof-dir={prof}'}
    subprocess.run([homefs, 'mount', 'acme/p', mnt, '--store', store, '--state-dir', state, '--cache-dir', cache, '--log-level', 'debug', *flags], env=penv, check=True)
    protect.fsync_small(f'{mnt}/seed.txt')
    workload('npmci', mnt, None, None, fx)
    t0 = time.monotonic()
    protect.fsync_small(f'{mnt}/note.txt')
    t1 = time.monotonic()
    print(f'fsync {t1 - t0:.3f} s, window {t0:.3f} {t1:.3f}')
    time.sleep(1)
    subprocess.run([homefs, 'sleep', mnt], env=env, check=True, stdout=subprocess.DEVNULL)
finally:
    proxy.terminate()

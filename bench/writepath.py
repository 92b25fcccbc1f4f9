#!/usr/bin/env python3
"""The local write path side by side: native ext4, bindfs and homefs builds, interleaved.

  bench/writepath.py [--rounds 3] [--homefs NAME=DIR ...] [--only ROW,...] [--work /var/tmp/wp-bench]

Each round runs every system once, in turn, so that all of them see the same minutes of a shared, loaded
machine; the table shows medians and each system's ratio to native, with the load average. Rows:
tar x of /usr/include (page cache dropped first), dd 512 MiB of random data + fsync, create / stat /
delete 10,000 files from one process, 50 x (write 4 KiB + fsync); and (not in the default set: --only)
tar x of the tools scenario's 5,000 small files (page cache dropped first), git clone of a 20,000-file
repository (--no-hardlinks), npm ci of 150 packages from a local cache
(--offline), and a warm sequential read of 1 GiB (written, read once, then read again and timed); the
clone and npm inputs are bench/run's tool fixtures (bench/lib/fixtures.ts), generated once. homefs runs with a file:// store on a
tmpfs (/dev/shm) and its state directory on disk (the work directory), default flags. Before each row,
untimed, every system settles: os.sync(), and for homefs `homefs sync` (no seal of an earlier row runs
during a timed one). --homefs defaults
to this checkout (dist/); give it again (e.g. before=/tmp/main-build) to compare builds.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = ['tar', 'dd', 'create', 'stat', 'delete', 'fsync50']
EXTRA = ['tar5k', 'clone', 'npmci', 'seqread']
LABEL = {
    'tar': 'tar x of /usr/include', 'dd': 'dd 512 MiB random + fsync', 'create': 'create 10,000 files',
    'stat': 'stat 10,000 files', 'delete': 'delete 10,000 files', 'fsync50': '50 x (write 4 KiB + fsync)',
    'tar5k': 'tar x of 5,000 files (tools scenario)', 'clone': 'git clone, 20,000 files', 'npmci': 'npm ci, 150 packages, local cache', 'seqread': 'sequential read 1 GiB, warm',
}


def fixtures(work):
    """bench/run's tool fixtures (git repository, npm project and cache), made once by bench/lib/fixtures.ts."""
    import json
    js = os.path.join(ROOT, 'dist', 'bench', 'lib', 'fixtures.js')
    out = subprocess.run(['node', '-e', f"import({json.dumps(js)}).then((m) => m.fixtures({json.dumps(os.path.join(work, 'inputs'))}, 20000, 1000))"
                          ".then((f) => console.log(JSON.stringify(f)))"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, **kw)


def drop_caches():
    os.sync()
    try:
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('3')
    except OSError:
        pass


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def workload(row, d, tarball, rand, fx=None):
    if row == 'tar5k':
        drop_caches()
        return timed(lambda: sh('tar', 'xf', fx['tar5k'], '-C', d))
    if row == 'clone':
        return timed(lambda: sh('git', 'clone', '-q', '--no-hardlinks', fx['repo'], f'{d}/repo'))
    if row == 'npmci':
        os.makedirs(f'{d}/npm')
        for f in ('package.json', 'package-lock.json'):
            shutil.copy(os.path.join(fx['npmProject'], f), f'{d}/npm/{f}')
        return timed(lambda: sh('npm', 'ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--cache', fx['npmCache'],
                                cwd=f'{d}/npm', stdout=subprocess.DEVNULL))
    if row == 'seqread':
        for _ in range(2):
            sh('dd', f'if={rand}', f'of={d}/big1g', 'bs=1M', 'oflag=append', 'conv=notrunc', 'status=none')
        sh('dd', f'if={d}/big1g', 'of=/dev/null', 'bs=1M', 'status=none')
        return timed(lambda: sh('dd', f'if={d}/big1g', 'of=/dev/null', 'bs=1M', 'status=none'))
    if row == 'tar':
        drop_caches()
        return timed(lambda: sh('tar', 'xf', tarball, '-C', d))
    if row == 'dd':
        return timed(lambda: sh('dd', f'if={rand}', f'of={d}/big', 'bs=1M', 'conv=fsync', 'status=none'))
    many = os.path.join(d, 'many')
    if row == 'create':
        os.makedirs(many, exist_ok=True)

        def create():
            for i in range(10_000):
                fd = os.open(f'{many}/f{i}', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, b'x' * 100)
                os.close(fd)
        return timed(create)
    if row == 'stat':
        sh('sh', '-c', 'echo 2 > /proc/sys/vm/drop_caches', check=False)
        return timed(lambda: [os.stat(f'{many}/f{i}') for i in range(10_000)])
    if row == 'delete':
        return timed(lambda: [os.unlink(f'{many}/f{i}') for i in range(10_000)])
    if row == 'fsync50':
        def fsyncs():
            fd = os.open(f'{d}/fsync50', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for _ in range(50):
                    os.write(fd, os.urandom(4096))
                    os.fsync(fd)
            finally:
                os.close(fd)
        return timed(fsyncs)
    raise ValueError(row)


def wait_mounted(mnt, proc=None):
    for _ in range(300):
        if os.path.ismount(mnt):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f'server for {mnt} exited with {proc.returncode}')
        time.sleep(0.1)
    raise RuntimeError(f'{mnt} did not mount')


def unmount(mnt):
    if os.path.ismount(mnt):
        if sh('fusermount3', '-u', mnt, check=False, stderr=subprocess.DEVNULL).returncode != 0:
            sh('umount', '-l', mnt, check=False)


class System:
    def __init__(self, name, work, homefs_dir=None):
        self.name, self.work, self.homefs_dir = name, os.path.join(work, name), homefs_dir
        self.proc = None

    def start(self):
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        if self.name == 'native':
            self.dir = os.path.join(self.work, 'dir')
            os.makedirs(self.dir)
        elif self.name == 'bindfs':
            back, self.dir = os.path.join(self.work, 'back'), os.path.join(self.work, 'mnt')
            os.makedirs(back)
            os.makedirs(self.dir)
            sh('bindfs', back, self.dir)
            wait_mounted(self.dir)
        else:
            store = f'/dev/shm/wp-bench-{self.name}'
            shutil.rmtree(store, ignore_errors=True)
            os.makedirs(store)
            self.dir = os.path.join(self.work, 'mnt')
            os.makedirs(self.dir)
            env = dict(os.environ, HOMEFS_STORE=f'file://{store}')
            cli = os.path.join(self.homefs_dir, 'dist', 'src', 'cli', 'main.js')
            self.log = open(os.path.join(self.work, 'daemon.log'), 'w')
            self.proc = subprocess.Popen(['node', cli, 'mount', f'bench/{self.name}', self.dir, '--foreground',
                                          '--state-dir', os.path.join(self.work, 'state'),
                                          '--cache-dir', os.path.join(self.work, 'cache'), '--log-level', 'warn'],
                                         env=env, stdout=self.log, stderr=subprocess.STDOUT)
            wait_mounted(self.dir, self.proc)

    def settle(self):
        """Untimed, before each row: the previous row's background work ends first, on every system alike
        (os.sync for the page cache; for homefs also `homefs sync`, so that a seal absorbing the previous
        row's writes, e.g. dd's 512 MiB log, does not run during this row's timing)."""
        os.sync()
        if self.proc is not None:
            cli = os.path.join(self.homefs_dir, 'dist', 'src', 'cli', 'main.js')
            sh('node', cli, 'sync', self.dir, stdout=subprocess.DEVNULL)

    def stop(self):
        if self.name != 'native':
            unmount(self.dir)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
            self.proc = None
            shutil.rmtree(f'/dev/shm/wp-bench-{self.name}', ignore_errors=True)
        shutil.rmtree(self.work, ignore_errors=True)


def fmt(s):
    return f'{s * 1000:.0f} ms' if s < 1 else f'{s:.2f} s'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--homefs', action='append', default=[], help='NAME=DIR of a built homefs checkout')
    ap.add_argument('--only', help='comma-separated rows: ' + ','.join(ROWS + EXTRA))
    ap.add_argument('--work', default='/var/tmp/wp-bench')
    a = ap.parse_args()
    rows = a.only.split(',') if a.only else ROWS
    if ('stat' in rows or 'delete' in rows) and 'create' not in rows:
        rows = ['create'] + rows  # stat and delete work on the files create made
    builds = [h.split('=', 1) for h in a.homefs] or [['homefs', ROOT]]
    os.makedirs(a.work, exist_ok=True)
    fx = fixtures(a.work) if {'tar5k', 'clone', 'npmci'} & set(rows) else None
    tarball, rand = os.path.join(a.work, 'usr-include.tar'), '/dev/shm/wp-bench-random'
    if not os.path.exists(tarball):
        with tarfile.open(tarball, 'w') as t:
            t.add('/usr/include', arcname='include')
    if not os.path.exists(rand) or os.path.getsize(rand) != 512 << 20:
        with open(rand, 'wb') as f:
            for _ in range(512):
                f.write(os.urandom(1 << 20))
    systems = [System('native', a.work), System('bindfs', a.work)] + [System(n, a.work, d) for n, d in builds]
    times = {(s.name, r): [] for s in systems for r in rows}
    loads = []
    try:
        for rnd in range(a.rounds):
            for s in systems:
                s.start()
                try:
                    for r in rows:
                        s.settle()
                        times[(s.name, r)].append(workload(r, s.dir, tarball, rand, fx))
                        print(f'round {rnd + 1} {s.name:8} {r:8} {fmt(times[(s.name, r)][-1])}', file=sys.stderr, flush=True)
                finally:
                    s.stop()
            loads.append(os.getloadavg()[0])
    finally:
        for s in systems:
            if s.name != 'native' and hasattr(s, 'dir'):
                unmount(s.dir)
    names = [s.name for s in systems]
    print(f'\n{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, {a.rounds} rounds (median), '
          f'load average (1 min) after each round: {", ".join(f"{x:.1f}" for x in loads)}\n')
    print('| workload | ' + ' | '.join(names) + ' | ' + ' | '.join(f'{n} ÷ native' for n in names[1:]) + ' |')
    print('|---|' + '---:|' * (2 * len(names) - 1))
    for r in rows:
        med = {n: statistics.median(times[(n, r)]) for n in names}
        print(f'| {LABEL[r]} | ' + ' | '.join(fmt(med[n]) for n in names) + ' | '
              + ' | '.join(f'{med[n] / med["native"]:.1f}×' for n in names[1:]) + ' |')


if __name__ == '__main__':
    main()

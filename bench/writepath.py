#!/usr/bin/env python3
"""The local write path side by side: native ext4, bindfs, the reference C FUSE server and homefs builds, interleaved.

  bench/writepath.py [--rounds 3] [--homefs NAME=DIR ...] [--homefs-flags NAME=FLAGS ...]
                     [--homefs-env NAME=VAR=VALUE ...] [--only ROW,...]
                     [--work /var/tmp/wp-bench]
                     [--reference DIR [--reference-modes passthrough,writeback]]

Each round runs every system once, in turn (each round starting one system further on), so that all of
them see the same minutes of a shared, loaded machine; the table shows medians and each system's ratio
to native, with the load average. Rows:
tar x of /usr/include (page cache dropped first), dd 512 MiB of random data + fsync, create / stat /
delete 10,000 files from one process, 50 x (write 4 KiB + fsync); and (not in the default set: --only)
tar x of the tools scenario's 5,000 small files (page cache dropped first), git clone of a 20,000-file
repository (--no-hardlinks), npm ci of 150 packages from a local cache
(--offline), and a warm sequential read of 1 GiB (written, read once, then read again and timed); the
clone and npm inputs are bench/run's tool fixtures (bench/lib/fixtures.ts), generated once. homefs runs with a file:// store on a
tmpfs (/dev/shm) and its state directory on disk (the work directory), default flags. Before each row,
untimed, every system settles: os.sync(), and for homefs `homefs sync` (no seal of an earlier row runs
during a timed one). --homefs defaults
to this checkout (dist/); give it again (e.g. before=/tmp/main-build) to compare builds. --reference DIR adds
the reference C FUSE server (libfuse's passthrough_hp, kept outside the repository: DIR/mount MODE mounts it,
DIR/mount stop unmounts it) as one more system per --reference-modes mode (ref-passthrough, ...), mounted
like bindfs on a fresh source directory under the work directory (settle: os.sync()); the table then also
shows each homefs build's ratio to the best reference mode of the row.
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
    def __init__(self, name, work, homefs_dir=None, reference=None, flags=(), env=None):
        self.name, self.work, self.homefs_dir, self.flags = name, os.path.join(work, name), homefs_dir, list(flags)
        self.env = dict(env or {})  # more environment for the daemon (e.g. GLIBC_TUNABLES)
        self.reference, self.proc, self.ref_mounted = reference, None, False  # reference: (DIR, MODE)

    def ref(self, *args):
        """DIR/mount MODE or DIR/mount stop, always with REF_SRC and REF_MNT under the work directory."""
        env = dict(os.environ, REF_SRC=os.path.join(self.work, 'src'), REF_MNT=self.dir)
        out = subprocess.run([os.path.join(self.reference[0], 'mount'), *args], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.stderr.write(out.stdout + out.stderr)
            raise RuntimeError(f'{self.reference[0]}/mount {" ".join(args)} exited with {out.returncode}')
        for line in out.stdout.splitlines():
            if 'warning' in line:
                print(f'{self.name}: {line}', file=sys.stderr, flush=True)
        return dict(line.split('=', 1) for line in out.stdout.splitlines() if line.split('=', 1)[0] in ('SRC', 'MNT', 'PID'))

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
        elif self.reference is not None:
            self.dir = os.path.join(self.work, 'mnt')  # the mount script makes mnt and src (a fresh, empty one)
            got = self.ref(self.reference[1])  # a mount that fails is undone by the script itself
            self.ref_mounted = True
            if got.get('MNT') != self.dir or not os.path.ismount(self.dir):
                raise RuntimeError(f'{self.name}: the mount script reported {got}, not a mount at {self.dir}')
        else:
            store = f'/dev/shm/wp-bench-{self.name}'
            shutil.rmtree(store, ignore_errors=True)
            os.makedirs(store)
            self.dir = os.path.join(self.work, 'mnt')
            os.makedirs(self.dir)
            env = dict(os.environ, HOMEFS_STORE=f'file://{store}', **self.env)
            cli = os.path.join(self.homefs_dir, 'dist', 'src', 'cli', 'main.js')
            self.log = open(os.path.join(self.work, 'daemon.log'), 'w')
            self.proc = subprocess.Popen(['node', cli, 'mount', f'bench/{self.name}', self.dir, '--foreground',
                                          '--state-dir', os.path.join(self.work, 'state'),
                                          '--cache-dir', os.path.join(self.work, 'cache'), '--log-level', 'warn', *self.flags],
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

    def unmount(self):
        if self.reference is not None:
            if self.ref_mounted or os.path.ismount(self.dir):  # (a mount at our own REF_MNT is ours to stop)
                self.ref('stop')
                self.ref_mounted = False
        elif self.name != 'native':
            unmount(self.dir)

    def stop(self):
        self.unmount()
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
    ap.add_argument('--homefs-flags', action='append', default=[], metavar='NAME=FLAGS',
                    help="more `homefs mount` flags for build NAME, e.g. off='--fuse-passthrough off'")
    ap.add_argument('--homefs-env', action='append', default=[], metavar='NAME=VAR=VALUE',
                    help='an environment variable for build NAME\'s daemon, e.g. plain=GLIBC_TUNABLES=glibc.malloc.hugetlb=0 '
                         '(the daemon runs as `node dist/src/cli/main.js mount --foreground`, not through `homefs mount`, '
                         'which adds glibc.malloc.hugetlb=1)')
    ap.add_argument('--only', help='comma-separated rows: ' + ','.join(ROWS + EXTRA))
    ap.add_argument('--work', default='/var/tmp/wp-bench')
    ap.add_argument('--reference', metavar='DIR', help='folder of the reference C FUSE server (DIR/mount MODE, DIR/mount stop)')
    ap.add_argument('--reference-modes', metavar='MODE[,MODE...]', default='passthrough,writeback',
                    help='modes of DIR/mount to measure, one system each (default passthrough,writeback)')
    a = ap.parse_args()
    refs = []
    if a.reference:
        a.reference = os.path.abspath(a.reference)
        if not os.access(os.path.join(a.reference, 'mount'), os.X_OK):
            ap.error(f'{a.reference}/mount is not an executable')
        known = [l.split()[0] for l in sh(os.path.join(a.reference, 'mount'), 'modes', capture_output=True, text=True).stdout.splitlines() if l.strip()]
        refs = a.reference_modes.split(',')
        if set(refs) - set(known):
            ap.error(f'unknown reference mode(s) {",".join(sorted(set(refs) - set(known)))} (modes: {",".join(known)})')
    rows = a.only.split(',') if a.only else ROWS
    if ('stat' in rows or 'delete' in rows) and 'create' not in rows:
        rows = ['create'] + rows  # stat and delete work on the files create made
    builds = [h.split('=', 1) for h in a.homefs] or [['homefs', ROOT]]
    flags = dict(f.split('=', 1) for f in a.homefs_flags)
    envs = {}
    for e in a.homefs_env:
        name, var, value = e.split('=', 2)
        envs.setdefault(name, {})[var] = value
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
    systems = ([System('native', a.work), System('bindfs', a.work)] + [System(f'ref-{m}', a.work, reference=(a.reference, m)) for m in refs]
               + [System(n, a.work, d, flags=flags.get(n, '').split(), env=envs.get(n)) for n, d in builds])
    width = max(8, *(len(s.name) for s in systems))
    times = {(s.name, r): [] for s in systems for r in rows}
    loads = []
    try:
        for rnd in range(a.rounds):
            # Each round starts one system further on: a system's run pays for the files the one before it
            # deleted (ext4 here slows creates for a while after a large delete), so no system always follows the same one.
            for s in systems[rnd % len(systems):] + systems[:rnd % len(systems)]:
                s.start()
                try:
                    for r in rows:
                        s.settle()
                        times[(s.name, r)].append(workload(r, s.dir, tarball, rand, fx))
                        print(f'round {rnd + 1} {s.name:{width}} {r:8} {fmt(times[(s.name, r)][-1])}', file=sys.stderr, flush=True)
                finally:
                    s.stop()
            loads.append(os.getloadavg()[0])
    finally:
        for s in systems:
            if hasattr(s, 'dir'):
                try:
                    s.unmount()
                except RuntimeError as e:  # (the others still get unmounted)
                    print(e, file=sys.stderr)
    names = [s.name for s in systems]
    ref_names, homefs_names = [s.name for s in systems if s.reference], [s.name for s in systems if s.homefs_dir]
    print(f'\n{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, {a.rounds} rounds (median), '
          f'load average (1 min) after each round: {", ".join(f"{x:.1f}" for x in loads)}\n')
    print('| workload | ' + ' | '.join(names) + ' | ' + ' | '.join(f'{n} ÷ native' for n in names[1:])
          + ''.join(f' | {n} ÷ best ref' for n in homefs_names if ref_names) + ' |')
    print('|---|' + '---:|' * (2 * len(names) - 1 + (len(homefs_names) if ref_names else 0)))
    for r in rows:
        med = {n: statistics.median(times[(n, r)]) for n in names}
        print(f'| {LABEL[r]} | ' + ' | '.join(fmt(med[n]) for n in names) + ' | '
              + ' | '.join(f'{med[n] / med["native"]:.1f}×' for n in names[1:])
              + ''.join(f' | {med[n] / min(med[m] for m in ref_names):.1f}×' for n in homefs_names if ref_names) + ' |')


if __name__ == '__main__':
    main()

"""A randomized differential file tester in the spirit of fsx: random writes (including far past EOF, so
holes), reads, truncates and ftruncates (down and up), mmap reads and shared-mmap writes, O_APPEND writes,
close/reopen, fsync and fdatasync (and, on homefs, a `homefs sync` seal now and then) applied in
lockstep to a file in the mount and to a file on the local disk. After every operation the sizes must
agree and the touched range must read back identically; the whole file is compared periodically and
at the end. The seed is printed; `fstests/run --seed S --only fsx.NAME` replays the same sequence."""
import mmap
import os
import random
import time

from lib.harness import check

PAGE = mmap.PAGESIZE
MIB = 1 << 20


class Pair:
    """The file under test and the reference file, opened the same way."""

    def __init__(self, test_path, ref_path):
        self.paths = (test_path, ref_path)
        self.fds = [os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644) for p in self.paths]

    def reopen(self, flags=os.O_RDWR):
        for fd in self.fds:
            os.close(fd)
        self.fds = [os.open(p, flags) for p in self.paths]

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def size(self):
        return [os.fstat(fd).st_size for fd in self.fds]


class Fsx:
    def __init__(self, t, name, seed, ops, maxsize, maxlen, full_every, seals):
        self.t, self.name, self.ops, self.maxsize, self.maxlen = t, name, ops, maxsize, maxlen
        self.full_every, self.seals = full_every, seals
        self.rng = random.Random(seed)
        self.seed = seed
        self.log = []
        self.spent = {}
        self.pair = Pair(t.p(name), os.path.join(t.scratch, name + '.ref'))

    def fail(self, i, msg):
        last = '; '.join(self.log[-8:])
        raise AssertionError(f'{self.name} seed {self.seed} op #{i}: {msg}. Last ops: {last}')

    def compare_range(self, i, off, length, what):
        a = os.pread(self.pair.fds[0], length, off)
        b = os.pread(self.pair.fds[1], length, off)
        if a != b:
            bad = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            self.fail(i, f'{what}: mount differs from reference at offset {off + bad} '
                         f'(got {len(a)} bytes, want {len(b)}; byte {a[bad:bad + 1]!r} vs {b[bad:bad + 1]!r})')

    def check_size(self, i):
        s = self.pair.size()
        if s[0] != s[1]:
            self.fail(i, f'size {s[0]}, reference {s[1]}')
        return s[1]

    def run(self):
        r = self.rng
        seals_left = self.seals
        weights = [('write', 30), ('read', 20), ('mapread', 8), ('mapwrite', 8), ('truncate', 6),
                   ('ftruncate', 6), ('append', 8), ('reopen', 3), ('fsync', 0.2), ('fdatasync', 0.2),
                   ('holewrite', 4), ('seal', 1)]
        names = [w[0] for w in weights]
        cum = [w[1] for w in weights]
        try:
            for i in range(self.ops):
                if i:
                    now = time.monotonic()
                    self.spent[op] = self.spent.get(op, 0.0) + now - t_op
                    t_op = now
                else:
                    t_op = time.monotonic()
                op = r.choices(names, cum)[0]
                size = self.check_size(i)
                if op == 'write' or op == 'holewrite':
                    off = r.randrange(0, self.maxsize - 1) if op == 'holewrite' else r.randrange(0, max(1, min(size + 1, self.maxsize - 1)))
                    ln = r.randrange(1, min(self.maxlen, self.maxsize - off) + 1)
                    data = r.randbytes(ln)
                    self.log.append(f'{op} {off}+{ln}')
                    for fd in self.pair.fds:
                        if os.pwrite(fd, data, off) != ln:
                            self.fail(i, 'short write')
                    self.compare_range(i, off, ln, op)
                elif op == 'read':
                    off = r.randrange(0, size + 1)
                    ln = r.randrange(0, self.maxlen + 1)
                    self.log.append(f'read {off}+{ln}')
                    self.compare_range(i, off, ln, 'read')
                elif op == 'mapread' and size > 0:
                    off = r.randrange(0, size)
                    ln = r.randrange(1, min(self.maxlen, size - off) + 1)
                    self.log.append(f'mapread {off}+{ln}')
                    base = off - off % PAGE
                    got = []
                    for fd in self.pair.fds:
                        m = mmap.mmap(fd, off + ln - base, offset=base, prot=mmap.PROT_READ)
                        got.append(m[off - base:off - base + ln])
                        m.close()
                    if got[0] != got[1]:
                        self.fail(i, f'mapread {off}+{ln} differs')
                elif op == 'mapwrite':
                    off = r.randrange(0, self.maxsize - 1)
                    ln = r.randrange(1, min(self.maxlen, self.maxsize - off) + 1)
                    data = r.randbytes(ln)
                    self.log.append(f'mapwrite {off}+{ln} (size {size})')
                    base = off - off % PAGE
                    # msync(MS_SYNC) is an fsync (a seal under --fsync store): only one mapwrite in 10 does it
                    sync = r.random() < 0.1
                    for fd in self.pair.fds:
                        if os.fstat(fd).st_size < off + ln:
                            os.ftruncate(fd, off + ln)
                        m = mmap.mmap(fd, off + ln - base, offset=base)
                        m[off - base:off - base + ln] = data
                        if sync:
                            m.flush()
                        m.close()
                    self.check_size(i)
                    self.compare_range(i, off, ln, 'mapwrite')
                elif op in ('truncate', 'ftruncate'):
                    new = r.randrange(0, self.maxsize)
                    if r.random() < 0.3:
                        new = r.randrange(0, max(1, size // 2 + 1))
                    self.log.append(f'{op} {new} (from {size})')
                    for fd, p in zip(self.pair.fds, self.pair.paths):
                        if op == 'truncate':
                            os.truncate(p, new)
                        else:
                            os.ftruncate(fd, new)
                    self.check_size(i)
                    lo = max(0, min(size, new) - 64)
                    self.compare_range(i, lo, abs(new - size) + 128, op)
                elif op == 'append':
                    ln = r.randrange(1, self.maxlen + 1)
                    if size + ln > self.maxsize:
                        continue
                    data = r.randbytes(ln)
                    self.log.append(f'append {ln} at {size}')
                    for p in self.pair.paths:
                        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
                        os.write(fd, data)
                        os.close(fd)
                    self.check_size(i)
                    self.compare_range(i, size, ln, 'append')
                elif op == 'reopen':
                    self.log.append('reopen')
                    self.pair.reopen()
                elif op in ('fsync', 'fdatasync'):
                    self.log.append(op)
                    for fd in self.pair.fds:
                        (os.fsync if op == 'fsync' else os.fdatasync)(fd)
                elif op == 'seal' and seals_left > 0 and self.t.env is not None:
                    seals_left -= 1
                    self.log.append('homefs sync')
                    self.t.env.sync(self.t.mnt)
                if i % self.full_every == self.full_every - 1:
                    self.compare_range(i, 0, self.check_size(i) + 1, 'full compare')
            self.pair.reopen(os.O_RDONLY)
            self.compare_range(self.ops, 0, self.check_size(self.ops) + 1, 'final compare after reopen')
        finally:
            self.pair.close()
        top = sorted(self.spent.items(), key=lambda kv: -kv[1])[:3]
        self.t.log(f'seed {self.seed}: {self.ops} ops, final size {os.lstat(self.t.p(self.name)).st_size}; '
                   f'slowest op kinds: {", ".join(f"{k} {v:.1f}s" for k, v in top)}')


def _seed(t, k):
    return (t.seed * 1_000_003 + k) % (2 ** 31)


@check('fsx.small', timeout=400)
def _(t):
    ops = 20_000 if t.quick else 800_000
    Fsx(t, 'small', _seed(t, 1), ops, maxsize=256 * 1024, maxlen=16 * 1024, full_every=200, seals=3).run()


@check('fsx.medium', timeout=300)
def _(t):
    ops = 5_000 if t.quick else 150_000
    Fsx(t, 'medium', _seed(t, 2), ops, maxsize=2 * MIB, maxlen=128 * 1024, full_every=500, seals=3).run()


@check('fsx.large', timeout=300)
def _(t):
    # crosses the 4 MiB block and 8 MiB single-block boundaries of the store format
    ops = 1_500 if t.quick else 50_000
    Fsx(t, 'large', _seed(t, 3), ops, maxsize=20 * MIB, maxlen=1 * MIB, full_every=500, seals=2).run()

"""Concurrency: parallel writers to different files and to one file (disjoint ranges, O_APPEND), parallel
creates, mkdirs and O_EXCL contention in one directory, parallel renames in one directory (disjoint and
contended), many readers of one large file, and readers verifying content while seals run (homefs:
`homefs sync` in a loop; elsewhere: sync(2)). No crash, no lost update, consistent results."""
import hashlib
import os
import random
import threading
import time

from lib.asserts import eq, read, true, write
from lib.harness import check
from lib.parallel import parallel

W = 6


def pattern(i, n):
    return hashlib.sha256(f'{i}'.encode()).digest() * (n // 32) + b'\0' * (n % 32)


@check('concurrency.writers_different_files')
def _(t):
    size = 1 << 20

    def work(i):
        with open(t.p(f'f{i}'), 'wb') as f:
            for k in range(0, size, 8192):
                f.write(pattern(i, size)[k:k + 8192])
            f.flush()
            os.fsync(f.fileno())
        return i
    parallel(W, work)
    for i in range(W):
        eq(read(t.p(f'f{i}')) == pattern(i, size), True, f'content of f{i}')


@check('concurrency.writers_same_file_disjoint')
def _(t):
    chunk = 64 * 1024
    write(t.p('shared'), b'\0' * chunk * W * 4)

    def work(i):
        fd = os.open(t.p('shared'), os.O_WRONLY)
        try:
            for rnd in range(4):
                os.pwrite(fd, pattern(i * 10 + rnd, chunk), (rnd * W + i) * chunk)
        finally:
            os.close(fd)
    parallel(W, work)
    data = read(t.p('shared'))
    for rnd in range(4):
        for i in range(W):
            off = (rnd * W + i) * chunk
            eq(data[off:off + chunk] == pattern(i * 10 + rnd, chunk), True, f'region of worker {i} round {rnd}')


@check('concurrency.append_same_file')
def _(t):
    write(t.p('log'))
    n = 400

    def work(i):
        fd = os.open(t.p('log'), os.O_WRONLY | os.O_APPEND)
        try:
            for k in range(n):
                os.write(fd, f'{i:02d}:{k:05d}:'.encode() + b'x' * 52 + b'\n')
        finally:
            os.close(fd)
    parallel(W, work)
    lines = read(t.p('log')).split(b'\n')[:-1]
    eq(len(lines), W * n, 'appended records')
    seen = {}
    for ln in lines:
        true(len(ln) == 61 and ln.endswith(b'x' * 52), f'torn record {ln[:30]!r}')
        i, k = int(ln[:2]), int(ln[3:8])
        true(seen.get(i, -1) < k, f'records of writer {i} out of order')
        seen[i] = k
    eq(sorted(seen.values()), [n - 1] * W, 'every writer complete')


@check('concurrency.creates_one_dir')
def _(t):
    n = 300 if t.quick else 2000

    def work(i):
        for k in range(n):
            fd = os.open(t.p(f'w{i}-{k}'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, f'{i}-{k}'.encode())
            os.close(fd)
    parallel(W, work)
    names = os.listdir(t.d)
    eq(len(names), W * n, 'entries after parallel creates')
    for name in random.Random(1).sample(names, 50):
        eq(read(t.p(name)), name[1:].encode(), f'content of {name}')


@check('concurrency.mkdir_race')
def _(t):
    def work(i):
        wins = 0
        for k in range(100):
            try:
                os.mkdir(t.p(f'd{k}'))
                wins += 1
            except FileExistsError:
                pass
        return wins
    eq(sum(parallel(W, work)), 100, 'exactly one mkdir wins per name')
    eq(len(os.listdir(t.d)), 100, 'dirs created')


@check('concurrency.excl_lockfile')
def _(t):
    def work(i):
        got = []
        for k in range(100):
            try:
                fd = os.open(t.p(f'lock{k}'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, str(i).encode())
                os.close(fd)
                got.append(k)
            except FileExistsError:
                pass
        return got
    res = parallel(W, work)
    allk = sorted(k for g in res for k in g)
    eq(allk, list(range(100)), 'each lock won exactly once')
    for i, g in enumerate(res):
        for k in g:
            eq(read(t.p(f'lock{k}')), str(i).encode(), f'lock{k} holder')


@check('concurrency.renames_disjoint')
def _(t):
    rounds = 200

    def work(i):
        write(t.p(f'r{i}-0'), f'payload {i}'.encode())
        for k in range(rounds):
            os.rename(t.p(f'r{i}-{k}'), t.p(f'r{i}-{k + 1}'))
    parallel(W, work)
    eq(sorted(os.listdir(t.d)), sorted(f'r{i}-{rounds}' for i in range(W)), 'final names')
    for i in range(W):
        eq(read(t.p(f'r{i}-{rounds}')), f'payload {i}'.encode(), f'content of r{i}')


@check('concurrency.renames_contended')
def _(t):
    n = 100
    for k in range(n):
        write(t.p(f's{k}'), f'{k}'.encode())

    def work(i):
        won = []
        for k in range(n):
            try:
                os.rename(t.p(f's{k}'), t.p(f'moved{k}-by{i}'))
                won.append(k)
            except FileNotFoundError:
                pass
        return won
    res = parallel(W, work)
    eq(sorted(k for g in res for k in g), list(range(n)), 'each source renamed exactly once')
    eq(len(os.listdir(t.d)), n, 'no entry lost or duplicated')


@check('concurrency.rename_over_while_reading')
def _(t):
    # the atomic-replace pattern editors and package managers use: readers must see old or new, never a mix
    write(t.p('cfg'), b'A' * 50000)
    stop = time.monotonic() + (3 if t.quick else 15)

    def work(i):
        bad = 0
        k = 0
        while time.monotonic() < stop:
            if i == 0:
                k += 1
                c = bytes([65 + k % 26]) * 50000
                write(t.p(f'cfg.tmp{k}'), c)
                os.rename(t.p(f'cfg.tmp{k}'), t.p('cfg'))
            else:
                d = read(t.p('cfg'))
                if len(d) != 50000 or d.count(d[:1]) != 50000:
                    bad += 1
        return bad
    eq(sum(parallel(4, work)), 0, 'reads that saw a torn or empty file')


@check('concurrency.readers_one_file')
def _(t):
    data = os.urandom(16 << 20)
    write(t.p('big'), data)
    digest = hashlib.sha256(data).hexdigest()

    def work(i):
        return hashlib.sha256(read(t.p('big'))).hexdigest()
    eq(set(parallel(W, work)), {digest}, 'digest seen by every reader')


@check('concurrency.readers_during_seal', timeout=120)
def _(t):
    files = {f'f{i}': os.urandom(random.Random(i).randrange(1, 300000)) for i in range(30)}
    for n, d in files.items():
        write(t.p(n), d)
    stop = threading.Event()
    errors = []

    def sealer():
        while not stop.is_set():
            try:
                if t.env is not None:
                    t.env.sync(t.mnt)
                else:
                    os.sync()
                    time.sleep(0.05)
            except Exception as e:  # noqa: BLE001
                errors.append(str(e))
                return
    th = threading.Thread(target=sealer)
    th.start()
    try:
        end = time.monotonic() + (4 if t.quick else 20)

        def work(i):
            bad = []
            r = random.Random(i)
            while time.monotonic() < end:
                n = r.choice(sorted(files))
                if i % 2 == 0 and r.random() < 0.3:
                    # writers keep re-dirtying files of their own while the seal runs
                    mine = f'w{i}-{r.randrange(5)}'
                    write(t.p(mine), mine.encode() * 1000)
                elif read(t.p(n)) != files[n]:
                    bad.append(n)
            return bad
        res = parallel(4, work, timeout=60)
    finally:
        stop.set()
        th.join(120)
    eq(errors, [], 'seal errors')
    eq([b for r in res for b in r], [], 'files that read back wrong during seals')
    for i in (0, 2):
        for k in range(5):
            p = t.p(f'w{i}-{k}')
            if os.path.exists(p):
                eq(read(p), f'w{i}-{k}'.encode() * 1000, f'w{i}-{k}')


@check('concurrency.unlink_while_open_elsewhere')
def _(t):
    write(t.p('f'), b'z' * 100000)

    def work(i):
        if i == 0:
            time.sleep(0.2)
            os.unlink(t.p('f'))
            return True
        fd = os.open(t.p('f'), os.O_RDONLY)
        try:
            time.sleep(0.5)
            return os.pread(fd, 200000, 0) == b'z' * 100000
        finally:
            os.close(fd)
    eq(all(parallel(4, work)), True, 'open readers of an unlinked file see its data')
    true(not os.path.exists(t.p('f')), 'file gone')

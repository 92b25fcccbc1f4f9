"""Waking over a store one network hop away: lib/proxy.py sits between the daemon and the S3
endpoint and counts requests by kind. Asserts: the mount fetches every tree of HEAD in the background
(so a later `find` costs no tree request); the second cold read of a small file in a directory prefetches
the directory's other small files (reading them afterwards costs no block request), and two such
directories under one parent prefetch the parent's subtree; prefetch keeps the cache under --cache-size
without evicting the block of a file held open; a read waiting on a hung store is
interrupted by Ctrl-C (SIGINT) with EINTR at once, and the file reads correctly once the store is back.

Which reads the kernel interrupts: a synchronous FUSE request (O_DIRECT reads, lookups, readdir) gets
FUSE_INTERRUPT on any signal, and the daemon answers it EINTR at once. Page-cache reads wait for the
kernel's readahead killably: a fatal signal (Ctrl-C on `cat`) ends the process at once, a caught signal
waits for the data (or the fetch timeout)."""
import json
import os
import signal
import subprocess
import sys
import time

from faults import S3Home
from lib.asserts import eq, read, true, write
from lib.harness import check


def _wait(cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}')
        time.sleep(0.05)


def _push_tree(t, h, files, pack=True):
    """S3Home.push, with the parent directories of nested names made first. pack=False: no push pack, for
    the checks of the per-block paths (the pack would serve their cold reads from a few windows)."""
    for name in files:
        os.makedirs(os.path.join(t.scratch, 'push-src', os.path.dirname(name)), exist_ok=True)
    h.push(files, () if pack else ('--no-pack',))


def _settled(h, method, kind, quiet=0.5, timeout=60):
    """Waits until the proxy's count of (method, kind) stops moving for `quiet` seconds; returns it."""
    deadline = time.monotonic() + timeout
    last, since = h.proxy.count(method, kind), time.monotonic()
    while time.monotonic() - since < quiet:
        if time.monotonic() > deadline:
            raise AssertionError(f'{method} {kind} requests never settled')
        time.sleep(0.05)
        n = h.proxy.count(method, kind)
        if n != last:
            last, since = n, time.monotonic()
    return last


def _walk(t, name, pack):
    h = S3Home(t, name)
    try:
        files = {}
        for a in range(6):
            for b in range(5):
                files[f'd{a}/e{b}/f'] = f'f {a} {b}'.encode()
                files[f'd{a}/e{b}/g{b}/h'] = f'h {a} {b}'.encode()
        _push_tree(t, h, files)
        ndirs = len({os.path.dirname(p) for p in files} | {p.split('/')[0] for p in files}) + 1  # + root
        # (the first matching rule fires: the pack's comes before the latency of every GET)
        if pack == 'damaged':
            h.proxy.add('wrong_body', 'GET', '/NSPACK')  # a wrong magic: the pack is ignored
        elif pack == 'hung':
            h.proxy.add('hang', 'GET', '/NSPACK')  # the walk starts anyway after nsPack.waitMs
        h.proxy.add('latency', 'GET', None, seconds=0.02)
        mnt = h.mount()
        if pack == 'hung':
            _wait(lambda: h.proxy.count('GET', 'meta') >= ndirs, 'the walk to start without the pack')
        trees = _settled(h, 'GET', 'meta')
        if pack == 'used':
            true(trees <= 3, f'{trees} meta GETs: the trees came from the namespace pack (the snapshot, at most the root read by the mount)')
        else:
            true(trees >= ndirs, f'the walk fetched {trees} meta objects for {ndirs} directories (plus the snapshot)')
        seen = sum(len(fs) for _, _, fs in os.walk(mnt))
        eq(seen, len(files), 'find sees every file')
        eq(sorted(os.path.relpath(os.path.join(d, f), mnt) for d, _, fs in os.walk(mnt) for f in fs), sorted(files), 'find lists the pushed names')
        eq(h.proxy.count('GET', 'meta'), trees, 'find after the walk fetched no tree')
    finally:
        h.close()


@check('wake.namespace_walk', needs=('homefs', 's3'), timeout=240)
def _(t):
    """A pushed home's trees come from its namespace pack in one ranged GET; the walk then finds them cached."""
    _walk(t, 'walk', 'used')


@check('wake.namespace_pack_damaged', needs=('homefs', 's3'), timeout=240)
def _(t):
    """A namespace pack that does not decode is ignored: the walk fetches every tree, find lists every file."""
    _walk(t, 'nsbad', 'damaged')


@check('wake.namespace_pack_hung', needs=('homefs', 's3'), timeout=240)
def _(t):
    """A namespace pack that never arrives does not hold the walk back."""
    _walk(t, 'nshung', 'hung')


@check('wake.neighbour_prefetch', needs=('homefs', 's3'), timeout=240)
def _(t):
    h = S3Home(t, 'neighbours')
    try:
        files = {f'src/n{i:02d}': os.urandom(3000 + i) for i in range(20)}
        files['big'] = os.urandom(600_000)  # above the small-file limit: never prefetched as a neighbour
        _push_tree(t, h, files, pack=False)
        mnt = h.mount()
        _settled(h, 'GET', 'meta')
        before = h.proxy.count('GET', 'blocks')
        eq(read(os.path.join(mnt, 'src/n05')), files['src/n05'], 'the first cold read')
        eq(_settled(h, 'GET', 'blocks') - before, 1, 'one cold read in a directory fetches just its file')
        eq(read(os.path.join(mnt, 'src/n06')), files['src/n06'], 'the second cold read')
        blocks = _settled(h, 'GET', 'blocks')
        eq(blocks - before, 20, 'the second cold read in the directory prefetched the other 18 small files')
        for name, data in files.items():
            if name.startswith('src/'):
                eq(read(os.path.join(mnt, name)), data, name)
        eq(h.proxy.count('GET', 'blocks'), blocks, 'reading the neighbours cost no further request')
    finally:
        h.close()


@check('wake.subtree_prefetch', needs=('homefs', 's3'), timeout=240)
def _(t):
    """A reader going through sibling directories (grep -r): once two of them were prefetched, the small
    files of their parent's whole subtree are prefetched too."""
    h = S3Home(t, 'subtree')
    try:
        files = {f't/d{d}/f{i}': os.urandom(2000 + 10 * d + i) for d in range(4) for i in range(4)}
        files['other/x'] = os.urandom(2000)  # outside t/: never prefetched
        _push_tree(t, h, files, pack=False)
        mnt = h.mount()
        _settled(h, 'GET', 'meta')
        before = h.proxy.count('GET', 'blocks')
        for name in ('t/d0/f0', 't/d0/f1', 't/d1/f0', 't/d1/f1'):
            eq(read(os.path.join(mnt, name)), files[name], name)
        blocks = _settled(h, 'GET', 'blocks')
        eq(blocks - before, 16, 'two cold reads in each of two sibling directories fetched all 16 files of t/')
        for name, data in files.items():
            if name.startswith('t/'):
                eq(read(os.path.join(mnt, name)), data, name)
        eq(h.proxy.count('GET', 'blocks'), blocks, 'reading the rest of t/ cost no further request')
    finally:
        h.close()


def _cache_files(cache):
    """(path, size) of every object file in a cache directory (all orgs, blocks and trees)."""
    out = []
    for root, _, names in os.walk(cache):
        out += [(os.path.join(root, n), os.path.getsize(os.path.join(root, n))) for n in names if not n.startswith('.')]
    return out


@check('wake.prefetch_keeps_cap_and_open_files', needs=('homefs', 's3'), timeout=240)
def _(t):
    """Prefetch under a small --cache-size: the cache never holds more than its cap, and the block of a
    file held open stays cached while prefetch brings in more than the cap."""
    h = S3Home(t, 'cap')
    cap = 1_000_000
    try:
        files = {f's/d{d}/f{i}': os.urandom(20_000 + 100 * d + i) for d in range(4) for i in range(10)}
        files['big'] = os.urandom(700_000)
        _push_tree(t, h, files, pack=False)
        cache, state, mnt = h.env.fresh_dirs('cap')
        h.env.mount(h.home, mnt, cache, state, store_url=h.url, extra=('--takeover', '--cache-size', str(cap)))
        h.mnts.append(mnt)
        _settled(h, 'GET', 'meta')
        with open(os.path.join(mnt, 'big'), 'rb') as big:
            eq(big.read(), files['big'], 'big')
            _settled(h, 'GET', 'blocks')
            for name in ('s/d0/f0', 's/d0/f1', 's/d1/f0', 's/d1/f1'):  # a recursive reader: prefetches all of s/
                eq(read(os.path.join(mnt, name)), files[name], name)
            _settled(h, 'GET', 'blocks')
            h.env.sync(mnt)  # nothing to seal; waits for the daemon to answer, so its cache writes are done
            held = _cache_files(cache)
            total = sum(size for _, size in held)
            true(total <= cap, f'the cache holds {total} bytes, cap {cap}')
            true(any(size == 700_000 for _, size in held), 'the block of the open file is still cached')
            true(h.proxy.count('GET', 'blocks') >= 1 + 40, 'prefetch fetched more than the cap holds')
    finally:
        h.close()


STATTER = r'''
import os, signal, sys
class Interrupted(Exception):
    pass
def on_int(sig, frame):
    raise Interrupted()
signal.signal(signal.SIGINT, on_int)
print('ready', flush=True)
try:
    os.stat(sys.argv[1])
    print('done')
except Interrupted:
    print('interrupted')
except OSError as e:
    print('error', e.errno)
'''


@check('wake.ctrl_c_interrupts_hung_lookup', needs=('homefs', 's3'), timeout=240)
def _(t):
    """A lookup waiting for a directory's tree from a hung store ends with EINTR on a caught SIGINT."""
    h = S3Home(t, 'interrupt')
    try:
        files = {'sub/cold': os.urandom(3000)}
        _push_tree(t, h, files)
        snapshot = json.loads(t.env.cli('log', h.home, '--store', h.direct, '--json').stdout.splitlines()[0])['id']
        h.proxy.add('latency', 'GET', snapshot, seconds=0)  # the snapshot passes, however often it is read
        h.proxy.add('hang', 'GET', '/meta/')  # every tree hangs
        h.proxy.add('hang', 'GET', '/NSPACK')  # and the namespace pack that holds them
        mnt = h.mount()
        _wait(lambda: h.proxy.count('GET', 'meta') >= 2, 'the walk to ask for the root tree')
        p = subprocess.Popen([sys.executable, '-c', STATTER, os.path.join(mnt, 'sub', 'cold')], stdout=subprocess.PIPE, text=True)
        try:
            eq(p.stdout.readline().strip(), 'ready', 'the prober started')
            time.sleep(0.5)  # its lookup is now blocked in the kernel, waiting for the daemon
            t0 = time.monotonic()
            p.send_signal(signal.SIGINT)
            out, _ = p.communicate(timeout=20)
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        eq(out.strip(), 'interrupted', 'Ctrl-C ended the lookup with EINTR (the handler ran), not an I/O error')
        true(took < 10, f'the interrupted lookup returned after {took:.1f}s (the store hangs; fetches time out after 30 s)')
        true(h.alive(), 'the daemon is alive')
        h.proxy.clear()
        eq(read(os.path.join(mnt, 'sub', 'cold')), files['sub/cold'], 'the file reads correctly once the store is back')
    finally:
        h.close()


@check('wake.ctrl_c_kills_reader_of_hung_file', needs=('homefs', 's3'), timeout=240)
def _(t):
    """`cat` of a cold file whose block GET hangs dies at once on Ctrl-C (SIGINT, default action)."""
    h = S3Home(t, 'ctrlc')
    try:
        files = {'cold': os.urandom(300_000)}
        h.push(files)
        mnt = h.mount()
        _settled(h, 'GET', 'meta')
        h.proxy.add('hang', 'GET', '/blocks/')
        before = h.proxy.count('GET', 'blocks')
        p = subprocess.Popen(['cat', os.path.join(mnt, 'cold')], stdout=subprocess.DEVNULL)
        try:
            _wait(lambda: h.proxy.count('GET', 'blocks') > before, 'the read to reach the hung store')
            time.sleep(0.2)
            t0 = time.monotonic()
            p.send_signal(signal.SIGINT)
            rc = p.wait(timeout=20)
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        eq(rc, -signal.SIGINT, 'cat ended by the signal')
        true(took < 10, f'cat ended {took:.1f}s after Ctrl-C')
        true(h.alive(), 'the daemon is alive')
        h.proxy.clear()
        eq(read(os.path.join(mnt, 'cold')), files['cold'], 'the file reads correctly once the store is back')
    finally:
        h.close()


def _git(repo, *args, strace_log=None):
    """Runs git in `repo` (under strace, logging every open, when `strace_log` is given); returns stdout."""
    cmd = ['git', '-c', 'user.name=t', '-c', 'user.email=t@e', *args]
    if strace_log:
        cmd = ['strace', '-f', '-qq', '-e', 'trace=open,openat,openat2', '-o', strace_log, *cmd]
    p = subprocess.run(cmd, cwd=repo, capture_output=True, timeout=120)
    eq(p.returncode, 0, f'git {" ".join(args)}: {p.stderr.decode().strip()}')
    return p.stdout.decode()


def _opened(t, repo, *args):
    """The work-tree paths (relative to `repo`, outside .git) that `git <args>` opened."""
    log = os.path.join(t.scratch, 'strace.log')
    _git(repo, *args, strace_log=log)
    out = set()
    with open(log) as f:
        for line in f:
            q = line.find('"')
            if q < 0 or ' = -1 ' in line:
                continue
            p = line[q + 1:line.find('"', q + 1)]
            rel = os.path.relpath(p, repo) if os.path.isabs(p) else os.path.normpath(p)
            if not rel.startswith('..') and not rel.startswith('.git') and rel != '.':
                out.add(rel)
    os.unlink(log)
    return out


def _inos(root):
    return {os.path.relpath(os.path.join(d, n), root): os.lstat(os.path.join(d, n)).st_ino
            for d, _, names in os.walk(root) for n in names}


@check('wake.git_status_stat_only', needs=('homefs', 's3'), timeout=300)
def _(t):
    """A repo pushed from a plain directory (push records each file's inode number: model/inos.ts): on a
    fresh host `git status` opens none of the tracked files, because its index matches the st_ino (low 32
    bits), times, size and owner the mount serves; a new file committed there keeps its number after a
    seal and a wake on another fresh host, where `git status` opens no tracked file either."""
    h = S3Home(t, 'gitino')
    try:
        repo = os.path.join(t.scratch, 'push-src', 'repo')
        files = {f'd{i % 3}/f{i}.txt': os.urandom(2000 + i) for i in range(30)}
        for name, data in files.items():
            os.makedirs(os.path.join(repo, os.path.dirname(name)), exist_ok=True)
            write(os.path.join(repo, name), data)
        time.sleep(1.1)  # an index written in the same second as a file makes git read it ("racily clean")
        _git(repo, 'init', '-q')
        _git(repo, 'add', '-A')
        _git(repo, 'commit', '-qm', 'init')
        _git(repo, 'update-index', '-q', '--refresh')
        h.push({})
        mnt = h.mount()
        work = os.path.join(mnt, 'repo')
        true('d1/f1.txt' in _opened(t, work, 'hash-object', 'd1/f1.txt'), 'the strace check sees a file git reads')
        eq(_opened(t, work, 'status', '--porcelain') & set(files), set(), 'tracked files git status opened on a fresh host')
        eq(_git(work, 'status', '--porcelain'), '', 'git status of the pushed repo')
        write(os.path.join(work, 'd0/new.txt'), b'new\n')
        time.sleep(1.1)
        _git(work, 'add', '-A')
        _git(work, 'commit', '-qm', 'new')
        before = _inos(work)
        h.env.sleep(mnt, timeout=180)
        h.mnts.remove(mnt)
        mnt2 = h.mount()
        work2 = os.path.join(mnt2, 'repo')
        eq(_inos(work2), before, 'inode numbers on the next fresh host')
        eq(_opened(t, work2, 'status', '--porcelain') & (set(files) | {'d0/new.txt'}), set(), 'tracked files git status opened after the move')
    finally:
        h.close()

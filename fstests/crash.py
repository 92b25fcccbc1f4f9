"""Crash and recovery matrix: kill -9 of the daemon during writes, during a seal, and during uploads;
then (a) remount on the same state dir, or (b) remount as a fresh host (empty cache and state,
--takeover). Asserts: every byte fsync'd under --fsync store is present in both; in (a) every file
written and closed before the kill is complete, and a file being written at the kill holds only bytes
that were written (or zeros); in (b) the last seal is atomic (all of its files or none); the home mounts
clean and the store verifies clean. Plus: a second read-write mount of a live home is refused, and
sleep/remount keeps everything (the non-crash baseline)."""
import os
import random
import signal
import subprocess
import time

from lib import mounts
from lib.asserts import eq, read, true, write
from lib.harness import check
from lib.homefs import BIN

MIB = 1 << 20


def _pattern(name, size):
    r = random.Random(name)
    return r.randbytes(size)


def _write_fsync(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


class Scenario:
    """One home on its own host dirs; knows what was fsync'd, closed, and in flight at the kill."""

    def __init__(self, t, tag, extra=()):
        self.t, self.env = t, t.env
        self.home = f'fstests/crash-{tag}'
        self.cache, self.state, self.mnt = self.env.fresh_dirs(f'crash-{tag}')
        self.fsynced = {}
        self.closed = {}
        self.sealed_batch = {}
        self.inflight = None
        self.env.mount(self.home, self.mnt, self.cache, self.state, extra=('--fsync', 'store', *extra))

    def p(self, *a):
        return os.path.join(self.mnt, *a)

    def base_writes(self):
        os.makedirs(self.p('work', 'deep'))
        for i in range(5):
            name = f'work/fsynced{i}'
            data = _pattern(name, 1000 + i * 300000)
            _write_fsync(self.p(name), data)
            self.fsynced[name] = data
        for i in range(40):
            name = f'work/deep/closed{i}'
            data = _pattern(name, random.Random(i).randrange(0, 200000))
            write(self.p(name), data)
            self.closed[name] = data

    def start_inflight_writer(self):
        """A child process appending a known pattern to a file until it is killed by the dead mount."""
        name = 'work/inflight'
        self.inflight = (name, _pattern(name, 64 * MIB))
        code = ('import os,sys,random\n'
                'data=random.Random(sys.argv[2]).randbytes(64<<20)\n'
                'fd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT|os.O_TRUNC,0o644)\n'
                'off=0\n'
                'while off < len(data):\n'
                '    off += os.write(fd, data[off:off+65536])\n')
        self.writer = subprocess.Popen(['python3', '-c', code, self.p(name), name],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self):
        pid = int(self.env.status(self.mnt)['pid'])
        os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                os.kill(pid, 0)
                time.sleep(0.02)
            except ProcessLookupError:
                break
        self.env.unmount(self.mnt)
        if self.inflight:
            try:
                self.writer.wait(10)
            except subprocess.TimeoutExpired:
                self.writer.kill()
                self.writer.wait(5)

    def remount_same(self):
        self.env.mount(self.home, self.mnt, self.cache, self.state)
        return self.mnt

    def remount_fresh(self):
        cache, state, mnt = self.env.fresh_dirs(f'{self.home.split("/")[1]}-fresh')
        self.env.mount(self.home, mnt, cache, state, extra=('--takeover',))
        return mnt

    def assert_files(self, mnt, files, what):
        for name, data in files.items():
            p = os.path.join(mnt, name)
            true(os.path.exists(p), f'{what}: {name} missing')
            got = read(p)
            if got != data:
                raise AssertionError(f'{what}: {name} has {len(got)} bytes, want {len(data)}'
                                     f'{" (content differs)" if len(got) == len(data) else ""}')

    def assert_inflight_sane(self, mnt):
        name, data = self.inflight
        p = os.path.join(mnt, name)
        if not os.path.exists(p):
            return
        got = read(p)
        true(len(got) <= len(data), f'{name}: longer than anything written')
        for off in range(0, len(got), 4096):
            page = got[off:off + 4096]
            if page != data[off:off + len(page)] and page.count(0) != len(page):
                raise AssertionError(f'{name}: page at {off} holds bytes that were never written there')

    def finish(self, mnt):
        self.env.sleep(mnt)
        p = self.env.verify(self.home)
        eq(p.returncode, 0, f'homefs verify {self.home} after recovery: {p.stderr.decode().strip()[-300:]}')


def _run(t, when, variant):
    s = Scenario(t, f'{when}-{variant}')
    s.base_writes()
    batch = {}
    if when == 'writes':
        s.start_inflight_writer()
        time.sleep(0.5)
    elif when in ('seal', 'upload'):
        # a dirty batch big enough that sealing takes a while; then kill mid-seal / mid-upload
        n, size = (60, 40000) if when == 'seal' else (6, 6 * MIB)
        os.makedirs(s.p('batch'))
        for i in range(n):
            name = f'batch/b{i}'
            data = _pattern(name, size + i)
            write(s.p(name), data)
            batch[name] = data
        s.closed.update(batch)
        blocks_dir = os.path.join(s.env.store_dir, 'fstests', 'blocks')
        before = _count_files(blocks_dir)
        sync = subprocess.Popen([_bin(), 'sync', s.mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if when == 'upload':
            end = time.monotonic() + 30
            while _count_files(blocks_dir) <= before + 1 and time.monotonic() < end and sync.poll() is None:
                time.sleep(0.005)
        else:
            time.sleep(random.Random(t.seed).uniform(0.02, 0.2))
        s.kill()
        sync.wait(30)
    else:
        raise ValueError(when)
    if when == 'writes':
        s.kill()
    if variant == 'same':
        mnt = s.remount_same()
        s.assert_files(mnt, s.fsynced, 'fsynced file after remount on the same state dir')
        s.assert_files(mnt, s.closed, 'closed file after remount on the same state dir')
        if s.inflight:
            s.assert_inflight_sane(mnt)
    else:
        mnt = s.remount_fresh()
        s.assert_files(mnt, s.fsynced, 'fsynced file on a fresh host')
        if batch:
            present = [n for n in batch if os.path.exists(os.path.join(mnt, n))]
            true(len(present) in (0, len(batch)), f'seal not atomic: {len(present)} of {len(batch)} batch files on a fresh host')
            if present:
                s.assert_files(mnt, batch, 'sealed batch on a fresh host')
    s.finish(mnt)


def _count_files(d):
    n = 0
    for _, _, files in os.walk(d):
        n += len(files)
    return n


for _when in ('writes', 'seal', 'upload'):
    for _variant in ('same', 'fresh'):
        def _make(when, variant):
            @check(f'crash.kill9_during_{when}.{"same_state" if variant == "same" else "fresh_host"}',
                   needs=('homefs',), timeout=180)
            def _(t):
                _run(t, when, variant)
        _make(_when, _variant)


@check('crash.preseal_block_rewritten_after_early_hash', needs=('homefs',), timeout=180)
def _(t):
    """A large file written in order has its blocks hashed and uploaded while it is written (preseal);
    blocks rewritten after their early hash must reach the store with their new bytes, not the early ones.
    Preseal watches the daemon's writes: it runs on the writeback path (passthrough writes bypass it)."""
    s = Scenario(t, 'preseal', extra=('--fuse-passthrough', 'off'))
    # A file the seal leaves out (*.tmp is a default exclude) is never hashed or uploaded early.
    _write_fsync(s.p('scratch.tmp'), _pattern('scratch.tmp', 40 * MIB))
    eq((s.env.status(s.mnt).get('preseal') or {}).get('hashed'), 0, 'blocks of an excluded file hashed early')
    name = 'big'
    data = bytearray(_pattern(name, 40 * MIB))
    fd = os.open(s.p(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off in range(0, len(data), MIB):
            os.write(fd, data[off:off + MIB])
        end = time.monotonic() + 60
        while (s.env.status(s.mnt).get('preseal') or {}).get('hashed', 0) < 2 and time.monotonic() < end:
            time.sleep(0.1)
        hashed = (s.env.status(s.mnt).get('preseal') or {}).get('hashed', 0)
        true(hashed >= 2, f'blocks 0 and 1 of a 40 MiB file written in order were hashed early (status: {hashed})')
        patch = b'rewritten after its early hash ' * 300
        for at in (100, 5 * MIB + 123):  # inside blocks 0 and 1, the first ones hashed
            os.pwrite(fd, patch, at)
            data[at:at + len(patch)] = patch
        os.fsync(fd)
    finally:
        os.close(fd)
    mnt = s.remount_fresh()
    s.assert_files(mnt, {name: bytes(data)}, 'a file rewritten after its blocks were hashed early, on a fresh host')
    s.finish(mnt)


@check('crash.sleep_remount_baseline', needs=('homefs',), timeout=120)
def _(t):
    s = Scenario(t, 'baseline')
    s.base_writes()
    s.env.sleep(s.mnt)
    mnt = s.remount_fresh()
    s.assert_files(mnt, {**s.fsynced, **s.closed}, 'file after sleep and remount on a fresh host')
    s.finish(mnt)


@check('crash.second_mount_refused', needs=('homefs',), timeout=120)
def _(t):
    s = Scenario(t, 'lease')
    write(s.p('x'), b'x')
    cache, state, mnt = s.env.fresh_dirs('lease-second')
    p = s.env.mount(s.home, mnt, cache, state, check=False)
    if p.returncode == 0:
        s.env.sleep(mnt)
        raise AssertionError('a second read-write mount of a live home was accepted')
    err = p.stderr.decode().strip().splitlines()
    true(len(err) == 1, f'refusal is not one line: {err[:3]}')
    true(not mounts.is_mounted(mnt), 'refused mount left a mount behind')
    eq(read(s.p('x')), b'x', 'first mount still serves')
    s.finish(s.mnt)


@check('crash.takeover_fences_old_holder', needs=('homefs',), timeout=180)
def _(t):
    s = Scenario(t, 'fence')
    _write_fsync(s.p('before'), b'before takeover')
    mnt2 = s.remount_fresh()  # the old daemon is alive: an operator claims the home anyway
    eq(read(os.path.join(mnt2, 'before')), b'before takeover', 'fsynced file seen by the new holder')
    _write_fsync(os.path.join(mnt2, 'new-holder'), b'new')
    refused = False
    try:
        _write_fsync(s.p('old-holder'), b'stale writer')
    except OSError:
        refused = True
    true(refused, "the fenced holder's fsync returned success")
    subprocess.run([_bin(), 'sync', s.mnt], capture_output=True, timeout=60)
    s.env.sleep(mnt2)
    cache, state, mnt3 = s.env.fresh_dirs('fence-check')
    s.env.mount(s.home, mnt3, cache, state, extra=('--takeover',))
    try:
        true(os.path.exists(os.path.join(mnt3, 'new-holder')), "the new holder's write is in HEAD")
        true(not os.path.exists(os.path.join(mnt3, 'old-holder')), "the fenced holder's seal advanced HEAD")
    finally:
        s.env.sleep(mnt3)
    subprocess.run([_bin(), 'sleep', s.mnt], capture_output=True, timeout=60)
    s.env.unmount(s.mnt)


def _bin():
    return BIN


_BATCH_WRITER = '''
import os, sys, random
mnt, log, k = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(os.path.join(mnt, 'w' + k), exist_ok=True)
with open(log, 'a', buffering=1) as out:
    for i in range(100000):
        name = f'w{k}/f{i}'
        data = random.Random(name).randbytes(100 + i % 3000)
        try:
            fd = os.open(os.path.join(mnt, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, data)
            os.close(fd)
            os.mkdir(os.path.join(mnt, name + '.d'))
        except OSError:
            break
        out.write(name + '\\n')  # mkdir() returned: every request for this file was answered
'''


@check('crash.kill9_in_batched_commit.loses_only_unreplied', needs=('homefs',), timeout=240)
def _(t):
    """Four processes each create, write and close a file, then make a directory next to it, over and over
    (so journal batches hold several requests); the daemon writes half of a batched commit's redo-log
    record, lingers 300 ms, then kills itself with SIGKILL (HOMEFS_TEST_KILL_IN_COMMIT). Every file whose
    directory was made before the kill is complete, and the directory exists, after a remount on the same
    state dir: no reply went out before its batch committed (the batch that died held the last, replied-to
    mkdirs otherwise), and the torn record is dropped."""
    _batch_kill(t, 'crash-batch', {'HOMEFS_TEST_KILL_IN_COMMIT': '300'})


@check('crash.kill9_in_checkpoint.keeps_replied', needs=('homefs',), timeout=240)
def _(t):
    """As above, but the daemon kills itself inside its third checkpoint: LMDB has taken what the redo log
    held and the log is not emptied yet (HOMEFS_TEST_KILL_IN_CHECKPOINT). The remount applies the log again
    over LMDB: every replied file and directory is there once, with its content."""
    _batch_kill(t, 'crash-checkpoint', {'HOMEFS_TEST_KILL_IN_CHECKPOINT': '3'})


def _batch_kill(t, name, kill_env):
    env = t.env
    home = f'fstests/{name}'
    cache, state, mnt = env.fresh_dirs(name)
    env.cli('mount', home, mnt, '--store', env.store_url, '--cache-dir', cache, '--state-dir', state,
            '--allow-other', env=kill_env)
    env.active.add(mnt)
    pid = int(env.status(mnt)['pid'])
    logs = [os.path.join(os.path.dirname(state), f'replied{k}.log') for k in range(4)]
    writers = [subprocess.Popen(['python3', '-c', _BATCH_WRITER, mnt, logs[k], str(k)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for k in range(4)]
    end = time.monotonic() + 120
    died = False
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            died = True
            break
        time.sleep(0.05)
    if not died:
        os.kill(pid, signal.SIGKILL)
    for w in writers:
        w.wait(60)
    env.unmount(mnt)
    true(died, 'the daemon did not kill itself inside a batched commit or checkpoint within 120 s')
    replied = []
    for log in logs:
        if os.path.exists(log):
            with open(log) as f:
                replied += [line.strip() for line in f if line.strip()]
    true(len(replied) > 0, 'no file was created before the kill')
    env.mount(home, mnt, cache, state)
    missing = [n for n in replied if not os.path.exists(os.path.join(mnt, n))]
    true(not missing, f'{len(missing)} of {len(replied)} replied files lost by the kill, e.g. {missing[:3]}')
    for n in replied:
        want = random.Random(n).randbytes(100 + int(n.rsplit('f', 1)[1]) % 3000)
        if read(os.path.join(mnt, n)) != want:
            raise AssertionError(f'{n}: content differs after the kill and remount')
        true(os.path.isdir(os.path.join(mnt, n + '.d')), f'{n}.d: directory made before the kill is missing')
    env.sleep(mnt)
    p = env.verify(home)
    eq(p.returncode, 0, f'homefs verify {home} after recovery: {p.stderr.decode().strip()[-300:]}')


_SMALL_WRITER = '''
import os, sys, random
mnt, log = sys.argv[1], sys.argv[2]
os.makedirs(os.path.join(mnt, 'small'), exist_ok=True)
with open(log, 'a', buffering=1) as out:
    for i in range(100000):
        name = f'small/f{i}'
        try:
            fd = os.open(os.path.join(mnt, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, random.Random(name).randbytes(1 + i * 37 % 4000))
            os.close(fd)
            fd = os.open(os.path.join(mnt, 'small/log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(fd, b'%d\\n' % i)  # grows by a few bytes per round: stays far below the inline limit
            os.close(fd)
        except OSError:
            break
        out.write(name + '\\n')  # close() returned: every request for this round was answered
'''


@check('crash.kill9_small_inline_files_survive', needs=('homefs',), timeout=240)
def _(t):
    """Small new files are held in the journal, with no upper file (on the writeback path): a writer creates, writes
    and closes small files one after the other, and appends a line to a small log file after each;
    kill -9 of the daemon while it runs. No upper file exists for any of them (their bytes were only in
    the journal), and after a remount on the same state dir every file whose close returned is complete,
    and the log holds every line appended before the kill, in order."""
    env = t.env
    home = 'fstests/crash-small'
    cache, state, mnt = env.fresh_dirs('crash-small')
    env.mount(home, mnt, cache, state)
    passthrough = (env.status(mnt).get('fuse') or {}).get('passthrough') == 'on'
    log = os.path.join(os.path.dirname(state), 'small-replied.log')
    w = subprocess.Popen(['python3', '-c', _SMALL_WRITER, mnt, log], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 60
    while time.monotonic() < end and (not os.path.exists(log) or os.path.getsize(log) < 4000):
        time.sleep(0.05)
    env.kill9(mnt)
    w.wait(60)
    env.unmount(mnt)
    with open(log) as f:
        replied = [line.strip() for line in f if line.strip()]
    true(len(replied) >= 300, f'only {len(replied)} files were written before the kill')
    # Under FUSE passthrough every written file has its upper file (the kernel writes it): the rest holds.
    if not passthrough:
        upper = os.path.join(state, 'upper')
        left = os.listdir(upper) if os.path.isdir(upper) else []
        eq(left, [], 'upper files of small files (their bytes belong in the journal)')
    env.mount(home, mnt, cache, state)
    try:
        for n in replied:
            i = int(n.rsplit('f', 1)[1])
            if read(os.path.join(mnt, n)) != random.Random(n).randbytes(1 + i * 37 % 4000):
                raise AssertionError(f'{n}: content differs after the kill and remount')
        lines = read(os.path.join(mnt, 'small', 'log')).decode().split('\n')
        want = [str(i) for i in range(len(replied))]
        eq(lines[:len(want)], want, 'the small log file lost appended lines that were replied to')
    finally:
        env.sleep(mnt)
    p = env.verify(home)
    eq(p.returncode, 0, f'homefs verify {home} after recovery: {p.stderr.decode().strip()[-300:]}')


def _atomic_replace(t, step, variant):
    """The atomic-replace pattern (write tmp, fsync it, rename over, fsync the directory), killed -9
    (tmp is named conf.new: `*.tmp` is in the default excludes, kept out of snapshots by design)
    after `step` of its 4 steps. The target always holds the old or the new bytes, whole; once the
    directory fsync returned, the new bytes on any host; once tmp's fsync returned, tmp (or the target,
    when the rename landed) on any host."""
    s = Scenario(t, f'replace{step}-{variant}')
    old, new = _pattern('old', 70000), _pattern('new', 90000)
    os.makedirs(s.p('a', 'b', 'c', 'd', 'e'))
    target, tmp = s.p('a', 'b', 'c', 'd', 'e', 'conf'), s.p('a', 'b', 'c', 'd', 'e', 'conf.new')
    _write_fsync(target, old)
    dfd = os.open(os.path.dirname(target), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, new)
            if step >= 1:
                os.fsync(fd)
        finally:
            os.close(fd)
        if step >= 2:
            os.rename(tmp, target)
        if step >= 3:
            os.fsync(dfd)
    finally:
        os.close(dfd)
    s.kill()
    mnt = s.remount_same() if variant == 'same' else s.remount_fresh()
    rel = os.path.join('a', 'b', 'c', 'd', 'e')
    got = read(os.path.join(mnt, rel, 'conf'))
    true(got in (old, new), f'step {step}: target holds {len(got)} bytes that are neither the old nor the new file')
    tmp_now = os.path.join(mnt, rel, 'conf.new')
    if variant == 'same' and step >= 2:
        eq(got, new, f'step {step}: the rename was lost on the same state dir')
    if step >= 3:
        eq(got, new, 'the directory fsync returned but a fresh host sees the old file')
        true(not os.path.exists(tmp_now), 'tmp still exists after the fsync of its directory')
    elif step >= 1 and got != new:
        seen = {n: os.path.getsize(os.path.join(mnt, rel, n)) for n in os.listdir(os.path.join(mnt, rel))}
        true(os.path.exists(tmp_now) and read(tmp_now) == new, f'step {step}: the fsync of tmp returned but its bytes are lost (directory holds {seen})')
    s.finish(mnt)


for _step in range(4):
    for _variant in ('same', 'fresh'):
        def _make_replace(step, variant):
            @check(f'crash.atomic_replace_kill9_after_step{step}.{"same_state" if variant == "same" else "fresh_host"}',
                   needs=('homefs',), timeout=180)
            def _(t):
                _atomic_replace(t, step, variant)
        _make_replace(_step, _variant)


# --- the fsync log ------------------------------------------------------------------------------------

_STREAM = ('import os,sys,random\n'
           'd=sys.argv[1]\n'
           'for i in range(100000):\n'
           '    data=random.Random(i).randbytes(3000+i%5000)\n'
           '    try:\n'
           '        fd=os.open(os.path.join(d,"f%d"%i),os.O_WRONLY|os.O_CREAT|os.O_TRUNC,0o644)\n'
           '        os.write(fd,data); os.fsync(fd); os.close(fd)\n'
           '    except OSError as e:\n'
           '        print("E",i,flush=True); sys.exit(0)\n'
           '    print("S",i,flush=True)\n')


def _stream_data(i):
    return random.Random(i).randbytes(3000 + i % 5000)


class FsyncStream:
    """A child process writing and fsyncing f0, f1, ... in `d`, one line per answer (S i / E i)."""

    def __init__(self, d):
        os.makedirs(d, exist_ok=True)
        self.p = subprocess.Popen(['python3', '-c', _STREAM, d], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.ok, self.failed = [], []

    def wait_for(self, n, timeout=60):
        end = time.monotonic() + timeout
        while len(self.ok) < n and time.monotonic() < end:
            line = self.p.stdout.readline()
            if not line:
                break
            self._take(line)
        true(len(self.ok) >= n, f'the fsync stream did only {len(self.ok)} fsyncs')

    def _take(self, line):
        kind, i = line.split()
        (self.ok if kind == 'S' else self.failed).append(int(i))

    def finish(self):
        try:
            out, _ = self.p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, _ = self.p.communicate()
        for line in out.splitlines():
            self._take(line)


def _assert_stream(mnt, rel, st, what):
    for i in st.ok:
        p = os.path.join(mnt, rel, f'f{i}')
        true(os.path.exists(p), f'{what}: f{i} was fsync\'d but is missing')
        eq(read(p), _stream_data(i), f'{what}: f{i} content')


def _stream_kill(t, variant):
    s = Scenario(t, f'logstream-{variant}')
    s.base_writes()
    st = FsyncStream(s.p('stream'))
    st.wait_for(15 + random.Random(t.seed).randrange(30))
    s.kill()
    st.finish()
    mnt = s.remount_same() if variant == 'same' else s.remount_fresh()
    s.assert_files(mnt, s.fsynced, 'fsynced file')
    _assert_stream(mnt, 'stream', st, 'fsync stream killed -9 mid-segment')
    s.finish(mnt)


for _variant in ('same', 'fresh'):
    def _make_stream(variant):
        @check(f'crash.log_kill9_during_fsync_stream.{"same_state" if variant == "same" else "fresh_host"}', needs=('homefs',), timeout=180)
        def _(t):
            _stream_kill(t, variant)
    _make_stream(_variant)


@check('crash.log_kill9_during_replay', needs=('homefs',), timeout=240)
def _(t):
    s = Scenario(t, 'logreplay')
    st = FsyncStream(s.p('stream'))
    st.wait_for(20)
    s.kill()
    st.finish()
    # A first new host is killed -9 while it wakes (claims and replays the log) ...
    cache, state, mnt = s.env.fresh_dirs('logreplay-first')
    p = subprocess.Popen([_bin(), 'mount', s.home, mnt, '--store', s.env.store_url, '--cache-dir', cache, '--state-dir', state,
                          '--allow-other', '--takeover', '--foreground'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(random.Random(t.seed).uniform(0.05, 0.6))
    p.kill()
    p.wait(10)
    s.env.unmount(mnt)
    # ... and the next one still finds everything that was fsync'd.
    mnt2 = s.remount_fresh()
    _assert_stream(mnt2, 'stream', st, 'after a takeover killed during replay')
    s.finish(mnt2)


@check('crash.log_takeover_while_old_holder_writes', needs=('homefs',), timeout=240)
def _(t):
    s = Scenario(t, 'logfence')
    st = FsyncStream(s.p('stream'))
    st.wait_for(10)
    mnt2 = s.remount_fresh()  # the old daemon is alive and keeps fsyncing
    time.sleep(1.0)
    st.p.kill()  # if the old holder's fsyncs were still answered, stop it
    st.finish()
    true(len(st.failed) == 1, f'the fenced holder\'s fsync must fail once it is fenced (failures: {st.failed[:3]}, successes: {len(st.ok)})')
    _assert_stream(mnt2, 'stream', st, 'new holder after takeover')
    s.env.sleep(mnt2)
    cache, state, mnt3 = s.env.fresh_dirs('logfence-check')
    s.env.mount(s.home, mnt3, cache, state, extra=('--takeover',))
    try:
        _assert_stream(mnt3, 'stream', st, 'a third host')
        for i in st.failed:
            true(not os.path.exists(os.path.join(mnt3, 'stream', f'f{i}')), f'f{i}, whose fsync failed on the fenced holder, is visible')
    finally:
        s.env.sleep(mnt3)
    subprocess.run([_bin(), 'sleep', s.mnt], capture_output=True, timeout=60)
    s.env.unmount(s.mnt)


def _log_files(store_dir, home):
    d = os.path.join(store_dir, *home.split('/')[:1], 'homes', home.split('/')[1], 'log')
    out = []
    for root, _, files in os.walk(d):
        out += [os.path.join(root, f) for f in files]
    return sorted(out)


def _hostile(t, how):
    s = Scenario(t, f'loghostile-{how}')
    _write_fsync(s.p('sealed'), b'sealed by the first fsync')
    _write_fsync(s.p('logged1'), b'in segment 0')
    _write_fsync(s.p('logged2'), b'in segment 1')
    s.kill()
    segs = _log_files(s.env.store_dir, s.home)
    true(len(segs) >= 2, f'two log segments in the store, found {segs}')
    newest = segs[0]  # descending encoding: the newest sorts first
    data = open(newest, 'rb').read()
    if how == 'truncated':
        bad = data[:len(data) // 2]
    elif how == 'corrupted':
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0xFF
        bad = bytes(bad)
    else:  # from another generation: segment 0's bytes under segment 1's key
        bad = open(segs[1], 'rb').read()
    os.chmod(newest, 0o644)
    with open(newest, 'wb') as f:
        f.write(bad)
    mnt = s.remount_fresh()
    eq(read(os.path.join(mnt, 'logged1')), b'in segment 0', 'the previous valid segment is replayed')
    true(not os.path.exists(os.path.join(mnt, 'logged2')), 'the rejected segment was replayed')
    log = open(os.path.join(os.path.dirname(mnt), 'state', 'daemon.log'), encoding='utf8', errors='replace').read()
    true('log segment' in log and 'ignoring it' in log, 'the rejection is logged with a clear line')
    s.finish(mnt)


for _how in ('truncated', 'corrupted', 'wrong_key'):
    def _make_hostile(how):
        @check(f'crash.log_hostile_segment_{how}', needs=('homefs',), timeout=180)
        def _(t):
            _hostile(t, how)
    _make_hostile(_how)


def _protection(s):
    return s.env.status(s.mnt).get('protection') or {}


def _wait_for(what, cond, seconds=30):
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f'timed out waiting for {what}')
        time.sleep(0.005)


for _variant in ('same', 'fresh'):
    def _make_wb(variant):
        @check(f'crash.kill9_during_writebehind.{"same_state" if variant == "same" else "fresh_host"}', needs=('homefs',), timeout=180)
        def _(t):
            """kill -9 while write-behind uploads closed files: the same state directory keeps every closed
            file; a fresh host keeps every fsync, and a closed file it shows holds exactly what was written."""
            s = Scenario(t, f'wb-{variant}')
            s.base_writes()
            os.makedirs(s.p('wb'))
            files = {}
            for i in range(300):
                name = f'wb/f{i}'
                files[name] = _pattern(name, 3000 + i * 97)
                write(s.p(name), files[name])
            s.closed.update(files)
            _wait_for('a write-behind upload', lambda: _protection(s).get('blocksUploaded', 0) > 0)
            s.kill()
            if variant == 'same':
                mnt = s.remount_same()
                s.assert_files(mnt, s.fsynced, 'fsynced file after remount on the same state dir')
                s.assert_files(mnt, s.closed, 'closed file after remount on the same state dir')
            else:
                mnt = s.remount_fresh()
                s.assert_files(mnt, s.fsynced, 'fsynced file on a fresh host')
                shown = {n: d for n, d in s.closed.items() if os.path.exists(os.path.join(mnt, n))}
                s.assert_files(mnt, shown, 'closed file a fresh host shows')
            s.finish(mnt)
    _make_wb(_variant)


@check('crash.kill9_after_writebehind_before_segment', needs=('homefs',), timeout=180)
def _(t):
    """Write-behind stored every file, then kill -9 before any segment referenced them (protection off):
    the same state directory keeps them, with nothing left to upload; its next fsync makes them durable by
    reference, and a fresh host that takes over reads them all."""
    s = Scenario(t, 'wb-gap', extra=('--protect-interval', '0'))
    os.makedirs(s.p('stored'))
    files = {f'stored/f{i}': _pattern(f'stored/f{i}', 20000 + i) for i in range(40)}
    for name, data in files.items():
        write(s.p(name), data)
    _wait_for('write-behind to store every file', lambda: _protection(s).get('filesStored', 0) >= 40 and _protection(s).get('backlogFiles', 1) == 0)
    s.kill()
    mnt = s.remount_same()
    s.assert_files(mnt, files, 'a stored file after remount on the same state dir')
    eq(_protection(s).get('backlogFiles'), 0, 'files stored before the kill are queued again')
    _write_fsync(s.p('after'), b'fsynced after the kill')
    s.kill()
    fresh = s.remount_fresh()
    s.assert_files(fresh, {**files, 'after': b'fsynced after the kill'}, 'on a fresh host after the fsync')
    s.finish(fresh)


@check('crash.rewrite_during_writebehind.fresh_host', needs=('homefs',), timeout=180)
def _(t):
    """A file rewritten again and again while write-behind and protection upload it: after its last
    version is fsync'd and the daemon is killed, a fresh host reads the last version, not an upload of an
    earlier one."""
    s = Scenario(t, 'wb-rewrite', extra=('--protect-interval', '1s'))
    rnd = random.Random(t.seed)
    data = b''
    for v in range(40):
        data = _pattern(f'busy-v{v}', rnd.randrange(1000, 300000))
        write(s.p('busy'), data)
        time.sleep(rnd.choice((0, 0.002, 0.05, 0.15)))
    _write_fsync(s.p('busy'), data)
    s.kill()
    mnt = s.remount_fresh()
    s.assert_files(mnt, {'busy': data}, 'the last version on a fresh host')
    s.finish(mnt)


@check('crash.protect_interval_without_fsync.fresh_host', needs=('homefs',), timeout=180)
def _(t):
    """Nothing fsync'd: a file written 12 s before a kill -9 (the protection interval is 10 s) is on a
    fresh host that takes over, byte-identical."""
    s = Scenario(t, 'rpo')
    os.makedirs(s.p('notes'))
    files = {'notes/today.md': b'the only copy\n', 'notes/data.bin': _pattern('notes/data.bin', 500000)}
    for name, data in files.items():
        write(s.p(name), data)
    time.sleep(12)
    s.kill()
    mnt = s.remount_fresh()
    s.assert_files(mnt, files, 'a file written 12 s before the kill, never fsync-ed, on a fresh host')
    s.finish(mnt)

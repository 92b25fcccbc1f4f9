"""POSIX conformance, metadata: chmod, chown, utimensat (nanoseconds, UTIME_NOW, UTIME_OMIT, symlinks),
truncate/ftruncate, and the mtime/ctime/atime updates each call must make; st_ino stability; statfs."""
import ctypes
import errno
import os
import stat
import time

from lib.asserts import eq, expect_errno, read, true, write
from lib.harness import check

_libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


class _Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def utimensat(path, atime, mtime, flags=0):
    """atime/mtime: (sec, nsec) tuples; nsec may be UTIME_NOW or UTIME_OMIT."""
    ts = (_Timespec * 2)(_Timespec(*atime), _Timespec(*mtime))
    if _libc.utimensat(AT_FDCWD, path.encode(), ts, flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


def tick():
    time.sleep(0.02)


@check('posix.chmod.basic')
def _(t):
    write(t.p('f'))
    for m in (0o000, 0o644, 0o755, 0o4755, 0o2755, 0o1777, 0o7777, 0o600):
        os.chmod(t.p('f'), m)
        eq(oct(stat.S_IMODE(os.lstat(t.p('f')).st_mode)), oct(m), f'chmod {m:o}')


@check('posix.chmod.dir_and_symlink')
def _(t):
    os.mkdir(t.p('d'))
    os.chmod(t.p('d'), 0o711)
    eq(oct(stat.S_IMODE(os.lstat(t.p('d')).st_mode)), oct(0o711), 'dir mode')
    write(t.p('f'))
    os.chmod(t.p('f'), 0o600)
    os.symlink('f', t.p('l'))
    os.chmod(t.p('l'), 0o640)  # follows the link
    eq(oct(stat.S_IMODE(os.lstat(t.p('f')).st_mode)), oct(0o640), 'chmod through symlink')


@check('posix.chmod.ctime')
def _(t):
    write(t.p('f'))
    st0 = os.lstat(t.p('f'))
    tick()
    os.chmod(t.p('f'), 0o600)
    st1 = os.lstat(t.p('f'))
    true(st1.st_ctime_ns > st0.st_ctime_ns, 'chmod did not update ctime')
    eq(st1.st_mtime_ns, st0.st_mtime_ns, 'chmod changed mtime')


@check('posix.chmod.errors')
def _(t):
    expect_errno(errno.ENOENT, os.chmod, t.p('nope'), 0o644, what='chmod missing')
    os.symlink('nope', t.p('l'))
    expect_errno(errno.ENOENT, os.chmod, t.p('l'), 0o644, what='chmod dangling symlink')


@check('posix.chown.basic')
def _(t):
    write(t.p('f'))
    os.chown(t.p('f'), 1234, 5678)
    st = os.lstat(t.p('f'))
    eq((st.st_uid, st.st_gid), (1234, 5678), 'uid/gid')
    os.chown(t.p('f'), -1, 42)
    st = os.lstat(t.p('f'))
    eq((st.st_uid, st.st_gid), (1234, 42), 'chown -1 keeps uid')
    os.chown(t.p('f'), 7, -1)
    eq(os.lstat(t.p('f')).st_uid, 7, 'chown uid only')


@check('posix.chown.symlink_nofollow')
def _(t):
    write(t.p('f'))
    os.symlink('f', t.p('l'))
    os.lchown(t.p('l'), 99, 98)
    eq((os.lstat(t.p('l')).st_uid, os.lstat(t.p('l')).st_gid), (99, 98), 'lchown of the link')
    eq(os.lstat(t.p('f')).st_uid, 0, 'lchown left the target alone')


@check('posix.chown.clears_setuid')
def _(t):
    write(t.p('f'))
    os.chmod(t.p('f'), 0o6755)
    os.chown(t.p('f'), 1000, 1000)
    m = stat.S_IMODE(os.lstat(t.p('f')).st_mode)
    true(not m & stat.S_ISUID, f'chown kept the setuid bit ({m:o})')


@check('posix.chown.ctime')
def _(t):
    write(t.p('f'))
    c0 = os.lstat(t.p('f')).st_ctime_ns
    tick()
    os.chown(t.p('f'), 10, 10)
    true(os.lstat(t.p('f')).st_ctime_ns > c0, 'chown did not update ctime')


@check('posix.utimens.nanoseconds')
def _(t):
    write(t.p('f'))
    os.utime(t.p('f'), ns=(1_234_567_890_123_456_789, 987_654_321_987_654_321))
    st = os.lstat(t.p('f'))
    eq(st.st_atime_ns, 1_234_567_890_123_456_789, 'atime ns')
    eq(st.st_mtime_ns, 987_654_321_987_654_321, 'mtime ns')


@check('posix.utimens.old_and_negative')
def _(t):
    write(t.p('f'))
    os.utime(t.p('f'), ns=(0, 1))
    eq(os.lstat(t.p('f')).st_mtime_ns, 1, 'mtime 1 ns after the epoch')
    os.utime(t.p('f'), ns=(0, -1_000_000_000))
    eq(os.lstat(t.p('f')).st_mtime_ns, -1_000_000_000, 'mtime before the epoch')


@check('posix.utimens.now')
def _(t):
    write(t.p('f'))
    os.utime(t.p('f'), ns=(0, 0))
    before = time.time_ns() - 2_000_000_000
    utimensat(t.p('f'), (0, UTIME_NOW), (0, UTIME_NOW))
    st = os.lstat(t.p('f'))
    true(st.st_mtime_ns >= before, 'UTIME_NOW mtime')
    true(st.st_atime_ns >= before, 'UTIME_NOW atime')


@check('posix.utimens.omit')
def _(t):
    write(t.p('f'))
    os.utime(t.p('f'), ns=(111_000_000_111, 222_000_000_222))
    utimensat(t.p('f'), (5, UTIME_OMIT), (333, 3))
    st = os.lstat(t.p('f'))
    eq(st.st_atime_ns, 111_000_000_111, 'UTIME_OMIT atime kept')
    eq(st.st_mtime_ns, 333_000_000_003, 'mtime set')
    c0 = st.st_ctime_ns
    tick()
    utimensat(t.p('f'), (0, UTIME_OMIT), (0, UTIME_OMIT))
    eq(os.lstat(t.p('f')).st_mtime_ns, 333_000_000_003, 'both omitted: mtime unchanged')


@check('posix.utimens.symlink_nofollow')
def _(t):
    write(t.p('f'))
    os.utime(t.p('f'), ns=(5, 5))
    os.symlink('f', t.p('l'))
    utimensat(t.p('l'), (100, 7), (200, 9), AT_SYMLINK_NOFOLLOW)
    eq(os.lstat(t.p('l')).st_mtime_ns, 200_000_000_009, 'link mtime')
    eq(os.lstat(t.p('f')).st_mtime_ns, 5, 'target untouched')


@check('posix.utimens.ctime')
def _(t):
    write(t.p('f'))
    c0 = os.lstat(t.p('f')).st_ctime_ns
    tick()
    os.utime(t.p('f'), ns=(1, 1))
    true(os.lstat(t.p('f')).st_ctime_ns > c0, 'utimes did not update ctime')


@check('posix.utimens.dir')
def _(t):
    os.mkdir(t.p('d'))
    os.utime(t.p('d'), ns=(10**18, 10**18 + 5))
    eq(os.lstat(t.p('d')).st_mtime_ns, 10**18 + 5, 'dir mtime')


@check('posix.truncate.shrink_grow')
def _(t):
    data = os.urandom(100000)
    write(t.p('f'), data)
    os.truncate(t.p('f'), 5000)
    eq(read(t.p('f')), data[:5000], 'shrink')
    os.truncate(t.p('f'), 20000)
    eq(read(t.p('f')), data[:5000] + b'\0' * 15000, 'grow fills with zeros')
    os.truncate(t.p('f'), 0)
    eq(os.lstat(t.p('f')).st_size, 0, 'truncate to 0')


@check('posix.truncate.shrink_then_grow_no_stale_data')
def _(t):
    data = os.urandom(1 << 20)
    write(t.p('f'), data)
    for cut in (4096 * 3 + 5, 1000, 0):
        os.truncate(t.p('f'), cut)
        os.truncate(t.p('f'), 1 << 20)
        got = read(t.p('f'))
        eq(got[:cut] == data[:cut], True, f'prefix after cut {cut}')
        eq(got[cut:].count(0), (1 << 20) - cut, f'stale data after truncate to {cut} and regrow')


@check('posix.truncate.mtime_ctime')
def _(t):
    write(t.p('f'), b'x' * 100)
    os.utime(t.p('f'), ns=(0, 0))
    c0 = os.lstat(t.p('f')).st_ctime_ns
    tick()
    os.truncate(t.p('f'), 10)
    st = os.lstat(t.p('f'))
    true(st.st_mtime_ns > 0, 'truncate did not update mtime')
    true(st.st_ctime_ns > c0, 'truncate did not update ctime')


@check('posix.truncate.errors')
def _(t):
    os.mkdir(t.p('d'))
    write(t.p('f'))
    expect_errno(errno.EISDIR, os.truncate, t.p('d'), 0, what='truncate a dir')
    expect_errno(errno.EINVAL, os.truncate, t.p('f'), -1, what='truncate to -1')
    expect_errno(errno.ENOENT, os.truncate, t.p('nope'), 0, what='truncate missing')
    fd = os.open(t.p('f'), os.O_RDONLY)
    try:
        expect_errno((errno.EINVAL, errno.EBADF), os.ftruncate, fd, 0, what='ftruncate on O_RDONLY fd')
    finally:
        os.close(fd)


@check('posix.ftruncate.open_fd')
def _(t):
    fd = os.open(t.p('f'), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b'0123456789')
        os.ftruncate(fd, 4)
        eq(os.fstat(fd).st_size, 4, 'fstat size')
        os.write(fd, b'X')  # offset is still 10: leaves a hole
        eq(os.pread(fd, 100, 0), b'0123' + b'\0' * 6 + b'X', 'write past truncated end')
    finally:
        os.close(fd)


@check('posix.write.mtime_ctime')
def _(t):
    write(t.p('f'), b'a')
    os.utime(t.p('f'), ns=(0, 0))
    c0 = os.lstat(t.p('f')).st_ctime_ns
    tick()
    with open(t.p('f'), 'r+b') as f:
        f.write(b'b')
    st = os.lstat(t.p('f'))
    true(st.st_mtime_ns > 0, 'write did not update mtime')
    true(st.st_ctime_ns > c0, 'write did not update ctime')


@check('posix.dir.mtime_on_create_unlink')
def _(t):
    for op in ('create', 'mkdir', 'symlink', 'unlink', 'rmdir', 'link'):
        os.utime(t.d, ns=(0, 0))
        if op == 'create':
            write(t.p('f'))
        elif op == 'mkdir':
            os.mkdir(t.p('d'))
        elif op == 'symlink':
            os.symlink('f', t.p('s'))
        elif op == 'link':
            os.link(t.p('f'), t.p('h'))
        elif op == 'unlink':
            os.unlink(t.p('s'))
        elif op == 'rmdir':
            os.rmdir(t.p('d'))
        true(os.lstat(t.d).st_mtime_ns > 0, f'{op} did not update the parent dir mtime')


@check('posix.ino.stable')
def _(t):
    os.makedirs(t.p('a', 'b'))
    write(t.p('a', 'b', 'f'), b'x')
    inos = {p: os.lstat(t.p(*p)).st_ino for p in (('a',), ('a', 'b'), ('a', 'b', 'f'))}
    true(len(set(inos.values())) == 3, 'distinct files share an st_ino')
    for i in range(200):
        write(t.p(f'filler{i}'))
    for i in range(200):
        os.unlink(t.p(f'filler{i}'))
    with open(t.p('a', 'b', 'f'), 'ab') as f:
        f.write(b'y')
    os.chmod(t.p('a', 'b', 'f'), 0o600)
    for p, ino in inos.items():
        eq(os.lstat(t.p(*p)).st_ino, ino, f'st_ino of {"/".join(p)} changed')


@check('posix.ino.unique_among_live')
def _(t):
    inos = set()
    for i in range(300):
        write(t.p(f'f{i}'))
        inos.add(os.lstat(t.p(f'f{i}')).st_ino)
    eq(len(inos), 300, 'distinct live files with distinct st_ino')
    true(os.lstat(t.d).st_ino not in inos, 'dir shares an ino with a file')


@check('posix.stat.blocks_and_size')
def _(t):
    write(t.p('f'), b'x' * 10000)
    st = os.lstat(t.p('f'))
    eq(st.st_size, 10000, 'st_size')
    true(st.st_blocks * 512 >= 4096 or st.st_blocks == 0, f'st_blocks {st.st_blocks} implausible')
    true(st.st_blksize > 0, 'st_blksize is 0')


@check('posix.statfs')
def _(t):
    s = os.statvfs(t.d)
    true(s.f_bsize > 0, 'f_bsize 0')
    true(s.f_namemax >= 255, f'f_namemax {s.f_namemax} < 255')
    true(s.f_blocks >= s.f_bfree >= s.f_bavail >= 0, f'inconsistent block counts {s}')

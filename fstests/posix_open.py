"""POSIX conformance, open(2) and the data calls around it: O_CREAT, O_EXCL, O_TRUNC, O_APPEND,
O_NOFOLLOW, O_DIRECTORY, access modes, read/write/pread/pwrite, lseek with holes, fsync/fdatasync."""
import errno
import os
import stat

from lib.asserts import eq, expect_errno, read, true, write
from lib.harness import check


@check('posix.open.creat')
def _(t):
    fd = os.open(t.p('f'), os.O_WRONLY | os.O_CREAT, 0o640)
    os.close(fd)
    st = os.lstat(t.p('f'))
    true(stat.S_ISREG(st.st_mode), 'not a regular file')
    eq(st.st_size, 0, 'size of a new file')
    eq(st.st_uid, os.getuid(), 'owner')
    eq(st.st_nlink, 1, 'nlink')


@check('posix.open.creat_mode_umask')
def _(t):
    old = os.umask(0o027)
    try:
        os.close(os.open(t.p('f'), os.O_WRONLY | os.O_CREAT, 0o777))
    finally:
        os.umask(old)
    eq(oct(stat.S_IMODE(os.lstat(t.p('f')).st_mode)), oct(0o750), 'mode after umask 027')


@check('posix.open.creat_existing_keeps_data')
def _(t):
    write(t.p('f'), b'keep')
    os.close(os.open(t.p('f'), os.O_WRONLY | os.O_CREAT, 0o600))
    eq(read(t.p('f')), b'keep', 'O_CREAT without O_TRUNC on an existing file')


@check('posix.open.excl')
def _(t):
    fd = os.open(t.p('f'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)
    expect_errno(errno.EEXIST, os.open, t.p('f'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644,
                 what='O_CREAT|O_EXCL on existing file')
    os.symlink('nowhere', t.p('dang'))
    expect_errno(errno.EEXIST, os.open, t.p('dang'), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644,
                 what='O_CREAT|O_EXCL on a dangling symlink')
    true(not os.path.exists(t.p('nowhere')), 'O_EXCL followed a dangling symlink')


@check('posix.open.creat_through_dangling_symlink')
def _(t):
    os.symlink('target', t.p('l'))
    os.close(os.open(t.p('l'), os.O_WRONLY | os.O_CREAT, 0o644))
    true(os.path.isfile(t.p('target')), 'O_CREAT through a dangling symlink creates its target')


@check('posix.open.trunc')
def _(t):
    write(t.p('f'), b'x' * 10000)
    m0 = os.lstat(t.p('f')).st_mtime_ns
    os.utime(t.p('f'), ns=(0, 0))
    fd = os.open(t.p('f'), os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    st = os.lstat(t.p('f'))
    eq(st.st_size, 0, 'size after O_TRUNC')
    true(st.st_mtime_ns > 0, f'O_TRUNC did not update mtime (was {m0})')
    eq(read(t.p('f')), b'', 'content after O_TRUNC')


@check('posix.open.trunc_empty_no_mtime_change_ok')
def _(t):
    write(t.p('f'), b'abc')
    fd = os.open(t.p('f'), os.O_RDWR | os.O_TRUNC)
    os.write(fd, b'xy')
    os.close(fd)
    eq(read(t.p('f')), b'xy', 'rewrite after O_TRUNC')


@check('posix.open.append')
def _(t):
    write(t.p('f'), b'abc')
    fd = os.open(t.p('f'), os.O_WRONLY | os.O_APPEND)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b'def')
    os.lseek(fd, 1, os.SEEK_SET)
    os.write(fd, b'ghi')
    eq(os.lseek(fd, 0, os.SEEK_CUR), 9, 'offset after O_APPEND writes')
    os.close(fd)
    eq(read(t.p('f')), b'abcdefghi', 'O_APPEND ignores the file offset')


@check('posix.open.append_two_fds')
def _(t):
    write(t.p('f'))
    a = os.open(t.p('f'), os.O_WRONLY | os.O_APPEND)
    b = os.open(t.p('f'), os.O_WRONLY | os.O_APPEND)
    for i in range(50):
        os.write(a, b'A' * 7)
        os.write(b, b'B' * 5)
    os.close(a)
    os.close(b)
    eq(read(t.p('f')), (b'A' * 7 + b'B' * 5) * 50, 'interleaved O_APPEND writers')


@check('posix.open.nofollow')
def _(t):
    write(t.p('f'), b'x')
    os.symlink('f', t.p('l'))
    expect_errno(errno.ELOOP, os.open, t.p('l'), os.O_RDONLY | os.O_NOFOLLOW, what='O_NOFOLLOW on a symlink')
    os.close(os.open(t.p('f'), os.O_RDONLY | os.O_NOFOLLOW))
    fd = os.open(t.p('l'), os.O_PATH | os.O_NOFOLLOW)
    try:
        true(stat.S_ISLNK(os.fstat(fd).st_mode), 'O_PATH|O_NOFOLLOW fstat is the link')
    finally:
        os.close(fd)


@check('posix.open.directory')
def _(t):
    write(t.p('f'))
    os.mkdir(t.p('d'))
    expect_errno(errno.ENOTDIR, os.open, t.p('f'), os.O_RDONLY | os.O_DIRECTORY, what='O_DIRECTORY on a file')
    fd = os.open(t.p('d'), os.O_RDONLY | os.O_DIRECTORY)
    os.close(fd)
    expect_errno(errno.EISDIR, os.open, t.p('d'), os.O_WRONLY, what='open a dir for writing')
    expect_errno(errno.EISDIR, os.open, t.p('d'), os.O_RDWR, what='open a dir O_RDWR')
    expect_errno(errno.EISDIR, os.open, t.p('d'), os.O_WRONLY | os.O_CREAT, 0o644, what='O_CREAT on a dir')


@check('posix.open.errors')
def _(t):
    write(t.p('f'))
    expect_errno(errno.ENOENT, os.open, t.p('nope'), os.O_RDONLY, what='open missing')
    expect_errno(errno.ENOTDIR, os.open, t.p('f', 'x'), os.O_RDONLY, what='open under a file')
    expect_errno(errno.ENOENT, os.open, t.p('nope', 'x'), os.O_WRONLY | os.O_CREAT, 0o644,
                 what='O_CREAT in a missing dir')
    expect_errno(errno.ENOTDIR, os.open, t.p('f') + '/', os.O_RDONLY, what='trailing slash on a file')


@check('posix.open.access_modes')
def _(t):
    write(t.p('f'), b'abc')
    fd = os.open(t.p('f'), os.O_RDONLY)
    try:
        expect_errno(errno.EBADF, os.write, fd, b'x', what='write on O_RDONLY fd')
    finally:
        os.close(fd)
    fd = os.open(t.p('f'), os.O_WRONLY)
    try:
        expect_errno(errno.EBADF, os.read, fd, 1, what='read on O_WRONLY fd')
    finally:
        os.close(fd)


@check('posix.io.pread_pwrite')
def _(t):
    fd = os.open(t.p('f'), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b'hello', 100)
        eq(os.fstat(fd).st_size, 105, 'size after pwrite at 100')
        eq(os.pread(fd, 200, 0), b'\0' * 100 + b'hello', 'hole reads as zeros')
        eq(os.pread(fd, 10, 105), b'', 'read at EOF')
        eq(os.pread(fd, 10, 10 ** 9), b'', 'read far past EOF')
        eq(os.lseek(fd, 0, os.SEEK_CUR), 0, 'pwrite/pread do not move the offset')
    finally:
        os.close(fd)


@check('posix.io.overwrite_middle')
def _(t):
    data = bytearray(os.urandom(300000))
    write(t.p('f'), bytes(data))
    fd = os.open(t.p('f'), os.O_RDWR)
    try:
        for off in (0, 4095, 4096, 65535, 131072, 299990):
            patch = os.urandom(17)
            os.pwrite(fd, patch, off)
            data[off:off + 17] = patch
    finally:
        os.close(fd)
    eq(read(t.p('f')) == bytes(data), True, 'content after overwrites across page boundaries')


@check('posix.io.lseek')
def _(t):
    fd = os.open(t.p('f'), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b'0123456789')
        eq(os.lseek(fd, -3, os.SEEK_END), 7, 'SEEK_END')
        eq(os.read(fd, 10), b'789', 'read after SEEK_END')
        eq(os.lseek(fd, 2, os.SEEK_SET), 2, 'SEEK_SET')
        eq(os.lseek(fd, 3, os.SEEK_CUR), 5, 'SEEK_CUR')
        expect_errno(errno.EINVAL, os.lseek, fd, -1, os.SEEK_SET, what='negative seek')
        eq(os.lseek(fd, 1000, os.SEEK_SET), 1000, 'seek past EOF')
        os.write(fd, b'x')
        eq(os.fstat(fd).st_size, 1001, 'write after seeking past EOF')
    finally:
        os.close(fd)


@check('posix.io.seek_data_hole')
def _(t):
    fd = os.open(t.p('f'), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b'x', 1 << 20)
        size = os.fstat(fd).st_size
        d = os.lseek(fd, 0, os.SEEK_DATA)
        true(0 <= d <= 1 << 20, f'SEEK_DATA returned {d}')
        h = os.lseek(fd, 0, os.SEEK_HOLE)
        true(0 <= h <= size, f'SEEK_HOLE returned {h}')
        expect_errno(errno.ENXIO, os.lseek, fd, size + 10, os.SEEK_DATA, what='SEEK_DATA past EOF')
    finally:
        os.close(fd)


@check('posix.io.fsync_fdatasync')
def _(t):
    fd = os.open(t.p('f'), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b'durable')
        os.fsync(fd)
        os.write(fd, b' more')
        os.fdatasync(fd)
    finally:
        os.close(fd)
    eq(read(t.p('f')), b'durable more', 'content after fsync/fdatasync')
    dfd = os.open(t.d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


@check('posix.io.large_sequential')
def _(t):
    chunk = os.urandom(1 << 20)
    n = 24 if t.quick else 96
    with open(t.p('big'), 'wb') as f:
        for i in range(n):
            f.write(chunk[i:] + chunk[:i])
    eq(os.lstat(t.p('big')).st_size, n << 20, 'size')
    with open(t.p('big'), 'rb') as f:
        for i in range(n):
            if f.read(1 << 20) != chunk[i:] + chunk[:i]:
                raise AssertionError(f'MiB {i} differs')


@check('posix.io.sparse')
def _(t):
    fd = os.open(t.p('f'), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b'end', (64 << 20) - 3)
    finally:
        os.close(fd)
    st = os.lstat(t.p('f'))
    eq(st.st_size, 64 << 20, 'sparse size')
    with open(t.p('f'), 'rb') as f:
        f.seek(10 << 20)
        eq(f.read(8192), b'\0' * 8192, 'hole reads as zeros')
        f.seek((64 << 20) - 3)
        eq(f.read(), b'end', 'tail')

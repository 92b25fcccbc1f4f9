"""POSIX conformance, rename(2) and renameat2: files, directories, replacing, across directories, into
itself (EINVAL), onto a non-empty directory (ENOTEMPTY), type mismatches, hard links, RENAME_NOREPLACE, and what rename does to nlink, st_ino and ctime."""
import ctypes
import errno
import os
import time

from lib.asserts import eq, expect_errno, read, true, write
from lib.harness import check

_libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1


def renameat2(a, b, flags):
    if _libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), a)


@check('posix.rename.file')
def _(t):
    write(t.p('a'), b'A')
    ino = os.lstat(t.p('a')).st_ino
    os.rename(t.p('a'), t.p('b'))
    expect_errno(errno.ENOENT, os.lstat, t.p('a'))
    eq(read(t.p('b')), b'A', 'content after rename')
    eq(os.lstat(t.p('b')).st_ino, ino, 'st_ino kept across rename')


@check('posix.rename.replace_file')
def _(t):
    write(t.p('a'), b'new')
    write(t.p('b'), b'old')
    fd = os.open(t.p('b'), os.O_RDONLY)
    try:
        os.rename(t.p('a'), t.p('b'))
        eq(read(t.p('b')), b'new', 'target replaced')
        eq(os.read(fd, 10), b'old', 'an open fd on the replaced file still reads the old data')
    finally:
        os.close(fd)
    eq(sorted(os.listdir(t.d)), ['b'], 'listing')


@check('posix.rename.across_dirs')
def _(t):
    os.mkdir(t.p('x'))
    os.mkdir(t.p('y'))
    write(t.p('x', 'f'), b'moved')
    os.rename(t.p('x', 'f'), t.p('y', 'g'))
    eq(os.listdir(t.p('x')), [], 'source dir')
    eq(read(t.p('y', 'g')), b'moved', 'moved content')


@check('posix.rename.dir')
def _(t):
    os.makedirs(t.p('a', 'sub'))
    write(t.p('a', 'sub', 'f'), b'deep')
    os.mkdir(t.p('p'))
    n0 = os.lstat(t.d).st_nlink
    os.rename(t.p('a'), t.p('p', 'b'))
    eq(read(t.p('p', 'b', 'sub', 'f')), b'deep', 'subtree moved')
    eq(os.lstat(t.d).st_nlink, n0 - 1, 'old parent nlink')
    eq(os.lstat(t.p('p')).st_nlink, 3, 'new parent nlink')
    eq(os.path.realpath(t.p('p', 'b', 'sub', '..', '..')), os.path.realpath(t.p('p')), '.. of moved dir')


@check('posix.rename.dir_over_empty_dir')
def _(t):
    os.mkdir(t.p('a'))
    write(t.p('a', 'f'))
    os.mkdir(t.p('b'))
    os.rename(t.p('a'), t.p('b'))
    eq(os.listdir(t.p('b')), ['f'], 'replaced empty dir')
    expect_errno(errno.ENOENT, os.lstat, t.p('a'))


@check('posix.rename.dir_over_nonempty')
def _(t):
    os.mkdir(t.p('a'))
    os.mkdir(t.p('b'))
    write(t.p('b', 'f'))
    expect_errno((errno.ENOTEMPTY, errno.EEXIST), os.rename, t.p('a'), t.p('b'), what='rename onto non-empty dir')
    true(os.path.isfile(t.p('b', 'f')), 'target content kept')


@check('posix.rename.into_itself')
def _(t):
    os.makedirs(t.p('a', 'b', 'c'))
    expect_errno(errno.EINVAL, os.rename, t.p('a'), t.p('a', 'b', 'c', 'a'), what='rename dir into its own subtree')
    expect_errno(errno.EINVAL, os.rename, t.p('a'), t.p('a', 'x'), what='rename dir into itself')
    true(os.path.isdir(t.p('a', 'b', 'c')), 'tree intact')


@check('posix.rename.type_mismatch')
def _(t):
    os.mkdir(t.p('d'))
    write(t.p('f'))
    expect_errno(errno.ENOTDIR, os.rename, t.p('d'), t.p('f'), what='dir onto file')
    expect_errno(errno.EISDIR, os.rename, t.p('f'), t.p('d'), what='file onto dir')


@check('posix.rename.errors')
def _(t):
    write(t.p('f'))
    expect_errno(errno.ENOENT, os.rename, t.p('nope'), t.p('x'), what='rename missing')
    expect_errno(errno.ENOENT, os.rename, t.p('f'), t.p('nope', 'x'), what='rename into missing dir')
    expect_errno(errno.ENOTDIR, os.rename, t.p('f'), t.p('f', 'x'), what='rename under a file')
    os.mkdir(t.p('d'))
    expect_errno((errno.EINVAL, errno.EBUSY), os.rename, t.p('d', '.'), t.p('e'), what='rename .')


@check('posix.rename.same_file')
def _(t):
    write(t.p('f'), b'x')
    os.link(t.p('f'), t.p('g'))
    os.rename(t.p('f'), t.p('f'))
    os.rename(t.p('f'), t.p('g'))  # two links to one inode: POSIX says do nothing
    true(os.path.exists(t.p('f')) and os.path.exists(t.p('g')), 'rename between links of one inode did nothing')
    eq(os.lstat(t.p('g')).st_nlink, 2, 'nlink')


@check('posix.rename.over_hardlink_nlink')
def _(t):
    write(t.p('a'), b'a')
    write(t.p('b'), b'b')
    os.link(t.p('b'), t.p('b2'))
    os.rename(t.p('a'), t.p('b'))
    eq(os.lstat(t.p('b2')).st_nlink, 1, 'nlink of the replaced inode')
    eq(read(t.p('b2')), b'b', 'other link of the replaced inode')


@check('posix.rename.symlink')
def _(t):
    os.symlink('target', t.p('l'))
    os.rename(t.p('l'), t.p('m'))
    eq(os.readlink(t.p('m')), 'target', 'renamed symlink')


@check('posix.rename.ctime')
def _(t):
    write(t.p('f'))
    c0 = os.lstat(t.p('f')).st_ctime_ns
    d0 = os.lstat(t.d)
    time.sleep(0.02)
    os.rename(t.p('f'), t.p('g'))
    true(os.lstat(t.p('g')).st_ctime_ns >= c0, 'ctime went backwards on rename')
    d1 = os.lstat(t.d)
    true(d1.st_mtime_ns > d0.st_mtime_ns, 'rename did not update the dir mtime')
    true(d1.st_ctime_ns > d0.st_ctime_ns, 'rename did not update the dir ctime')


@check('posix.rename.noreplace')
def _(t):
    write(t.p('a'), b'a')
    write(t.p('b'), b'b')
    expect_errno(errno.EEXIST, renameat2, t.p('a'), t.p('b'), RENAME_NOREPLACE, what='RENAME_NOREPLACE onto existing')
    renameat2(t.p('a'), t.p('c'), RENAME_NOREPLACE)
    eq(read(t.p('c')), b'a', 'RENAME_NOREPLACE to a new name')


@check('posix.rename.many_in_dir')
def _(t):
    for i in range(200):
        write(t.p(f'f{i}'), str(i).encode())
    for i in range(200):
        os.rename(t.p(f'f{i}'), t.p(f'g{199 - i}'))
    for i in range(200):
        eq(read(t.p(f'g{199 - i}')), str(i).encode(), f'g{199 - i}')
    eq(len(os.listdir(t.d)), 200, 'count')

"""POSIX conformance, namespace basics (pjdfstest-style): mkdir, rmdir, unlink, link, symlink, mkfifo and
mknod — return values, errno on every error path, and nlink counts."""
import errno
import os
import subprocess
import stat

from lib.asserts import eq, expect_errno, read, true, write
from lib.harness import check


@check('posix.mkdir.basic')
def _(t):
    os.mkdir(t.p('d'), 0o755)
    st = os.lstat(t.p('d'))
    true(stat.S_ISDIR(st.st_mode), 'mkdir made no directory')
    eq(oct(stat.S_IMODE(st.st_mode)), oct(0o755 & ~_umask()), 'mode')
    eq(st.st_nlink, 2, 'nlink of an empty dir')
    eq(os.listdir(t.p('d')), [], 'new dir listing')


@check('posix.mkdir.parent_nlink')
def _(t):
    before = os.lstat(t.d).st_nlink
    os.mkdir(t.p('a'))
    os.mkdir(t.p('b'))
    eq(os.lstat(t.d).st_nlink, before + 2, 'parent nlink after two mkdirs')
    os.rmdir(t.p('a'))
    eq(os.lstat(t.d).st_nlink, before + 1, 'parent nlink after rmdir')


@check('posix.mkdir.errors')
def _(t):
    os.mkdir(t.p('d'))
    write(t.p('f'))
    expect_errno(errno.EEXIST, os.mkdir, t.p('d'), what='mkdir existing dir')
    expect_errno(errno.EEXIST, os.mkdir, t.p('f'), what='mkdir over file')
    expect_errno(errno.ENOENT, os.mkdir, t.p('nope', 'x'), what='mkdir in missing dir')
    expect_errno(errno.ENOTDIR, os.mkdir, t.p('f', 'x'), what='mkdir under a file')
    os.symlink('d', t.p('l'))
    expect_errno(errno.EEXIST, os.mkdir, t.p('l'), what='mkdir over symlink')


@check('posix.mkdir.mode_bits')
def _(t):
    old = os.umask(0)
    try:
        for m in (0o700, 0o711, 0o1777, 0o555):
            os.mkdir(t.p(f'd{m:o}'), m)
            eq(oct(stat.S_IMODE(os.lstat(t.p(f'd{m:o}')).st_mode)), oct(m), f'mkdir mode {m:o}')
    finally:
        os.umask(old)


@check('posix.rmdir.basic')
def _(t):
    os.mkdir(t.p('d'))
    os.rmdir(t.p('d'))
    expect_errno(errno.ENOENT, os.lstat, t.p('d'), what='lstat after rmdir')
    eq(os.listdir(t.d), [], 'listing after rmdir')


@check('posix.rmdir.errors')
def _(t):
    os.mkdir(t.p('d'))
    write(t.p('d', 'f'))
    write(t.p('f'))
    expect_errno(errno.ENOTEMPTY, os.rmdir, t.p('d'), what='rmdir non-empty')
    expect_errno(errno.ENOTDIR, os.rmdir, t.p('f'), what='rmdir a file')
    expect_errno(errno.ENOENT, os.rmdir, t.p('nope'), what='rmdir missing')
    expect_errno(errno.EINVAL, os.rmdir, t.p('d', '.'), what='rmdir .')
    expect_errno((errno.ENOTEMPTY, errno.EEXIST, errno.EBUSY), os.rmdir, t.p('d', '..'), what='rmdir ..')
    os.symlink('d', t.p('l'))
    expect_errno(errno.ENOTDIR, os.rmdir, t.p('l'), what='rmdir a symlink to a dir')


@check('posix.unlink.basic')
def _(t):
    write(t.p('f'), b'x')
    os.unlink(t.p('f'))
    expect_errno(errno.ENOENT, os.lstat, t.p('f'), what='lstat after unlink')
    expect_errno(errno.ENOENT, os.unlink, t.p('f'), what='unlink twice')


@check('posix.unlink.errors')
def _(t):
    os.mkdir(t.p('d'))
    write(t.p('f'))
    expect_errno(errno.EISDIR, os.unlink, t.p('d'), what='unlink a dir')
    expect_errno(errno.ENOTDIR, os.unlink, t.p('f', 'x'), what='unlink under a file')
    expect_errno(errno.ENOENT, os.unlink, t.p('nope', 'x'), what='unlink in missing dir')


@check('posix.unlink.symlink_not_target')
def _(t):
    write(t.p('f'), b'keep')
    os.symlink('f', t.p('l'))
    os.unlink(t.p('l'))
    eq(read(t.p('f')), b'keep', 'target after unlinking its symlink')


@check('posix.unlink.open_file_readable')
def _(t):
    write(t.p('f'), b'still here' * 1000)
    fd = os.open(t.p('f'), os.O_RDWR)
    try:
        os.unlink(t.p('f'))
        expect_errno(errno.ENOENT, os.lstat, t.p('f'))
        eq(os.pread(fd, 20000, 0), b'still here' * 1000, 'read of an unlinked open file')
        os.pwrite(fd, b'NEW', 0)
        eq(os.pread(fd, 3, 0), b'NEW', 'write to an unlinked open file')
        eq(os.fstat(fd).st_nlink, 0, 'fstat nlink of an unlinked file')
    finally:
        os.close(fd)
    eq(os.listdir(t.d), [], 'dir after closing the unlinked file')


@check('posix.link.basic')
def _(t):
    write(t.p('f'), b'data')
    os.link(t.p('f'), t.p('g'))
    a, b = os.lstat(t.p('f')), os.lstat(t.p('g'))
    eq(a.st_ino, b.st_ino, 'hard links share st_ino')
    eq(a.st_nlink, 2, 'nlink after link')
    with open(t.p('g'), 'r+b') as f:
        f.write(b'DATA')
    eq(read(t.p('f')), b'DATA', 'write through one link seen through the other')


@check('posix.link.nlink_counts')
def _(t):
    write(t.p('f'))
    for i in range(5):
        os.link(t.p('f'), t.p(f'l{i}'))
    eq(os.lstat(t.p('f')).st_nlink, 6, 'nlink after 5 links')
    os.unlink(t.p('f'))
    os.unlink(t.p('l0'))
    eq(os.lstat(t.p('l4')).st_nlink, 4, 'nlink after 2 unlinks')


@check('posix.link.ctime')
def _(t):
    write(t.p('f'))
    c0 = os.lstat(t.p('f')).st_ctime_ns
    _tick()
    os.link(t.p('f'), t.p('g'))
    true(os.lstat(t.p('f')).st_ctime_ns > c0, 'link did not update the ctime of the file')


@check('posix.link.across_dirs')
def _(t):
    os.mkdir(t.p('a'))
    os.mkdir(t.p('b'))
    write(t.p('a', 'f'), b'x')
    os.link(t.p('a', 'f'), t.p('b', 'g'))
    os.unlink(t.p('a', 'f'))
    eq(read(t.p('b', 'g')), b'x', 'content via the other dir')
    eq(os.lstat(t.p('b', 'g')).st_nlink, 1, 'nlink')


@check('posix.link.errors')
def _(t):
    write(t.p('f'))
    write(t.p('g'))
    os.mkdir(t.p('d'))
    expect_errno(errno.EEXIST, os.link, t.p('f'), t.p('g'), what='link onto existing')
    expect_errno(errno.ENOENT, os.link, t.p('nope'), t.p('h'), what='link from missing')
    expect_errno(errno.EPERM, os.link, t.p('d'), t.p('d2'), what='link a directory')
    expect_errno(errno.ENOENT, os.link, t.p('f'), t.p('nope', 'h'), what='link into missing dir')


@check('posix.link.symlink_itself')
def _(t):
    os.symlink('nowhere', t.p('l'))
    os.link(t.p('l'), t.p('l2'), follow_symlinks=False)
    eq(os.readlink(t.p('l2')), 'nowhere', 'hard link to a symlink')
    eq(os.lstat(t.p('l')).st_nlink, 2, 'symlink nlink')


@check('posix.symlink.basic')
def _(t):
    write(t.p('f'), b'abc')
    os.symlink('f', t.p('l'))
    st = os.lstat(t.p('l'))
    true(stat.S_ISLNK(st.st_mode), 'not a symlink')
    eq(st.st_size, 1, 'symlink size is target length')
    eq(os.readlink(t.p('l')), 'f', 'readlink')
    eq(read(t.p('l')), b'abc', 'read through symlink')


@check('posix.symlink.targets')
def _(t):
    targets = ['/etc/passwd', '../../x', 'a/b/c/', 'x' * 1000, ' spaces and\ttab ', 'ünïcødé', '.', '..']
    for i, tg in enumerate(targets):
        os.symlink(tg, t.p(f'l{i}'))
        eq(os.readlink(t.p(f'l{i}')), tg, f'readlink of target {tg[:20]!r}')
        eq(os.lstat(t.p(f'l{i}')).st_size, len(tg.encode()), 'symlink size')


@check('posix.symlink.dangling_and_loop')
def _(t):
    os.symlink('missing', t.p('dang'))
    expect_errno(errno.ENOENT, os.stat, t.p('dang'), what='stat dangling')
    os.lstat(t.p('dang'))
    os.symlink('loop2', t.p('loop1'))
    os.symlink('loop1', t.p('loop2'))
    expect_errno(errno.ELOOP, os.stat, t.p('loop1'), what='stat a symlink loop')
    expect_errno(errno.ELOOP, os.open, t.p('loop1'), os.O_RDONLY, what='open a symlink loop')


@check('posix.symlink.errors')
def _(t):
    write(t.p('f'))
    expect_errno(errno.EEXIST, os.symlink, 'x', t.p('f'), what='symlink over existing')
    expect_errno(errno.ENOENT, os.symlink, 'x', t.p('nope', 'l'), what='symlink in missing dir')
    expect_errno(errno.EINVAL, os.readlink, t.p('f'), what='readlink of a file')
    expect_errno(errno.ENOENT, os.symlink, '', t.p('empty'), what='empty symlink target')


@check('posix.symlink.dir_traversal')
def _(t):
    os.makedirs(t.p('a', 'b'))
    write(t.p('a', 'b', 'f'), b'deep')
    os.symlink('a/b', t.p('l'))
    eq(read(t.p('l', 'f')), b'deep', 'read through a dir symlink')
    eq(sorted(os.listdir(t.p('l'))), ['f'], 'listdir through a dir symlink')


@check('posix.mkfifo.basic')
def _(t):
    os.mkfifo(t.p('p'), 0o640)
    st = os.lstat(t.p('p'))
    true(stat.S_ISFIFO(st.st_mode), 'not a fifo')
    expect_errno(errno.EEXIST, os.mkfifo, t.p('p'), what='mkfifo existing')
    # a fifo in the mount must work as a pipe (the kernel does the piping)
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(t.p('p'), os.O_WRONLY)
            os.write(fd, b'through the fifo')
            os.close(fd)
        finally:
            os._exit(0)
    fd = os.open(t.p('p'), os.O_RDONLY)
    data = os.read(fd, 100)
    os.close(fd)
    os.waitpid(pid, 0)
    eq(data, b'through the fifo', 'fifo data')


@check('posix.mknod.devices')
def _(t):
    os.mknod(t.p('null'), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    st = os.lstat(t.p('null'))
    true(stat.S_ISCHR(st.st_mode), 'not a char device')
    eq((os.major(st.st_rdev), os.minor(st.st_rdev)), (1, 3), 'rdev')
    os.mknod(t.p('reg'), 0o600 | stat.S_IFREG)
    true(stat.S_ISREG(os.lstat(t.p('reg')).st_mode), 'mknod S_IFREG is a regular file')


@check('posix.readdir.contents')
def _(t):
    names = {f'n{i:03d}' for i in range(300)}
    for n in names:
        write(t.p(n))
    os.mkdir(t.p('sub'))
    os.symlink('x', t.p('sym'))
    got = set(os.listdir(t.d))
    eq(got, names | {'sub', 'sym'}, 'readdir contents')
    kinds = {e.name: (e.is_dir(follow_symlinks=False), e.is_symlink()) for e in os.scandir(t.d)}
    eq(kinds['sub'], (True, False), 'd_type of dir')
    eq(kinds['sym'], (False, True), 'd_type of symlink')
    for e in os.scandir(t.d):
        eq(e.inode(), os.lstat(e.path).st_ino, f'd_ino of {e.name} vs st_ino')
        break


@check('posix.readdir.during_unlink')
def _(t):
    for i in range(200):
        write(t.p(f'f{i}'))
    seen = set()
    with os.scandir(t.d) as it:
        for i, e in enumerate(it):
            seen.add(e.name)
            if i == 10:
                for j in range(100, 200):
                    try:
                        os.unlink(t.p(f'f{j}'))
                    except FileNotFoundError:
                        pass
    true({f'f{i}' for i in range(100)} <= seen, 'readdir lost entries that were never removed')
    eq(len(os.listdir(t.d)), 100, 'count after unlinks')


@check('posix.readdir.during_create_and_rename')
def _(t):
    """A listing that spans many getdents calls, while other names come and go: every entry that stays is
    listed exactly once (readdir cookies must not shift when the directory changes under a reader)."""
    pad = 'x' * 60  # long names: the listing takes several requests of the kernel's 32 KiB
    stay = [f's{i:03d}{pad}' for i in range(300)]
    moved = [f'm{i:03d}{pad}' for i in range(100)]
    for n in moved + stay:  # created first: listed first whether listings follow creation or name order
        write(t.p(n))
    seen = []
    with os.scandir(t.d) as it:
        for i, e in enumerate(it):
            seen.append(e.name)
            if i == 120:
                for j, n in enumerate(moved):  # out of the part already listed, into the part still to come
                    os.rename(t.p(n), t.p(f'z{j:03d}'))
                write(t.p('a-new'))
    bad = sorted(n[:4] for n in stay if seen.count(n) != 1)
    eq(bad, [], 'entries that stayed but were not listed exactly once (name prefixes)')


@check('posix.readdir.sees_changes')
def _(t):
    """Listings are cached by the kernel between reads of a directory: each change must still show at once."""
    for i in range(50):
        write(t.p(f'f{i:02d}'))
    eq(len(os.listdir(t.d)), 50, 'first listing')
    write(t.p('new'))
    true('new' in os.listdir(t.d), 'a created file is listed')
    os.rename(t.p('new'), t.p('renamed'))
    got = set(os.listdir(t.d))
    true('renamed' in got and 'new' not in got, 'a rename shows in the next listing')
    os.unlink(t.p('f07'))
    os.mkdir(t.p('d'))
    got = set(os.listdir(t.d))
    true('f07' not in got and 'd' in got, 'unlink and mkdir show in the next listing')
    subprocess.run(['touch', t.p('from-child')], check=True)
    true('from-child' in os.listdir(t.d), "another process's create shows in this one's listing")


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def _tick():
    import time
    time.sleep(0.02)

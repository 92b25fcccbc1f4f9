"""POSIX conformance, permission checks as a non-root user (uid/gid 65534 in a forked child): read, write,
search and create permissions, sticky directories, owner-only chmod/chown/utimes, and setuid clearing
on write. The kernel enforces these (default_permissions); the mount must report modes faithfully."""
import errno
import os
import stat

from lib.asserts import NOBODY, as_user, eq, errname, read, true, user_errno, write
from lib.harness import check
from posix_meta import UTIME_NOW, utimensat


def _open(path, flags, mode=0o644):
    def f():
        os.close(os.open(path, flags, mode))
    return f


@check('posix.perm.read_denied')
def _(t):
    write(t.p('f'), b'secret')
    os.chmod(t.p('f'), 0o600)
    user_errno(errno.EACCES, _open(t.p('f'), os.O_RDONLY), what='read a 0600 root file')
    os.chmod(t.p('f'), 0o604)
    user_errno(0, _open(t.p('f'), os.O_RDONLY), what='read a 0604 root file')


@check('posix.perm.write_denied')
def _(t):
    write(t.p('f'), b'x')
    os.chmod(t.p('f'), 0o644)
    user_errno(errno.EACCES, _open(t.p('f'), os.O_WRONLY), what='write a 0644 root file')
    user_errno(errno.EACCES, lambda: os.truncate(t.p('f'), 0), what='truncate a 0644 root file')
    eq(read(t.p('f')), b'x', 'content untouched')


@check('posix.perm.owner_bits_win')
def _(t):
    write(t.p('f'), b'x')
    os.chown(t.p('f'), NOBODY, NOBODY)
    os.chmod(t.p('f'), 0o077)  # owner has nothing even though others have everything
    user_errno(errno.EACCES, _open(t.p('f'), os.O_RDONLY), what='owner with mode 0077')


@check('posix.perm.group_bits')
def _(t):
    write(t.p('f'), b'x')
    os.chown(t.p('f'), 0, NOBODY)
    os.chmod(t.p('f'), 0o640)
    user_errno(0, _open(t.p('f'), os.O_RDONLY), what='group read via gid')
    user_errno(errno.EACCES, _open(t.p('f'), os.O_WRONLY), what='group write without w bit')


@check('posix.perm.create_in_readonly_dir')
def _(t):
    os.mkdir(t.p('d'), 0o755)
    user_errno(errno.EACCES, _open(t.p('d', 'f'), os.O_WRONLY | os.O_CREAT), what='create in a 0755 root dir')
    user_errno(errno.EACCES, lambda: os.mkdir(t.p('d', 'x')), what='mkdir in a 0755 root dir')
    user_errno(errno.EACCES, lambda: os.symlink('a', t.p('d', 's')), what='symlink in a 0755 root dir')
    write(t.p('d', 'g'))
    user_errno(errno.EACCES, lambda: os.unlink(t.p('d', 'g')), what='unlink in a 0755 root dir')
    user_errno(errno.EACCES, lambda: os.rename(t.p('d', 'g'), t.p('d', 'h')), what='rename in a 0755 root dir')
    eq(sorted(os.listdir(t.p('d'))), ['g'], 'dir untouched')


@check('posix.perm.search_denied')
def _(t):
    os.mkdir(t.p('d'), 0o700)
    write(t.p('d', 'f'), b'x')
    os.chmod(t.p('d', 'f'), 0o666)
    user_errno(errno.EACCES, lambda: os.stat(t.p('d', 'f')), what='stat through a 0700 dir')
    user_errno(errno.EACCES, lambda: os.listdir(t.p('d')), what='list a 0700 dir')
    os.chmod(t.p('d'), 0o711)
    user_errno(0, lambda: os.stat(t.p('d', 'f')), what='stat through a 0711 dir')
    user_errno(errno.EACCES, lambda: os.listdir(t.p('d')), what='list a 0711 dir')


@check('posix.perm.owner_may_create')
def _(t):
    os.mkdir(t.p('d'), 0o755)
    os.chown(t.p('d'), NOBODY, NOBODY)

    def work():
        fd = os.open(t.p('d', 'f'), os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b'mine')
        os.close(fd)
        os.mkdir(t.p('d', 'sub'))
        os.rename(t.p('d', 'f'), t.p('d', 'sub', 'g'))
    user_errno(0, work, what='create/mkdir/rename in own dir')
    st = os.lstat(t.p('d', 'sub', 'g'))
    eq((st.st_uid, st.st_gid), (NOBODY, NOBODY), 'new file owned by the creating user')
    eq(read(t.p('d', 'sub', 'g')), b'mine', 'content')


@check('posix.perm.sticky_dir')
def _(t):
    os.mkdir(t.p('tmp'), 0o1777)
    os.chmod(t.p('tmp'), 0o1777)
    write(t.p('tmp', 'roots'))
    os.chmod(t.p('tmp', 'roots'), 0o666)
    user_errno(errno.EPERM, lambda: os.unlink(t.p('tmp', 'roots')), what="unlink another user's file in a sticky dir")
    user_errno(errno.EPERM, lambda: os.rename(t.p('tmp', 'roots'), t.p('tmp', 'x')), what="rename another's file in a sticky dir")

    def own():
        os.close(os.open(t.p('tmp', 'mine'), os.O_WRONLY | os.O_CREAT, 0o644))
        os.unlink(t.p('tmp', 'mine'))
    user_errno(0, own, what='create and unlink own file in a sticky dir')
    true(os.path.exists(t.p('tmp', 'roots')), "root's file survived")


@check('posix.perm.chmod_not_owner')
def _(t):
    write(t.p('f'))
    os.chmod(t.p('f'), 0o666)
    user_errno(errno.EPERM, lambda: os.chmod(t.p('f'), 0o777), what="chmod of root's file")
    eq(oct(stat.S_IMODE(os.lstat(t.p('f')).st_mode)), oct(0o666), 'mode untouched')


@check('posix.perm.chmod_owner')
def _(t):
    write(t.p('f'))
    os.chown(t.p('f'), NOBODY, NOBODY)
    user_errno(0, lambda: os.chmod(t.p('f'), 0o640), what='chmod of own file')
    eq(oct(stat.S_IMODE(os.lstat(t.p('f')).st_mode)), oct(0o640), 'mode set by owner')


@check('posix.perm.chmod_setgid_not_member')
def _(t):
    write(t.p('f'))
    os.chown(t.p('f'), NOBODY, 0)
    user_errno(0, lambda: os.chmod(t.p('f'), 0o2755), what='chmod g+s as non-member')
    m = stat.S_IMODE(os.lstat(t.p('f')).st_mode)
    true(not m & stat.S_ISGID, f'setgid kept by a non-member of the group ({m:o})')


@check('posix.perm.chown_not_root')
def _(t):
    write(t.p('f'))
    os.chown(t.p('f'), NOBODY, NOBODY)
    user_errno(errno.EPERM, lambda: os.chown(t.p('f'), 0, -1), what='give a file away')
    user_errno(errno.EPERM, lambda: os.chown(t.p('f'), -1, 0), what='chgrp to a group not a member of')
    user_errno(0, lambda: os.chown(t.p('f'), NOBODY, NOBODY), what='chown to self (no-op)')


@check('posix.perm.utimes')
def _(t):
    write(t.p('f'))
    os.chmod(t.p('f'), 0o666)
    user_errno(errno.EPERM, lambda: os.utime(t.p('f'), ns=(1, 1)), what='set explicit times on a non-owned file')
    user_errno(0, lambda: utimensat(t.p('f'), (0, UTIME_NOW), (0, UTIME_NOW)), what='UTIME_NOW with write access')
    os.chmod(t.p('f'), 0o644)
    user_errno(errno.EACCES, lambda: utimensat(t.p('f'), (0, UTIME_NOW), (0, UTIME_NOW)),
               what='UTIME_NOW without write access')


@check('posix.perm.write_clears_setuid')
def _(t):
    write(t.p('f'), b'x')
    os.chmod(t.p('f'), 0o6777)

    def w():
        fd = os.open(t.p('f'), os.O_WRONLY)
        os.write(fd, b'y')
        os.close(fd)
    user_errno(0, w, what='write a 06777 file')
    m = stat.S_IMODE(os.lstat(t.p('f')).st_mode)
    true(not m & stat.S_ISUID, f'unprivileged write kept setuid ({m:o})')
    true(not m & stat.S_ISGID, f'unprivileged write kept setgid of a group-executable file ({m:o})')
    eq(oct(m), oct(0o777), 'the other bits kept')
    user_errno(0, w, what='write it again')
    eq(oct(stat.S_IMODE(os.lstat(t.p('f')).st_mode)), oct(0o777), 'mode after a second write')


@check('posix.perm.write_setgid_without_group_exec')
def _(t):
    # The kernel's rule (should_remove_suid): setgid without group execute goes only when the writer is
    # outside the file's group (and lacks CAP_FSETID).
    for name, group, want in (('member', NOBODY, 0o2666), ('other', 0, 0o666), ('both', 0, 0o666)):
        write(t.p(name), b'x')
        os.chown(t.p(name), 0, group)
        os.chmod(t.p(name), 0o6666 if name == 'both' else 0o2666)

        def w():
            fd = os.open(t.p(name), os.O_WRONLY | os.O_APPEND)
            os.write(fd, b'y')
            os.close(fd)
        user_errno(0, w, what=f'write a file with setgid ({name})')
        eq(oct(stat.S_IMODE(os.lstat(t.p(name)).st_mode)), oct(want), f'mode after an unprivileged write ({name})')
        eq(open(t.p(name), 'rb').read(), b'xy', f'content ({name})')


@check('posix.perm.root_write_keeps_setuid')
def _(t):
    write(t.p('f'), b'x')
    os.chmod(t.p('f'), 0o6755)
    with open(t.p('f'), 'ab') as f:
        f.write(b'y')
    eq(oct(stat.S_IMODE(os.lstat(t.p('f')).st_mode)), oct(0o6755), 'mode after a write with CAP_FSETID')


@check('posix.perm.truncate_clears_setuid')
def _(t):
    for name, cut in (('t', lambda p: os.truncate(p, 1)),
                      ('o', lambda p: os.close(os.open(p, os.O_WRONLY | os.O_TRUNC)))):
        write(t.p(name), b'xyz')
        os.chmod(t.p(name), 0o6777)
        user_errno(0, lambda: cut(t.p(name)), what=f'truncate ({name}) a 06777 file')
        m = stat.S_IMODE(os.lstat(t.p(name)).st_mode)
        eq(oct(m), oct(0o777), f'mode after an unprivileged truncate ({name})')
    # setgid without group execute stays for a member of the file's group, here through a supplementary group.
    for name, cut in (('tm', lambda p: os.truncate(p, 1)),
                      ('om', lambda p: os.close(os.open(p, os.O_WRONLY | os.O_TRUNC)))):
        write(t.p(name), b'xyz')
        os.chown(t.p(name), 0, 65533)
        os.chmod(t.p(name), 0o2666)
        got = as_user(lambda: cut(t.p(name)), NOBODY, NOBODY, groups=(65533,))
        eq(errname(got), errname(0), f'truncate ({name}) a 02666 file as a member')
        eq(oct(stat.S_IMODE(os.lstat(t.p(name)).st_mode)), oct(0o2666), f'mode after a member\'s truncate ({name})')


@check('posix.perm.exec')
def _(t):
    write(t.p('s'), b'#!/bin/sh\nexit 7\n')
    os.chmod(t.p('s'), 0o644)

    def run():
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(t.p('s'), [t.p('s')])
            except OSError as e:
                os._exit(200 + e.errno)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        return code - 200 if code >= 200 else (0 if code == 7 else 100 + code)
    user_errno(errno.EACCES, run, what='exec a 0644 file')
    os.chmod(t.p('s'), 0o755)
    user_errno(0, run, what='exec a 0755 script')


@check('posix.perm.root_overrides')
def _(t):
    write(t.p('f'), b'x')
    os.chmod(t.p('f'), 0o000)
    eq(read(t.p('f')), b'x', 'root reads a 0000 file')
    os.mkdir(t.p('d'), 0o000)
    write(t.p('d', 'g'))
    true(as_user(lambda: os.stat(t.p('d', 'g'))) == errno.EACCES, 'nobody traverses a 0000 dir')


# chown and the setuid/setgid bits, per file type: the kernel's rule (chown_common, setattr_should_drop_sgid)
# is that a chown of anything but a directory clears setuid whoever calls it, and clears setgid when the
# file is group-executable or the caller is neither privileged nor in the file's group (before the change).
_SETID_TYPES = {
    'regular': lambda p: write(p),
    'fifo': lambda p: os.mkfifo(p),
    'socket': lambda p: os.mknod(p, stat.S_IFSOCK | 0o644),
    'block': lambda p: os.mknod(p, stat.S_IFBLK | 0o644, os.makedev(7, 240)),
    'char': lambda p: os.mknod(p, stat.S_IFCHR | 0o644, os.makedev(1, 3)),
    'dir': lambda p: os.mkdir(p),
}
_OTHER = 65533
_THIRD = 65532


def _chown_setid_case(t, kind, name, setup_gid, mode, user, to, want_nondir):
    p = t.p(name)
    _SETID_TYPES[kind](p)
    os.chown(p, NOBODY, setup_gid)
    os.chmod(p, mode)
    before = os.lstat(p)
    eq(oct(stat.S_IMODE(before.st_mode)), oct(mode), f'{kind} {name}: mode before the chown')
    if user:
        got = as_user(lambda: os.chown(p, *to), NOBODY, _OTHER, groups=(_THIRD, _OTHER))
        eq(errname(got), errname(0), f'{kind} {name}: chown {to} as uid {NOBODY}')
    else:
        os.chown(p, *to)
    want = mode if kind == 'dir' else want_nondir
    st = os.lstat(p)
    eq(oct(stat.S_IMODE(st.st_mode)), oct(want), f'{kind} {name}: mode after the chown')
    eq(stat.S_IFMT(st.st_mode), stat.S_IFMT(before.st_mode), f'{kind} {name}: type kept')
    eq((st.st_uid, st.st_gid), tuple(b if a == -1 else a for a, b in zip(to, (before.st_uid, before.st_gid))),
       f'{kind} {name}: owner after the chown')


def _register_chown_setid(kind):
    @check(f'posix.perm.chown_setid_{kind}')
    def _(t):
        # (name, group before, mode, by nobody with groups 65532+65533?, chown to, mode after for a non-directory)
        cases = (
            ('user_gx', _OTHER, 0o6555, True, (NOBODY, _THIRD), 0o555),
            ('user_member', _OTHER, 0o6444, True, (NOBODY, _THIRD), 0o2444),
            ('user_outsider', 0, 0o6444, True, (NOBODY, _THIRD), 0o444),
            ('user_same', _OTHER, 0o6555, True, (-1, -1), 0o555),
            ('root_gx', _OTHER, 0o6555, False, (0, 0), 0o555),
            ('root_nogx', _OTHER, 0o6444, False, (0, 0), 0o2444),
            ('root_same', _OTHER, 0o6444, False, (-1, -1), 0o2444),
        )
        for name, gid, mode, user, to, want in cases:
            _chown_setid_case(t, kind, name, gid, mode, user, to, want)


for _kind in _SETID_TYPES:
    _register_chown_setid(_kind)

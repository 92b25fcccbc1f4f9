"""POSIX-ish conformance, extended attributes (user.* namespace): set/get/list/remove, XATTR_CREATE and
XATTR_REPLACE, ENODATA, binary and empty values, large values, symlinks (lgetxattr), ctime, and the
permission check for a non-owner."""
import errno
import os

from lib.asserts import eq, expect_errno, true, user_errno, write
from lib.harness import check


@check('posix.xattr.set_get_list_remove')
def _(t):
    write(t.p('f'))
    os.setxattr(t.p('f'), 'user.a', b'1')
    os.setxattr(t.p('f'), 'user.b', b'two')
    eq(os.getxattr(t.p('f'), 'user.a'), b'1', 'getxattr')
    eq(sorted(x for x in os.listxattr(t.p('f')) if x.startswith('user.')), ['user.a', 'user.b'], 'listxattr')
    os.removexattr(t.p('f'), 'user.a')
    expect_errno(errno.ENODATA, os.getxattr, t.p('f'), 'user.a', what='getxattr after remove')
    eq([x for x in os.listxattr(t.p('f')) if x.startswith('user.')], ['user.b'], 'list after remove')


@check('posix.xattr.flags')
def _(t):
    write(t.p('f'))
    expect_errno(errno.ENODATA, os.setxattr, t.p('f'), 'user.x', b'v', os.XATTR_REPLACE, what='XATTR_REPLACE missing')
    os.setxattr(t.p('f'), 'user.x', b'v', os.XATTR_CREATE)
    expect_errno(errno.EEXIST, os.setxattr, t.p('f'), 'user.x', b'w', os.XATTR_CREATE, what='XATTR_CREATE existing')
    os.setxattr(t.p('f'), 'user.x', b'w', os.XATTR_REPLACE)
    eq(os.getxattr(t.p('f'), 'user.x'), b'w', 'replaced value')


@check('posix.xattr.errors')
def _(t):
    write(t.p('f'))
    expect_errno(errno.ENODATA, os.getxattr, t.p('f'), 'user.none', what='getxattr missing')
    expect_errno(errno.ENODATA, os.removexattr, t.p('f'), 'user.none', what='removexattr missing')
    expect_errno(errno.ENOENT, os.getxattr, t.p('nope'), 'user.a', what='getxattr on a missing file')
    expect_errno((errno.ERANGE, errno.E2BIG), os.setxattr, t.p('f'), 'user.' + 'n' * 300, b'v',
                 what='xattr name longer than 255')


@check('posix.xattr.values')
def _(t):
    write(t.p('f'))
    vals = {'user.empty': b'', 'user.bin': bytes(range(256)), 'user.nul': b'a\0b\0', 'user.big': os.urandom(2000)}
    for k, v in vals.items():
        os.setxattr(t.p('f'), k, v)
    for k, v in vals.items():
        eq(os.getxattr(t.p('f'), k), v, f'value of {k}')


@check('posix.xattr.many')
def _(t):
    write(t.p('f'))
    for i in range(50):
        os.setxattr(t.p('f'), f'user.k{i:02d}', str(i).encode() * 10)
    got = sorted(x for x in os.listxattr(t.p('f')) if x.startswith('user.'))
    eq(got, [f'user.k{i:02d}' for i in range(50)], '50 xattrs listed')
    for i in range(50):
        eq(os.getxattr(t.p('f'), f'user.k{i:02d}'), str(i).encode() * 10, f'user.k{i:02d}')


@check('posix.xattr.dir')
def _(t):
    os.mkdir(t.p('d'))
    os.setxattr(t.p('d'), 'user.tag', b'dir')
    eq(os.getxattr(t.p('d'), 'user.tag'), b'dir', 'dir xattr')


@check('posix.xattr.ctime')
def _(t):
    import time
    write(t.p('f'))
    c0 = os.lstat(t.p('f')).st_ctime_ns
    time.sleep(0.02)
    os.setxattr(t.p('f'), 'user.a', b'1')
    true(os.lstat(t.p('f')).st_ctime_ns > c0, 'setxattr did not update ctime')


@check('posix.xattr.survive_rename_and_link')
def _(t):
    write(t.p('f'))
    os.setxattr(t.p('f'), 'user.keep', b'me')
    os.rename(t.p('f'), t.p('g'))
    os.link(t.p('g'), t.p('h'))
    eq(os.getxattr(t.p('h'), 'user.keep'), b'me', 'xattr via a renamed, linked name')


@check('posix.xattr.permission')
def _(t):
    write(t.p('f'))
    os.chmod(t.p('f'), 0o644)
    os.setxattr(t.p('f'), 'user.a', b'1')
    user_errno(0, lambda: os.getxattr(t.p('f'), 'user.a'), what='read xattr of a readable file')
    user_errno(errno.EACCES, lambda: os.setxattr(t.p('f'), 'user.b', b'2'), what='set xattr without write access')
    user_errno((errno.EPERM), lambda: os.setxattr(t.p('f'), 'trusted.x', b'2'), what='trusted.* as non-root')

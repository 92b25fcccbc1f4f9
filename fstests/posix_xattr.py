"""POSIX-ish conformance, extended attributes (user.* namespace): set/get/list/remove, XATTR_CREATE and
XATTR_REPLACE, ENODATA, binary and empty values, large values, symlinks (lgetxattr), ctime, the
permission check for a non-owner, and the binding's answers for inodes with no xattrs (a tar x, a
remount, a fresh host)."""
import errno
import os
import re
import subprocess

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


def _getxattr_counts(env, mnt):
    """(answered by the binding, reached JS) getxattr requests of the daemon serving mnt, from its metrics."""
    text = env.cli('status', mnt, '--metrics', timeout=30).stdout.decode()

    def get(metric):
        m = re.search(r'^' + metric + r'\{op="getxattr"[^}]*\} (\d+)$', text, re.M)
        return int(m.group(1)) if m else 0
    return get('homefs_fuse_native_replies_total'), get('homefs_fuse_ops_total')


def _xattr_or_errno(path, name):
    try:
        return os.getxattr(path, name)
    except OSError as e:
        return errno.errorcode[e.errno]


@check('posix.xattr.native_negative_remount', needs=('homefs',), timeout=180)
def _(t):
    """getxattr of inodes with no xattrs is answered in the binding (a `tar x` sends ~2.5 per file, none
    reach JS); xattrs set in the same mount are seen at once, and after a remount on the same state dir and
    on a fresh host (the binding's table starts empty, the marks come from the journal and the snapshot)."""
    env = t.env
    home = 'fstests/xattr-native'
    cache, state, mnt = env.fresh_dirs('xattr-native')
    env.mount(home, mnt, cache, state)
    src = os.path.join(t.scratch, 'src')
    n = 0
    for d in range(8):
        os.makedirs(os.path.join(src, f'd{d}'))
        for f in range(25):
            write(os.path.join(src, f'd{d}', f'f{f}'), f'{d}/{f}\n'.encode() * 10)
            n += 1
    tarball = os.path.join(t.scratch, 'src.tar')
    subprocess.run(['tar', 'cf', tarball, '-C', src, '.'], check=True)
    native0, js0 = _getxattr_counts(env, mnt)
    subprocess.run(['tar', 'xf', tarball, '-C', mnt], check=True)
    native1, js1 = _getxattr_counts(env, mnt)
    true(native1 - native0 >= n, f'tar x of {n} files: the binding answered {native1 - native0} getxattr')
    true(js1 - js0 <= n // 20, f'tar x of {n} files: {js1 - js0} getxattr reached JS')

    tagged = {'d0/f0': b'zero', 'd3/f7': b'\x00bin\xff', 'd5': b'dir'}
    for name, value in tagged.items():
        eq(_xattr_or_errno(os.path.join(mnt, name), 'user.tag'), 'ENODATA', f'{name} before setxattr')
        os.setxattr(os.path.join(mnt, name), 'user.tag', value)
        eq(os.getxattr(os.path.join(mnt, name), 'user.tag'), value, f'{name} right after setxattr')
    os.link(os.path.join(mnt, 'd1', 'f1'), os.path.join(mnt, 'd1', 'hard'))
    os.setxattr(os.path.join(mnt, 'd1', 'hard'), 'user.tag', b'linked')
    tagged['d1/f1'] = tagged['d1/hard'] = b'linked'

    def read_back(m, what):
        for d in range(8):
            for f in range(25):
                name = f'd{d}/f{f}'
                eq(_xattr_or_errno(os.path.join(m, name), 'user.tag'), tagged.get(name, 'ENODATA'), f'{name} {what}')
        for name in ('d5', 'd1/hard'):
            eq(_xattr_or_errno(os.path.join(m, name), 'user.tag'), tagged[name], f'{name} {what}')
        eq(_xattr_or_errno(os.path.join(m, 'd6'), 'user.tag'), 'ENODATA', f'd6 {what}')
    read_back(mnt, 'in the same mount')
    env.sleep(mnt)
    env.mount(home, mnt, cache, state)
    read_back(mnt, 'after a remount on the same state dir')
    env.sleep(mnt)
    cache2, state2, mnt2 = env.fresh_dirs('xattr-native-fresh')
    env.mount(home, mnt2, cache2, state2)
    read_back(mnt2, 'on a fresh host')
    native2, _ = _getxattr_counts(env, mnt2)
    true(native2 > 0, 'on a fresh host, files from the snapshot without xattrs are answered by the binding')
    env.sleep(mnt2)

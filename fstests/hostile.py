"""Hostile input: objects crafted byte by byte in a file store (lib/format.py) — tree entries named '..',
'.', '', 'a/../../x' or containing NUL, duplicate and unsorted names, absurd sizes and counts, truncated
and trailing bytes, unknown kinds, a hard-link id on a directory, bad symlink targets, a missing or
corrupt block, a missing or corrupt subtree, and a HEAD pointing at garbage, at a missing snapshot or at a
tree. For each: `homefs pull` fails with one clear line and writes nothing (the escape targets stay
absent); `homefs mount` either refuses with one clear line or mounts and then fails the read of the bad
part with an errno, never lists the hostile name, never serves a wrong byte, and touches nothing outside
the mount. A valid control home built by the same encoder must pull and mount correctly, which proves the
crafted objects are otherwise well-formed."""
import errno
import os
import subprocess

from lib import format as F
from lib import mounts
from lib.asserts import eq, read, true
from lib.harness import check
from lib.homefs import BIN

ORG = 'evil'
OK_DATA = b'fine content\n'


def _one_line_error(p, what):
    err = (p.stderr or b'').decode(errors='replace').strip()
    true(p.returncode != 0, f'{what}: exit 0 on hostile input')
    true(err != '', f'{what}: no error message')
    lines = err.splitlines()
    true(len(lines) == 1 and not any(ln.lstrip().startswith('at ') for ln in lines),
         f'{what}: error is not one clear line: {" / ".join(lines[:4])}')
    return err


class World:
    """A per-check file store with helpers to publish a home whose root holds ok.txt plus `extra`."""

    def __init__(self, t):
        self.t = t
        self.store_dir = os.path.join(t.scratch, 'store')
        os.makedirs(self.store_dir, exist_ok=True)
        self.url = f'file://{self.store_dir}'
        self.h = F.Hasher()
        self.fs = F.FileStore(self.store_dir, ORG, self.h)
        self.ok_block = self.fs.block(OK_DATA)

    def ok_entry(self):
        return F.entry('ok.txt', size=len(OK_DATA), blocks=[self.ok_block], mtime=10**18)

    def sub(self, tree_bytes, corrupt_with=None, name='sub'):
        """A dir entry pointing at this (possibly hostile) tree."""
        return F.entry(name, 'dir', mode=0o755, tree=self.fs.meta(tree_bytes, corrupt_with))

    def publish(self, home, root_entries, snapshot_bytes=None, head=None):
        root = self.fs.meta(F.tree(root_entries))
        snap = snapshot_bytes if snapshot_bytes is not None else F.snapshot(root, f'{ORG}/{home}')
        sid = self.fs.meta(snap)
        self.fs.head(home, head if head is not None else sid)
        return sid

    def close(self):
        self.h.close()


def _pull_refused(t, w, home):
    parent = os.path.join(t.scratch, 'pulls')
    os.makedirs(parent, exist_ok=True)
    before = sorted(os.listdir(parent))
    target = os.path.join(parent, home)
    p = cli('pull', f'{ORG}/{home}', target, '--store', w.url)
    _one_line_error(p, f'homefs pull {ORG}/{home}')
    eq(sorted(os.listdir(parent)), before, 'pull left something behind next to its target')
    for esc in ('escape', 'x'):
        for d in (t.scratch, os.path.dirname(t.scratch)):
            true(not os.path.lexists(os.path.join(d, esc)), f'hostile name escaped to {os.path.join(d, esc)}')
    true(not os.path.lexists('/escape'), 'hostile name escaped to /escape')


def _assert_bad(mnt, bad_rel, hostile_names, has_ok=True):
    """In a live mount: bad_rel fails with an errno (listing if it ends in '/' or is '', else reading),
    never lists a hostile name, and the valid ok.txt next to it reads correctly before and after."""
    if has_ok:
        eq(read(os.path.join(mnt, 'ok.txt')), OK_DATA, 'the valid file next to the hostile part')
    path = os.path.join(mnt, bad_rel)
    try:
        if bad_rel.endswith('/') or bad_rel == '':
            names = os.listdir(path)
            for n in hostile_names:
                true(n not in names, f'hostile name {n!r} listed')
            raise AssertionError(f'listing {bad_rel or "/"} succeeded: {names[:5]}')
        data = read(path)
        raise AssertionError(f'reading {bad_rel} succeeded with {len(data)} bytes')
    except OSError as e:
        true(e.errno in (errno.EIO, errno.ENOENT, errno.EINVAL, errno.ENODATA, errno.EUCLEAN),
             f'{bad_rel}: failed with {errno.errorcode.get(e.errno)}, expected EIO')
    if has_ok:
        eq(read(os.path.join(mnt, 'ok.txt')), OK_DATA, 'the mount still serves after the bad read')


def _mount_refuses_or_fails_read(t, w, home, bad_rel, hostile_names=(), has_ok=True):
    """Mount the home; it must refuse clearly, or mount and fail reading bad_rel with an errno."""
    env = t.env
    cache, state, mnt = env.fresh_dirs(f'hostile-{home}')
    outside = sorted(os.listdir(os.path.dirname(mnt)))
    p = env.mount(f'{ORG}/{home}', mnt, cache, state, store_url=w.url, check=False, timeout=60)
    if p.returncode != 0:
        _one_line_error(p, f'homefs mount {ORG}/{home}')
        true(not mounts.is_mounted(mnt), 'failed mount left a mount behind')
        return
    try:
        _assert_bad(mnt, bad_rel, hostile_names, has_ok)
    finally:
        env.sleep(mnt)
    eq(sorted(os.listdir(os.path.dirname(mnt))), outside, 'entries appeared next to the mount')


# --- tree-level scenarios: name -> builder(w, sub) returning (a dir entry named `sub` whose content is
# hostile, the path below `sub` that must fail: '/' to list it or '/f' to read a file, hostile names) ------

def _file(w, name='f', **kw):
    return F.entry(name, size=len(OK_DATA), blocks=[w.ok_block], **kw)


def _tree_with(name=None, raw=None):
    def build(w, sub):
        bad = F.tree([F.entry(name or '', raw_name=raw, size=len(OK_DATA), blocks=[w.ok_block])])
        return w.sub(bad, name=sub), '/', [name] if name else []
    return build


def _raw_sub(make):
    def build(w, sub):
        return w.sub(make(w), name=sub), '/', []
    return build


def _in_dir(make_file_entry):
    """A valid directory `sub` holding file f whose data is the hostile part: reading sub/f must fail."""
    def build(w, sub):
        return w.sub(F.tree([make_file_entry(w)]), name=sub), '/f', []
    return build


def _missing_block(w):
    ghost = w.fs.block(b'never stored' * 100, store=False)
    return F.entry('f', size=1200, blocks=[ghost])


def _corrupt_block(w):
    data = b'A' * 5000
    h = w.fs.block(data)
    with open(os.path.join(w.store_dir, ORG, 'blocks', h[:2], h), 'wb') as f:
        f.write(b'B' * 5000)
    return F.entry('f', size=5000, blocks=[h])


def _missing_subtree(w, sub):
    return F.entry(sub, 'dir', mode=0o755, tree='ab' * 32), '/', []


def _corrupt_subtree(w, sub):
    good = F.tree([_file(w, 'x')])
    return w.sub(good, corrupt_with=F.tree([_file(w, 'y')]), name=sub), '/', ['y']


SCENARIOS = {
    'name_dotdot': _tree_with('..'),
    'name_dot': _tree_with('.'),
    'name_slash': _tree_with('a/../../escape'),
    'name_abs': _tree_with('/escape'),
    'name_nul': _tree_with(raw=b'x\0escape'),
    'name_empty': _tree_with(raw=b''),
    'name_256': _tree_with(raw=b'n' * 256),
    'name_invalid_utf8': _tree_with(raw=b'\xff\xfe'),
    'names_duplicate': _raw_sub(lambda w: F.tree([_file(w, 'x'), _file(w, 'x')])),
    'names_unsorted': _raw_sub(lambda w: F.tree([_file(w, 'b'), _file(w, 'a')])),
    'size_absurd': _raw_sub(lambda w: F.tree([F.entry('f', size=2 ** 60, blocks=[w.ok_block])])),
    'size_past_2_53': _raw_sub(lambda w: F.tree([F.entry('f', size=2 ** 53, blocks=[])])),
    'size_mismatch_blocks': _raw_sub(lambda w: F.tree([F.entry('f', size=9 * 1024 * 1024, blocks=[w.ok_block])])),
    'count_absurd': _raw_sub(lambda w: F.tree([_file(w)], count=1_000_000)),
    'count_max_u32': _raw_sub(lambda w: F.tree([_file(w)], count=2 ** 32 - 1)),
    'tree_trailing_bytes': _raw_sub(lambda w: F.tree([_file(w)]) + b'junk'),
    'tree_truncated': _raw_sub(lambda w: F.tree([_file(w)])[:-7]),
    'tree_bad_magic': _raw_sub(lambda w: b'XXXX' + F.tree([_file(w)])[4:]),
    'tree_bad_version': _raw_sub(lambda w: b'HFTR\x09' + F.tree([_file(w)])[5:]),
    'kind_unknown': _raw_sub(lambda w: F.tree([b'\x09' + _file(w)[1:]])),
    'link_on_dir': _raw_sub(lambda w: F.tree([F.entry('d', 'dir', link=1, tree=w.fs.meta(F.tree([])))])),
    'symlink_nul_target': _raw_sub(lambda w: F.tree([F.entry('l', 'symlink', size=3, target=b'a\0b')])),
    'symlink_empty_target': _raw_sub(lambda w: F.tree([F.entry('l', 'symlink', size=0, target=b'')])),
    'xattr_count_lies': _raw_sub(lambda w: F.tree([_file(w)])[:-2] + b'\xff\xff'),
    'subtree_missing': _missing_subtree,
    'subtree_corrupt': _corrupt_subtree,
    # well-formed tree, but the one block of a 3-byte file holds 13 bytes: that block is not this file
    'size_lies_small': _in_dir(lambda w: F.entry('f', size=3, blocks=[w.ok_block])),
    'block_missing': _in_dir(_missing_block),
    'block_corrupt': _in_dir(_corrupt_block),
}


def _head(kind):
    """HEAD/snapshot-level scenarios, each its own home: (None, []) = the mount must be refused;
    ('/', names) = a bad root tree: refuse the mount or fail listing the root."""
    def build(w, home):
        root = w.fs.meta(F.tree([w.ok_entry()]))
        if kind == 'garbage':
            w.fs.head(home, b'../../../../etc/passwd\n')
        elif kind == 'missing':
            w.fs.head(home, 'cd' * 32)
        elif kind == 'tree':
            w.fs.head(home, root)
        elif kind == 'unknown_field':
            s = F.snapshot(root, f'{ORG}/{home}').replace(b'"reason"', b'"evil":1,"reason"')
            w.fs.head(home, w.fs.meta(s))
        elif kind == 'noncanonical':
            w.fs.head(home, w.fs.meta(F.snapshot(root, f'{ORG}/{home}').replace(b',"root"', b', "root"')))
        elif kind == 'corrupt':
            s = F.snapshot(root, f'{ORG}/{home}')
            w.fs.head(home, w.fs.meta(s, corrupt_with=s.replace(b'fstests', b'FSTESTS')))
        elif kind == 'root_missing':
            w.fs.head(home, w.fs.meta(F.snapshot('ef' * 32, f'{ORG}/{home}')))
            return '/', []
        elif kind == 'root_hostile':
            bad = w.fs.meta(F.tree([F.entry('..', size=len(OK_DATA), blocks=[w.ok_block])]))
            w.fs.head(home, w.fs.meta(F.snapshot(bad, f'{ORG}/{home}')))
            return '/', ['..']
        return None, []
    return build


HEAD_SCENARIOS = {f'head_{k}': _head(k) for k in ('garbage', 'missing', 'tree', 'unknown_field', 'noncanonical',
                                                    'corrupt', 'root_missing', 'root_hostile')}


def _home(name):
    return name.replace('_', '-')


def cli(*args):
    return subprocess.run([BIN, *args], capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


@check('hostile.control_valid_home', needs=('cli',))
def _(t):
    w = World(t)
    try:
        w.publish('control', [w.ok_entry(), w.sub(F.tree([_file(w, 'x', mode=0o600)]))])
        target = os.path.join(t.scratch, 'control')
        p = cli('pull', f'{ORG}/control', target, '--store', w.url)
        eq(p.returncode, 0, f'pull of the control home: {p.stderr.decode().strip()}')
        eq(read(os.path.join(target, 'ok.txt')), OK_DATA, 'control ok.txt')
        eq(read(os.path.join(target, 'sub', 'x')), OK_DATA, 'control sub/x')
    finally:
        w.close()


@check('hostile.control_valid_home_mount', needs=('homefs',))
def _(t):
    w = World(t)
    try:
        w.publish('control', [w.ok_entry(), w.sub(F.tree([_file(w, 'x', mode=0o600)]))])
        cache, state, mnt = t.env.fresh_dirs('hostile-control')
        t.env.mount(f'{ORG}/control', mnt, cache, state, store_url=w.url)
        try:
            eq(read(os.path.join(mnt, 'sub', 'x')), OK_DATA, 'control sub/x through the mount')
            eq(sorted(os.listdir(mnt)), ['ok.txt', 'sub'], 'control root listing')
        finally:
            t.env.sleep(mnt)
    finally:
        w.close()


class _Shared:
    """One home holding every tree-level scenario as its own top-level directory `s-<name>`, mounted once
    for all hostile.mount checks (a mount per scenario would cost ~2 s each)."""
    world = None
    mnt = None
    bad = {}
    outside = None


def _shared(t):
    if _Shared.mnt is None:
        base = os.path.join(t.runner.scratch, 'hostile-shared')
        os.makedirs(base, exist_ok=True)

        class T:
            scratch = base
        w = World(T)
        entries = [w.ok_entry()]
        for name, build in SCENARIOS.items():
            sub = 's-' + _home(name)
            entry, rel, names = build(w, sub)
            entries.append(entry)
            _Shared.bad[name] = (sub + rel if rel != '/' else sub + '/', names)
        entries.sort(key=lambda e: e[3:3 + int.from_bytes(e[1:3], 'little')])
        w.publish('all', entries)
        cache, state, mnt = t.env.fresh_dirs('hostile-shared')
        _Shared.outside = sorted(os.listdir(os.path.dirname(mnt)))
        t.env.mount(f'{ORG}/all', mnt, cache, state, store_url=w.url)
        _Shared.world, _Shared.mnt = w, mnt
    return _Shared.mnt


def _register_tree(name, build):
    @check(f'hostile.pull.{name}', needs=('cli',))
    def _pull(t):
        w = World(t)
        try:
            entry, _, _ = build(w, 'sub')
            w.publish(_home(name), [w.ok_entry(), entry])
            _pull_refused(t, w, _home(name))
        finally:
            w.close()

    @check(f'hostile.mount.{name}', needs=('homefs',))
    def _mount(t):
        mnt = _shared(t)
        bad_rel, names = _Shared.bad[name]
        _assert_bad(mnt, bad_rel, names)


def _register_head(name, build):
    @check(f'hostile.pull.{name}', needs=('cli',))
    def _pull(t):
        w = World(t)
        try:
            build(w, _home(name))
            _pull_refused(t, w, _home(name))
        finally:
            w.close()

    @check(f'hostile.mount.{name}', needs=('homefs',))
    def _mount(t):
        w = World(t)
        try:
            bad_rel, names = build(w, _home(name))
            if bad_rel == '/':
                # a bad root tree: refuse the mount, or fail listing the root
                _mount_refuses_or_fails_read(t, w, _home(name), '', names, has_ok=False)
                return
            env = t.env
            cache, state, mnt = env.fresh_dirs(f'hostile-{name}')
            p = env.mount(f'{ORG}/{_home(name)}', mnt, cache, state, store_url=w.url, check=False)
            if p.returncode == 0:
                env.sleep(mnt)
                raise AssertionError('mount of a home whose HEAD is hostile succeeded')
            _one_line_error(p, 'homefs mount')
            true(not mounts.is_mounted(mnt), 'failed mount left a mount behind')
        finally:
            w.close()


for _name, _build in SCENARIOS.items():
    _register_tree(_name, _build)
for _name, _build in HEAD_SCENARIOS.items():
    _register_head(_name, _build)


@check('hostile.mount.shared_sleep_clean', needs=('homefs',))
def _(t):
    """The home holding every hostile subtree still seals and unmounts, and nothing appeared next to it."""
    mnt = _shared(t)
    try:
        eq(read(os.path.join(mnt, 'ok.txt')), OK_DATA, 'ok.txt after all hostile reads')
    finally:
        t.env.sleep(mnt)
        _Shared.world.close()
        _Shared.mnt = None
    eq(sorted(os.listdir(os.path.dirname(mnt))), _Shared.outside, 'entries appeared next to the mount')
    true(not os.path.lexists('/escape'), 'a hostile name escaped to /escape')

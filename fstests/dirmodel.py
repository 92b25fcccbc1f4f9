"""A randomized directory-tree model tester: random create, write, append, truncate, mkdir, rmdir, unlink, rm -r,
rename (files and directories, over existing targets, into their own subtree), link, symlink, chmod and
setxattr, applied to a directory in the mount and to a reference directory on local disk. Every
operation must succeed or fail identically (same errno) on both; touched directories are compared after
each operation and the whole tree (types, modes, sizes, contents, nlink, symlink targets, hard-link
groups) periodically and at the end. On homefs, `dirmodel.persist` also seals the result, mounts it on
a fresh host and compares again. Seeds are printed; `--seed S --only dirmodel.NAME` replays."""
import errno
import os
import random

from lib import treestate
from lib.asserts import eq
from lib.harness import check

NAMES = ['a', 'b', 'c', 'dir', 'x.txt', 'long-' + 'n' * 40, 'é', 'sp ace']


class Model:
    def __init__(self, test_root, ref_root, seed, xattrs=True):
        self.roots = (test_root, ref_root)
        self.rng = random.Random(seed)
        self.seed = seed
        self.log = []
        self.xattrs = xattrs
        self.size = 0  # entries at the last full compare

    def rand_path(self, want_existing):
        """A random relative path: walk down the reference tree, maybe ending at a new name."""
        r = self.rng
        rel = ''
        while True:
            full = os.path.join(self.roots[1], rel)
            try:
                kids = sorted(os.listdir(full)) if os.path.isdir(full) and not os.path.islink(full) else []
            except OSError:
                kids = []
            if not kids or (not want_existing and r.random() < 0.35):
                return os.path.join(rel, r.choice(NAMES)) if rel or not want_existing else r.choice(NAMES)
            k = r.choice(kids)
            rel = os.path.join(rel, k)
            full = os.path.join(self.roots[1], rel)
            if not os.path.isdir(full) or os.path.islink(full) or r.random() < 0.4:
                return rel

    def apply(self, fn, *rels):
        """Run fn(*absolute paths) on both trees; return the errno (0 on success); both must agree."""
        res = []
        for root in self.roots:
            try:
                fn(*[os.path.join(root, x) for x in rels])
                res.append(0)
            except OSError as e:
                res.append(e.errno)
        if res[0] != res[1]:
            raise AssertionError(f'errno mismatch: mount {errno.errorcode.get(res[0], res[0])}, '
                                 f'reference {errno.errorcode.get(res[1], res[1])}')
        return res[1]

    def step(self):
        r = self.rng
        # creations outnumber removals; once the tree is big, remove whole subtrees to keep it bounded
        op = r.choices(['create', 'write', 'append', 'truncate', 'mkdir', 'rmdir', 'unlink', 'rename',
                        'renamedir', 'link', 'symlink', 'chmod', 'xattr', 'rmtree'],
                       [10, 8, 5, 4, 8, 4, 6, 10, 4, 4, 3, 3, 2, 8 if self.size > 300 else 0.2])[0]
        data = r.randbytes(r.choice([0, 1, 100, 5000, 70000]))
        mode = r.choice([0o600, 0o644, 0o755, 0o700, 0o444])
        target = r.choice(['a', '../b', 'dir/x.txt', '/tmp/none', 'é'])
        if op in ('create', 'mkdir', 'symlink'):
            p = self.rand_path(False)
            args = (p,)
        elif op in ('rename', 'link'):
            args = (self.rand_path(True), self.rand_path(r.random() < 0.5))
        elif op == 'renamedir':
            # pick a directory and a destination that may be inside it
            src = self.rand_path(True)
            dst = os.path.join(src, r.choice(NAMES)) if r.random() < 0.3 else self.rand_path(False)
            args = (src, dst)
            op = 'rename'
        else:
            args = (self.rand_path(True),)

        def create(p):
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, data)
            os.close(fd)

        def wr(p):
            fd = os.open(p, os.O_WRONLY | os.O_NOFOLLOW)
            os.pwrite(fd, data, r2)
            os.close(fd)

        def app(p):
            fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
            os.write(fd, data)
            os.close(fd)

        def xa(p):
            os.setxattr(p, 'user.m', data[:100], follow_symlinks=False)

        r2 = r.randrange(0, 100000)
        cut = r.randrange(0, 80000)
        fns = {
            'create': create, 'write': wr, 'append': app,
            'truncate': lambda p: os.truncate(p, cut) if not os.path.islink(p) else None,
            'mkdir': lambda p: os.mkdir(p, 0o755), 'rmdir': os.rmdir, 'unlink': os.unlink,
            'rename': os.rename, 'link': lambda a, b: os.link(a, b, follow_symlinks=False),
            'symlink': lambda p: os.symlink(target, p),
            'chmod': lambda p: os.chmod(p, mode) if not os.path.islink(p) else None,
            'xattr': xa if self.xattrs else (lambda p: None),
            'rmtree': _rmtree,
        }
        self.log.append(f'{op} {" -> ".join(args)}')
        self.apply(fns[op], *args)
        return args

    def compare(self, rels=None):
        if rels is None:
            a = treestate.snapshot(self.roots[0])
            b = treestate.snapshot(self.roots[1])
            self.size = len(b[0])
            d = treestate.diff(a, b)
            if d:
                raise AssertionError('tree differs: ' + '; '.join(d))
            return
        for rel in rels:
            parent = os.path.dirname(rel)
            la, lb = [], []
            for root, out in zip(self.roots, (la, lb)):
                try:
                    out.extend(sorted(os.listdir(os.path.join(root, parent))))
                except OSError as e:
                    out.append(f'<{errno.errorcode.get(e.errno)}>')
            if la != lb:
                raise AssertionError(f'listing of {parent or "."} differs: {la[:8]} != want {lb[:8]}')

    def run(self, ops, full_every):
        for i in range(ops):
            try:
                rels = self.step()
                self.compare(rels)
                if i % full_every == full_every - 1:
                    self.compare()
            except AssertionError as e:
                raise AssertionError(f'seed {self.seed} op #{i}: {e}. Last ops: {"; ".join(self.log[-6:])}') from e
        self.compare()


def _rmtree(p):
    """rm -r without following symlinks, children in sorted order so that a failure part-way leaves the
    same state on both trees (readdir order differs between filesystems)."""
    if os.path.islink(p) or not os.path.isdir(p):
        os.unlink(p)
        return
    for name in sorted(os.listdir(p)):
        _rmtree(os.path.join(p, name))
    os.rmdir(p)


def _mk(t, name):
    test_root, ref_root = t.p(name), os.path.join(t.scratch, name + '.ref')
    os.mkdir(test_root)
    os.mkdir(ref_root)
    return test_root, ref_root


def _seed(t, k):
    return (t.seed * 7919 + k) % (2 ** 31)


@check('dirmodel.random_tree', timeout=240)
def _(t):
    test_root, ref_root = _mk(t, 'tree')
    m = Model(test_root, ref_root, _seed(t, 1))
    m.run(4_000 if t.quick else 200_000, full_every=100 if t.quick else 500)
    t.log(f'seed {m.seed}: {len(m.log)} ops, {len(treestate.snapshot(ref_root)[0])} entries at the end')


@check('dirmodel.persist', needs=('homefs',), timeout=240)
def _(t):
    """The model's final tree, sealed by `homefs sleep`, must come back identical on a fresh host."""
    env = t.env
    home = 'fstests/dirmodel'
    cache, state, mnt = env.fresh_dirs('dirmodel')
    env.mount(home, mnt, cache, state)
    try:
        test_root = os.path.join(mnt, 'tree')
        ref_root = os.path.join(t.scratch, 'persist.ref')
        os.mkdir(test_root)
        os.mkdir(ref_root)
        m = Model(test_root, ref_root, _seed(t, 2))
        m.run(1_500 if t.quick else 50_000, full_every=200)
        mid = env.sync(mnt)
        eq(bool(mid), True, 'homefs sync printed a snapshot id')
        m.run(300, full_every=100)
        want = treestate.snapshot(ref_root, owners=True, xattrs=True)
        want_self = treestate.snapshot(test_root, times=True, owners=True, xattrs=True)
    finally:
        env.sleep(mnt)
    cache2, state2, mnt2 = env.fresh_dirs('dirmodel-fresh')
    env.mount(home, mnt2, cache2, state2, extra=('--takeover',))
    try:
        got = treestate.snapshot(os.path.join(mnt2, 'tree'), owners=True, xattrs=True)
        d = treestate.diff(got, want)
        if d:
            raise AssertionError(f'seed {m.seed}: tree on a fresh host differs from the model: ' + '; '.join(d))
        got_self = treestate.snapshot(os.path.join(mnt2, 'tree'), times=True, owners=True, xattrs=True)
        d = treestate.diff(got_self, want_self)
        if d:
            raise AssertionError(f'seed {m.seed}: tree on a fresh host differs from the sealed one '
                                 '(incl. mtimes): ' + '; '.join(d))
    finally:
        env.sleep(mnt2)

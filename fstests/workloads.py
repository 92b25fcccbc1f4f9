"""Real workloads inside the mount, run as the agents' tools run them: git (clone, branch, commit, gc,
fsck), a tar round trip of 5,000 files (byte-identical archive), sqlite in WAL mode (1,000
transactions, integrity_check), `npm install` of a package from a local tarball, `python3 -m venv` +
compileall, a C build with cc, and `cp -a` / `rsync -aHAX` of a tree in and back out identical in bytes
and metadata. Inputs are prepared on the local disk (the check's scratch dir); no network is used."""
import hashlib
import os
import random
import sqlite3

from lib import treestate
from lib.asserts import eq, read, sh, true, write
from lib.harness import check

GIT_ENV = {'GIT_AUTHOR_NAME': 'fstests', 'GIT_AUTHOR_EMAIL': 'f@t', 'GIT_COMMITTER_NAME': 'fstests',
           'GIT_COMMITTER_EMAIL': 'f@t', 'GIT_CONFIG_NOSYSTEM': '1', 'HOME': '/nonexistent',
           'GIT_CONFIG_GLOBAL': '/dev/null'}


def git(args, cwd, timeout=300):
    return sh(['git', '-c', 'init.defaultBranch=main', '-c', 'safe.directory=*', *args], cwd=cwd,
              env=GIT_ENV, timeout=timeout)


def make_tree(root, n_files, seed, fancy=True):
    """A tree of n_files small files in nested dirs; with fancy: symlinks, hard links, odd modes, mtimes, xattrs."""
    r = random.Random(seed)
    dirs = ['']
    for i in range(max(1, n_files // 25)):
        d = os.path.join(r.choice(dirs), f'd{i}')
        os.makedirs(os.path.join(root, d), exist_ok=True)
        dirs.append(d)
    files = []
    for i in range(n_files):
        p = os.path.join(root, r.choice(dirs), f'f{i}.txt')
        write(p, r.randbytes(r.choice([0, 10, 300, 4096, 20000])))
        files.append(p)
        if fancy:
            os.chmod(p, r.choice([0o644, 0o600, 0o755, 0o444]))
            os.utime(p, ns=(r.randrange(10**18), r.randrange(10**18)))
    if fancy:
        for i in range(min(50, n_files // 4)):
            os.symlink(os.path.relpath(r.choice(files), root), os.path.join(root, f'link{i}'))
            os.link(r.choice(files), os.path.join(root, f'hard{i}'))
        for p in files[:20]:
            os.setxattr(p, 'user.tag', os.path.basename(p).encode())
        for d in reversed(dirs):
            os.utime(os.path.join(root, d), ns=(10**17, 10**17 + 7))
    return files


@check('workload.git', timeout=300)
def _(t):
    src = os.path.join(t.scratch, 'src')
    os.mkdir(src)
    git(['init', '-q'], src)
    r = random.Random(5)
    for c in range(15 if t.quick else 60):
        for i in range(20):
            write(os.path.join(src, f'file{r.randrange(150)}.txt'), r.randbytes(r.randrange(1, 5000)).hex().encode())
        git(['add', '-A'], src)
        git(['commit', '-qm', f'commit {c}'], src)
    git(['clone', '-q', src, t.p('clone')], t.d)
    repo = t.p('clone')
    git(['checkout', '-qb', 'feature'], repo)
    for i in range(30):
        write(os.path.join(repo, f'new{i}.txt'), f'new file {i}\n'.encode() * 50)
    os.unlink(os.path.join(repo, 'file1.txt')) if os.path.exists(os.path.join(repo, 'file1.txt')) else None
    git(['add', '-A'], repo)
    git(['commit', '-qm', 'feature work'], repo)
    git(['checkout', '-q', 'main'], repo)
    git(['merge', '-q', '--no-ff', '-m', 'merge', 'feature'], repo)
    git(['gc', '-q', '--aggressive', '--prune=now'], repo)
    git(['fsck', '--full', '--strict'], repo)
    eq(git(['status', '--porcelain'], repo).stdout, b'', 'git status after gc')
    n = int(git(['rev-list', '--count', 'HEAD'], repo).stdout)
    eq(n, (15 if t.quick else 60) + 2, 'commit count')
    # and back out: a clone of the mounted repo has the same HEAD tree
    git(['clone', '-q', repo, os.path.join(t.scratch, 'back')], t.scratch)
    eq(git(['rev-parse', 'HEAD^{tree}'], os.path.join(t.scratch, 'back')).stdout,
       git(['rev-parse', 'HEAD^{tree}'], repo).stdout, 'tree id of a clone made from the mount')


@check('workload.tar_roundtrip', timeout=300)
def _(t):
    src = os.path.join(t.scratch, 'src')
    os.mkdir(src)
    make_tree(src, 5000, 11, fancy=False)
    opts = ['--sort=name', '--format=gnu', '--numeric-owner']
    a1, a2 = os.path.join(t.scratch, 'a1.tar'), os.path.join(t.scratch, 'a2.tar')
    sh(['tar', 'cf', a1, *opts, '-C', src, '.'])
    os.mkdir(t.p('x'))
    sh(['tar', 'xf', a1, '-C', t.p('x')])
    sh(['tar', 'cf', a2, *opts, '-C', t.p('x'), '.'])
    h1, h2 = (hashlib.sha256(read(a)).hexdigest() for a in (a1, a2))
    if h1 != h2:
        p = sh(f'cmp {a1} {a2} | head -1', check=False)
        raise AssertionError(f'tar c of the extracted tree differs from the original archive: {p.stdout.decode().strip()}')
    n = int(sh(f'tar tf {a2} | wc -l').stdout)
    true(n >= 5000, f'archive lists {n} entries')


@check('workload.sqlite_wal', timeout=300)
def _(t):
    db = sqlite3.connect(t.p('app.db'), isolation_level=None)
    try:
        eq(db.execute('pragma journal_mode=wal').fetchone()[0], 'wal', 'journal mode')
        # quick: NORMAL (WAL's usual setting: fsync at checkpoints); full: FULL (fsync at every commit)
        db.execute('pragma synchronous=normal' if t.quick else 'pragma synchronous=full')
        db.execute('create table kv (k integer primary key, v blob, n integer)')
        db.execute('create index kv_n on kv(n)')
        r = random.Random(3)
        for i in range(1000):
            db.execute('begin')
            db.execute('insert or replace into kv values (?, ?, ?)', (r.randrange(400), r.randbytes(r.randrange(10, 3000)), i))
            if i % 7 == 0:
                db.execute('delete from kv where k = ?', (r.randrange(400),))
            db.execute('commit')
            if i % 250 == 249:
                db.execute('pragma wal_checkpoint(truncate)')
        eq(db.execute('pragma integrity_check').fetchone()[0], 'ok', 'integrity_check')
        count = db.execute('select count(*) from kv').fetchone()[0]
    finally:
        db.close()
    # a second connection in another process sees the same data
    out = sh(['sqlite3', t.p('app.db'), 'pragma integrity_check; select count(*) from kv;']).stdout.split()
    eq(out, [b'ok', str(count).encode()], 'sqlite3 CLI integrity_check and count')


@check('workload.npm_install_tarball', timeout=300)
def _(t):
    pkg = os.path.join(t.scratch, 'pkg')
    os.makedirs(os.path.join(pkg, 'lib'))
    write(os.path.join(pkg, 'package.json'), b'{"name":"fstests-pkg","version":"1.2.3","main":"lib/index.js",'
                                             b'"bin":{"fstests-pkg":"lib/cli.js"}}')
    write(os.path.join(pkg, 'lib', 'index.js'), b'module.exports = (a, b) => a + b;\n')
    write(os.path.join(pkg, 'lib', 'cli.js'), b'#!/usr/bin/env node\nconsole.log(require("./index.js")(40, 2));\n')
    cache = os.path.join(t.scratch, 'npm-cache')
    env = {'npm_config_cache': cache, 'npm_config_update_notifier': 'false', 'HOME': t.scratch}
    tgz = sh(['npm', 'pack', '--silent', pkg], cwd=t.scratch, env=env).stdout.decode().strip().splitlines()[-1]
    app = t.p('app')
    os.mkdir(app)
    write(os.path.join(app, 'package.json'), b'{"name":"app","version":"0.0.0","private":true}')
    sh(['npm', 'install', '--offline', '--no-audit', '--no-fund', os.path.join(t.scratch, tgz)], cwd=app, env=env)
    out = sh(['node', '-e', 'console.log(require("fstests-pkg")(2, 3))'], cwd=app).stdout
    eq(out, b'5\n', 'installed package works')
    eq(sh([os.path.join(app, 'node_modules', '.bin', 'fstests-pkg')], cwd=app).stdout, b'42\n', 'bin link works')
    true(os.path.exists(os.path.join(app, 'package-lock.json')), 'package-lock.json written')


@check('workload.python_venv', timeout=300)
def _(t):
    venv = t.p('venv')
    sh(['python3', '-m', 'venv', venv], timeout=300)
    py = os.path.join(venv, 'bin', 'python')
    eq(sh([py, '-c', 'import sys, pip; print(sys.prefix)']).stdout.decode().strip(), venv, 'venv sys.prefix')
    pkg = t.p('proj', 'mypkg')
    os.makedirs(pkg)
    for i in range(100):
        write(os.path.join(pkg, f'mod{i}.py'), f'VALUE = {i}\ndef f(x):\n    return x + VALUE\n'.encode())
    write(os.path.join(pkg, '__init__.py'))
    sh([py, '-m', 'compileall', '-q', t.p('proj')])
    sh([py, '-m', 'compileall', '-q', os.path.join(venv, 'lib')], timeout=300)
    out = sh([py, '-c', 'import mypkg.mod42 as m; print(m.f(1))'], cwd=t.p('proj')).stdout
    eq(out, b'43\n', 'import from compiled package')
    true(any(n.startswith('mod42.') for n in os.listdir(os.path.join(pkg, '__pycache__'))), 'pyc written')


@check('workload.cc_build')
def _(t):
    write(t.p('main.c'), b'#include <stdio.h>\nint add(int,int);\nint main(void){printf("%d\\n", add(20,22));return 0;}\n')
    write(t.p('add.c'), b'int add(int a, int b) { return a + b; }\n')
    sh(['cc', '-c', '-o', t.p('add.o'), t.p('add.c')])
    sh(['cc', '-c', '-o', t.p('main.o'), t.p('main.c')])
    sh(['cc', '-o', t.p('prog'), t.p('main.o'), t.p('add.o')])
    eq(sh([t.p('prog')]).stdout, b'42\n', 'program built in the mount runs')


def _roundtrip(t, copy_in, copy_out, label):
    src = os.path.join(t.scratch, 'src')
    os.mkdir(src)
    make_tree(src, 1500 if t.quick else 8000, 23)
    want = treestate.snapshot(src, times=True, owners=True, xattrs=True)
    copy_in(src, t.p('in'))
    got_in = treestate.snapshot(t.p('in'), times=True, owners=True, xattrs=True)
    d = treestate.diff(got_in, want)
    if d:
        raise AssertionError(f'{label} into the mount: ' + '; '.join(d))
    back = os.path.join(t.scratch, 'back')
    copy_out(t.p('in'), back)
    d = treestate.diff(treestate.snapshot(back, times=True, owners=True, xattrs=True), want)
    if d:
        raise AssertionError(f'{label} back out of the mount: ' + '; '.join(d))


@check('workload.cp_a_roundtrip', timeout=300)
def _(t):
    def cp(a, b):
        sh(['cp', '-a', a, b])
    _roundtrip(t, cp, cp, 'cp -a')


@check('workload.rsync_roundtrip', timeout=300)
def _(t):
    def rs(a, b):
        sh(['rsync', '-aHAX', a + '/', b + '/'])
    _roundtrip(t, rs, rs, 'rsync -aHAX')
    # a second rsync finds nothing to transfer
    out = sh(['rsync', '-aHAXi', '--dry-run', os.path.join(t.scratch, 'src') + '/', t.p('in') + '/']).stdout
    eq(out.decode().strip().splitlines()[:5], [], 'rsync itemized changes after the round trip')

/**
 * Bad input and partial failures through bin/homefs, each as one line and its own exit code: the exit
 * codes table in --help; store URLs that are malformed, under /proc, or not a directory; read-only
 * commands that must not create a mistyped store; --log-level refused before a daemon starts; verify
 * telling damage (4) from an unreachable store (3); and a push of a tree with unreadable paths (run as
 * an unprivileged user, since root reads everything) that names them, commits the rest and exits 5.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashBuffer } from '../src/hash/blake3.js';

const BIN = fileURLToPath(new URL('../../bin/homefs', import.meta.url));
const NOBODY = 65534;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** bin/homefs in a child process, killed after 30 s so that a hang fails the test instead of stalling it. */
function homefs(args: string[], env: Record<string, string> = {}, asUser?: number): Promise<Result> {
  const [cmd, argv] = asUser === undefined
    ? [process.execPath, [BIN, ...args]]
    : ['setpriv', [`--reuid=${asUser}`, `--regid=${asUser}`, '--clear-groups', process.execPath, BIN, ...args]];
  return new Promise((resolve) => {
    execFile(cmd, argv, { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Pids of processes still running `homefs mount … <mountpoint> … --foreground` (a daemon, early or not). */
async function daemonsOf(mountpoint: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of (await readdir('/proc')).filter((n) => /^\d+$/.test(n))) {
    const argv = await readFile(`/proc/${pid}/cmdline`, 'utf8').then((s) => s.split('\0'), (): string[] => []);
    if (argv.includes('mount') && argv.includes(mountpoint) && argv.includes('--foreground')) found.push(Number(pid));
  }
  return found;
}

function oneLine(r: Result, what: string): void {
  assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${what}: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /internal error|\n\s+at /, what);
}

test('exit codes: listed by --help, and distinct for usage, user error, store, damage', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-exit-'));
  try {
    const help = await homefs(['--help']);
    assert.equal(help.code, 0);
    for (const [code, what] of [[0, 'success'], [1, 'user error'], [2, 'usage'], [3, 'store unreachable'], [4, 'damage found'], [5, 'incomplete'], [70, 'internal error']] as const) {
      assert.match(help.stdout, new RegExp(`^ +${code} +${what}`, 'm'), `--help lists exit code ${code}`);
    }

    const env = { HOMEFS_STORE: `file://${join(work, 'store')}`, HOMEFS_DATA_DIR: join(work, 'data'), AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' };
    const src = join(work, 'src');
    await mkdir(src);
    await writeFile(join(src, 'a.txt'), 'alpha\n');
    assert.equal((await homefs(['push', src, 'acme/alice'], env)).code, 0);
    const refused = 's3://homes/acme?endpoint=http://127.0.0.1:1'; // loopback, nothing listens: connection refused

    const cases: Array<[string[], number, RegExp]> = [
      [['log', 'acme/alice', '--bogus'], 2, /unknown option '--bogus'/],
      [['gc', '--grace', 'soon'], 2, /invalid --grace 'soon'/],
      [['verify'], 2, /give either <org>\/<home> or --org ORG/],
      [['log', 'acme/nobody'], 1, /home acme\/nobody has no snapshots/],
      [['ls', `acme/alice@${'0'.repeat(64)}`], 1, /no snapshot 0{64} in org acme/], // a mistyped id, not damage
      [['fork', `acme/alice@${'0'.repeat(64)}`, 'acme/bob'], 1, /no snapshot 0{64} in org acme/],
      [['log', 'acme/alice', '--store', join(work, 'no-store')], 3, /store file:\/\/.*\/no-store does not exist; check --store or HOMEFS_STORE/],
      [['verify', 'acme/alice', '--store', refused], 3, /store s3:\/\/homes\/acme\?endpoint=http:\/\/127\.0\.0\.1:1.* is unreachable: connect ECONNREFUSED/],
      [['verify', 'acme/alice', '--store', 's3://homes/x?bogus=1'], 2, /store URL s3:\/\/homes\/x: unknown option 'bogus'/],
      [['verify', 'acme/alice', '--store', 'file:///dev/null/store'], 3, /cannot open store file:\/\/\/dev\/null\/store: a component of its path is not a directory/],
      [['mount', 'acme/alice', join(work, 'mnt'), '--log-level', 'loud'], 2, /invalid --log-level 'loud': use one of trace, debug, info/],
      [['mount', 'acme/alice', join(work, 'mnt'), '--fuse-spin-us', 'fast'], 2, /invalid --fuse-spin-us 'fast': use 0 to 1000 \(microseconds\)/],
      [['mount', 'acme/alice', join(work, 'mnt'), '--fuse-idle-poll-us', '2000'], 2, /invalid --fuse-idle-poll-us '2000': use 0 to 1000 \(microseconds\)/],
    ];
    await mkdir(join(work, 'mnt'));
    for (const [args, code, re] of cases) {
      const r = await homefs(args, env);
      assert.equal(r.code, code, `homefs ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
      if (!args.includes('--bogus')) oneLine(r, args.join(' ')); // commander adds its '(run with --help for usage)'
    }
    assert.ok(!existsSync(join(work, 'data')), 'the refused mount started no daemon (no state directory, no daemon.log)');
    assert.deepEqual(await daemonsOf(join(work, 'mnt')), [], 'no daemon started early for a refused mount is left running');

    // A daemon that fails before its mount is live (here: a cache directory under /proc, on which Node's
    // recursive mkdir spun forever) returns at once, with its reason, leaving no lease or pid lock.
    const failed = await homefs(['mount', 'acme/alice', join(work, 'mnt'), '--state-dir', join(work, 'state'), '--cache-dir', '/proc/nope/cache'], env);
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(failed.stderr, /^homefs: cannot create directory \/proc\/nope: /);
    oneLine(failed, 'mount with a cache directory under /proc');
    assert.ok(!existsSync(join(work, 'store/acme/homes/alice/LEASE')), 'lease released');
    assert.ok(!existsSync(join(work, 'state/daemon.pid')), 'pid lock released');

    // Damage: a block that no longer matches its hash is found by verify --full (4); cat meets it too.
    const h = hashBuffer(Buffer.from('alpha\n'));
    await writeFile(join(work, 'store/acme/blocks', h.slice(0, 2), h), 'tampered');
    assert.equal((await homefs(['verify', 'acme/alice'], env)).code, 0, 'presence check passes');
    const damaged = await homefs(['verify', 'acme/alice', '--full'], env);
    assert.equal(damaged.code, 4, damaged.stderr);
    assert.match(damaged.stdout, /^corrupt block acme\/alice: a\.txt/);
    const cat = await homefs(['cat', 'acme/alice', 'a.txt'], env);
    assert.equal(cat.code, 4);
    assert.match(cat.stderr, /corrupted object acme\/blocks\/.* \(a\.txt\)/);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('store URLs: one line at once for malformed, /proc, a file; readers create nothing', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-urls-'));
  try {
    const src = join(work, 'src');
    await mkdir(src);
    await writeFile(join(src, 'a.txt'), 'alpha\n');
    const file = join(work, 'plain-file');
    await writeFile(file, 'not a store');
    const cases: Array<[string[], number, RegExp]> = [
      [['log', 'acme/a', '--store', 'file://relative/x'], 2, /invalid store URL 'file:\/\/relative\/x': a file URL needs an absolute path after three slashes/],
      [['push', src, 'acme/a', '--store', 'file://relative/x'], 2, /a file URL needs an absolute path/],
      [['log', 'acme/a', '--store', 'relative/x'], 2, /invalid store URL 'relative\/x': expected file:\/\/\/path or s3:\/\/bucket\/prefix/],
      [['log', 'acme/a', '--store', 'file:///proc/nope/store'], 3, /store file:\/\/\/proc\/nope\/store does not exist/],
      [['push', src, 'acme/a', '--store', 'file:///proc/nope/store'], 3, /cannot open store file:\/\/\/proc\/nope\/store: cannot create directory \/proc\/nope: /],
      [['push', src, 'acme/a', '--store', `file://${file}`], 3, /cannot open store file:\/\/.*\/plain-file: it is not a directory/],
      [['log', 'acme/a', '--store', `file://${file}/sub`], 3, /cannot open store .*: a component of its path is not a directory/],
      [['install-helper', '--prefix', '/proc/nope'], 1, /cannot install \/proc\/nope\/sbin\/mount\.homefs: cannot create directory \/proc\/nope: /],
      [['install-helper', '--prefix', `${file}/x`], 1, /cannot create directories under .*\/plain-file: it is not a directory/],
      [['push', join(work, 'missing-src'), 'acme/a', '--store', `file://${join(work, 'push-store')}`], 1, /cannot push .*missing-src: no such directory/],
    ];
    // Every case runs under the 30 s kill of homefs(): before the fix, the /proc ones spun forever.
    const results = await Promise.all(cases.map(([args]) => homefs(args)));
    cases.forEach(([args, code, re], i) => {
      const r = results[i] ?? assert.fail();
      assert.equal(r.code, code, `homefs ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re, args.join(' '));
      oneLine(r, args.join(' '));
    });
    assert.ok(!existsSync(join(work, 'push-store')), 'a push that fails on its source creates no store');

    // The read-only commands on a mistyped store: each says it does not exist, and creates nothing.
    const typo = join(work, 'stroe');
    const readers: string[][] = [
      ['log', 'acme/a'], ['ls', 'acme/a'], ['cat', 'acme/a', 'a.txt'], ['diff', 'acme/a'], ['du', 'acme'],
      ['verify', 'acme/a'], ['locality', 'acme/a', '--cache-dir', join(work, 'cache')], ['pull', 'acme/a', join(work, 'out')],
      ['gc', '--org', 'acme'], ['fork', 'acme/a', 'acme/b'], ['rollback', 'acme/a', 'abcdef'],
    ];
    const rr = await Promise.all(readers.map((args) => homefs([...args, '--store', `file://${typo}`])));
    readers.forEach((args, i) => {
      const r = rr[i] ?? assert.fail();
      assert.equal(r.code, 3, `homefs ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^homefs: store file:\/\/.*\/stroe does not exist; check --store or HOMEFS_STORE/, args.join(' '));
      oneLine(r, args.join(' '));
    });
    assert.ok(!existsSync(typo), 'no command created the mistyped store');
    assert.ok(!existsSync(join(work, 'out')) && !existsSync(join(work, 'cache')), 'nor anything else');

    // The writers still create a new store where asked.
    const fresh = join(work, 'new/store');
    const push = await homefs(['push', src, 'acme/a', '--store', `file://${fresh}`]);
    assert.equal(push.code, 0, push.stderr);
    assert.equal(((await stat(fresh)).mode & 0o777), 0o700);
    assert.equal((await homefs(['log', 'acme/a', '--store', `file://${fresh}`])).code, 0);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('push: unreadable paths are skipped and named, the snapshot is committed, exit 5 (incomplete)', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-unreadable-'));
  try {
    const src = join(work, 'src');
    await mkdir(join(src, 'ok'), { recursive: true });
    await mkdir(join(src, 'secret'));
    await mkdir(join(src, 'nox'));
    await writeFile(join(src, 'ok/a.txt'), 'alpha\n');
    await writeFile(join(src, 'secret/s.txt'), 'secret\n');
    await writeFile(join(src, 'hidden.txt'), 'hidden\n');
    await writeFile(join(src, 'nox/n.txt'), 'n\n');
    for (const p of ['', 'src', 'src/ok', 'src/ok/a.txt', 'src/secret', 'src/secret/s.txt', 'src/hidden.txt', 'src/nox', 'src/nox/n.txt']) await chown(join(work, p), NOBODY, NOBODY);
    await chmod(work, 0o755);
    await chmod(join(src, 'secret'), 0o000); // cannot be listed
    await chmod(join(src, 'hidden.txt'), 0o000); // cannot be read
    await chmod(join(src, 'nox'), 0o644); // listed, but its entries cannot be looked up
    const store = `file://${join(work, 'store')}`;

    const r = await homefs(['push', src, 'acme/part', '--store', store, '--json'], {}, NOBODY);
    assert.equal(r.code, 5, r.stderr);
    assert.deepEqual(r.stderr.trim().split('\n'), [
      `homefs: cannot read ${join(src, 'hidden.txt')}: permission denied; it is left out of the snapshot`,
      `homefs: cannot read ${join(src, 'nox/n.txt')}: permission denied; it is left out of the snapshot`,
      `homefs: cannot read ${join(src, 'secret')}: permission denied; its entries are left out of the snapshot`,
    ]);
    const res = JSON.parse(r.stdout) as { files: number; unreadable: Array<{ path: string }> };
    assert.deepEqual(res.unreadable.map((u) => u.path), ['hidden.txt', 'nox/n.txt', 'secret']);
    assert.equal(res.files, 1);

    const ls = await homefs(['ls', 'acme/part', '--store', store], {}, NOBODY);
    assert.equal(ls.code, 0, ls.stderr);
    assert.deepEqual(ls.stdout.trim().split('\n').map((l) => l.split(/\s+/).at(-1)), ['nox/', 'ok/', 'secret/'], 'the readable rest is in HEAD');
    const cat = await homefs(['cat', 'acme/part', 'ok/a.txt', '--store', store], {}, NOBODY);
    assert.equal(cat.stdout, 'alpha\n');

    // The same tree readable: a complete push, exit 0.
    await chmod(join(src, 'secret'), 0o755);
    await chmod(join(src, 'hidden.txt'), 0o644);
    await chmod(join(src, 'nox'), 0o755);
    const full = await homefs(['push', src, 'acme/part', '--store', store], {}, NOBODY);
    assert.equal(full.code, 0, full.stderr);
    assert.doesNotMatch(full.stderr, /INCOMPLETE/);

    // An unreadable root is an error, not an empty snapshot.
    await chmod(src, 0o000);
    const root = await homefs(['push', src, 'acme/part', '--store', store], {}, NOBODY);
    assert.equal(root.code, 1);
    assert.match(root.stderr, /^homefs: cannot push .*\/src: permission denied\n$/);
    assert.equal((await readdir(join(work, 'store/acme/homes/part/heads'))).length, 2, 'no third generation');
  } finally {
    await chmod(join(work, 'src'), 0o755).catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
});

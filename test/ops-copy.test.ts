/**
 * `homefs copy` through real stores (file:// and the test Ceph), driven as a user drives it: the CLI.
 * A copy of a mounted home, including a change that was only fsync'd (a pending log segment), verifies on
 * the target and mounts there on a fresh host with the same content; a second copy sends nothing; an
 * interrupted copy (a failing target, a kill -9) finishes on the next run; a damaged source object fails
 * the home with exit 4 and leaves the target's HEAD; the target's HEAD never moves backwards or over
 * another snapshot; a copy taken while the home seals and fsyncs gives a state the home had.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileStore } from '../src/store/file.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import type { Store } from '../src/store/store.js';
import { pushDirectory } from '../src/transfer/push.js';
import { listHistory, readHead } from '../src/format/heads.js';
import { copyHomes } from '../src/ops/copy.js';
import { BIN, TestHome, homefs, homefsOk, shOk } from './support/homefs-mount.js';
import { testS3Url } from './support/s3.js';

interface Summary {
  homes: number;
  objects: number;
  bytes: number;
  skipped: number;
  seconds: number;
}

/** A target whose writes fail after the first `n` (a store that goes away in the middle of a copy). */
class BreaksAfter extends ForwardingStore {
  constructor(inner: Store, private n: number) {
    super(inner);
  }
  override put(key: string, data: Buffer): Promise<void> {
    if (this.n-- <= 0) return Promise.reject(new Error('the target broke'));
    return this.inner.put(key, data);
  }
  override putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    if (this.n-- <= 0) return Promise.reject(new Error('the target broke'));
    return this.inner.putIfAbsent(key, data);
  }
}

async function copy(args: string[]): Promise<Summary> {
  return JSON.parse(await homefsOk(['copy', ...args, '--json'], { timeoutMs: 120_000 })) as Summary;
}

/** Paths and content hashes of every file under `dir` (in a child process: the test never reads a mount itself). */
function contentOf(dir: string): Promise<string> {
  return shOk(`cd '${dir}' && find . -type f | LC_ALL=C sort | xargs -d '\\n' sha1sum`);
}

function fsyncWrite(path: string, text: string): Promise<string> {
  return shOk(`python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644); os.write(fd, sys.argv[2].encode()); os.fsync(fd); os.close(fd)" '${path}' '${text}'`);
}

test('copy of a mounted home with a pending segment: verify --full on the target, the same content on a fresh host there, a second copy sends nothing', async () => {
  const h = new TestHome();
  const target = `file://${join(h.root, 'backup')}`;
  try {
    const mnt = await h.mount();
    await shOk(`mkdir -p '${mnt}/notes' && for i in $(seq 40); do echo "note $i" > '${mnt}/notes/n'$i.md; done && head -c 9500000 /dev/urandom > '${mnt}/big.bin'`);
    await homefsOk(['sync', mnt]);
    await fsyncWrite(`${mnt}/notes/only-fsynced.md`, 'written after the seal, only fsynced');
    const source = await contentOf(mnt);

    const first = await copy(['acme/agent', '--store', h.storeUrl, '--to', target]);
    assert.equal(first.homes, 1);
    assert.ok(first.objects >= 45 && first.bytes > 9_500_000, `blocks, trees, snapshots, heads and the segment went over: ${JSON.stringify(first)}`);
    const logDir = join(h.root, 'backup/acme/homes/agent/log');
    assert.ok(existsSync(logDir) && readdirSync(logDir).length === 1, 'the pending segment is on the target (the fsync was not sealed)');
    const verify = await homefs(['verify', 'acme/agent', '--full', '--store', target]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);

    const again = await copy(['acme/agent', '--store', h.storeUrl, '--to', target]);
    assert.equal(again.objects, 0, 'a second copy sends nothing');
    assert.equal(again.bytes, 0);
    assert.ok(again.skipped >= first.objects, 'everything counted as already there');

    const there = new TestHome('acme', 'agent', target);
    try {
      const m2 = await there.mount({ host: 'fresh-host', extra: ['--read-only'] });
      assert.equal(await contentOf(m2), source, 'the fresh host sees the fsynced change and everything sealed');
    } finally {
      await there.cleanup();
    }
  } finally {
    await h.cleanup();
  }
});

test('an interrupted copy (a failing target, then a kill -9) finishes on the next run without sending twice', async () => {
  const h = new TestHome();
  try {
    const src = join(h.root, 'src');
    for (let d = 0; d < 8; d++) {
      mkdirSync(join(src, `d${d}`), { recursive: true });
      for (let f = 0; f < 40; f++) writeFileSync(join(src, `d${d}`, `f${f}`), `file ${d}/${f}\n`.repeat(f + 1));
    }
    const store = await new FileStore(join(h.root, 'store')).init();
    await pushDirectory(src, store, 'acme', 'agent', { xattrs: false, pushPack: false });
    const opts = { keep: Infinity, withHints: false, dryRun: false, parallelism: 4 };

    // A target that breaks after 100 writes: the run fails, and HEAD is not there yet.
    const broken = await new FileStore(join(h.root, 'b1')).init();
    await assert.rejects(copyHomes(store, new BreaksAfter(broken, 100), 'acme', ['agent'], opts), /the target broke/);
    assert.equal(await readHead(broken, 'acme', 'agent'), null, 'no HEAD before its objects');
    const rest = await copyHomes(store, broken, 'acme', ['agent'], opts);
    const whole = await copyHomes(store, await new FileStore(join(h.root, 'b2')).init(), 'acme', ['agent'], opts);
    assert.equal(rest.failed.length, 0);
    assert.ok(rest.skipped >= 100 && rest.objects === whole.objects - 100, `the rerun sent only what had not landed: ${rest.objects} of ${whole.objects}`);
    assert.equal((await readHead(broken, 'acme', 'agent'))?.snapshot, (await readHead(store, 'acme', 'agent'))?.snapshot);

    // kill -9 of the CLI once objects are landing, then a rerun.
    const dir = join(h.root, 'b3');
    const child = spawn(BIN, ['copy', 'acme/agent', '--store', h.storeUrl, '--to', `file://${dir}`, '--parallel', '1'], { stdio: 'ignore' });
    for (let i = 0; i < 500 && !(existsSync(join(dir, 'acme/blocks')) && readdirSync(join(dir, 'acme/blocks')).length > 3); i++) await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    assert.equal(await readHead(await new FileStore(dir).init(), 'acme', 'agent'), null, 'killed before it wrote HEAD');
    const after = await copy(['acme/agent', '--store', h.storeUrl, '--to', `file://${dir}`]);
    assert.ok(after.skipped > 0 && after.objects < whole.objects, `the rerun after kill -9 skipped what had landed: ${JSON.stringify(after)}`);
    const v = await homefs(['verify', 'acme/agent', '--full', '--store', `file://${dir}`]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  } finally {
    await h.cleanup();
  }
});

test('a damaged source object fails the home with exit 4 and names it; the target keeps its HEAD, which never moves backwards or over another snapshot', async () => {
  const h = new TestHome();
  try {
    const src = join(h.root, 'src');
    mkdirSync(src, { recursive: true });
    writeFileSync(join(src, 'a.txt'), 'first version\n');
    const store = await new FileStore(join(h.root, 'store')).init();
    await pushDirectory(src, store, 'acme', 'agent', { xattrs: false, pushPack: false });
    const target = join(h.root, 'backup');
    await copy(['acme/agent', '--store', h.storeUrl, '--to', `file://${target}`]);
    const backup = await new FileStore(target).init();
    const gen0 = await readHead(backup, 'acme', 'agent');
    assert.equal(gen0?.gen, 0);

    writeFileSync(join(src, 'b.txt'), 'a new file, then damaged in the source store\n');
    await pushDirectory(src, store, 'acme', 'agent', { xattrs: false, pushPack: false });
    const blockDir = join(h.root, 'store/acme/blocks');
    const blockFiles = readdirSync(blockDir).flatMap((p) => readdirSync(join(blockDir, p)).map((f) => join(blockDir, p, f)));
    const damaged = blockFiles.find((f) => !existsSync(f.replace(join(h.root, 'store'), target)));
    assert.ok(damaged, 'the new block exists only in the source');
    writeFileSync(damaged, 'not what it was');
    const r = await homefs(['copy', 'acme/agent', '--store', h.storeUrl, '--to', `file://${target}`]);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /acme\/agent was not copied: corrupted object acme\/blocks\/..\/[0-9a-f]{64}/);
    assert.deepEqual(await readHead(backup, 'acme', 'agent'), gen0, 'the target keeps its previous HEAD');

    // The target moved on by itself (a home mounted from it): copy never writes over or behind it.
    writeFileSync(damaged, 'unused now');
    const other = join(h.root, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'c.txt'), 'only on the target\n');
    await pushDirectory(other, backup, 'acme', 'agent', { xattrs: false, pushPack: false });
    const targetHead = await readHead(backup, 'acme', 'agent');
    assert.equal(targetHead?.gen, 1);
    const d = await homefs(['copy', 'acme/agent', '--store', h.storeUrl, '--to', `file://${target}`, '--keep', '1']);
    assert.equal(d.code, 4, 'the damaged block still fails it');
    const dry = await homefs(['copy', 'acme', '--store', h.storeUrl, '--to', `file://${target}`, '--dry-run']);
    assert.equal(dry.code, 4, "a dry run meets the damage too");
    assert.deepEqual(await readHead(backup, 'acme', 'agent'), targetHead, 'neither run wrote a generation');
  } finally {
    await h.cleanup();
  }
});

test('a target ahead of the source keeps its HEAD; one whose generation holds another snapshot has diverged (exit 1)', async () => {
  const h = new TestHome();
  try {
    const src = join(h.root, 'src');
    mkdirSync(src, { recursive: true });
    writeFileSync(join(src, 'a.txt'), 'one\n');
    const store = await new FileStore(join(h.root, 'store')).init();
    await pushDirectory(src, store, 'acme', 'agent', { xattrs: false, pushPack: false });
    const target = join(h.root, 'backup');
    await copy(['acme', '--store', h.storeUrl, '--to', `file://${target}`]);
    const backup = await new FileStore(target).init();
    writeFileSync(join(src, 'a.txt'), 'on the target\n');
    await pushDirectory(src, backup, 'acme', 'agent', { xattrs: false, pushPack: false });
    const ahead = await readHead(backup, 'acme', 'agent');
    const same = await copy(['acme', '--store', h.storeUrl, '--to', `file://${target}`]);
    assert.equal(same.objects, 0);
    assert.deepEqual(await readHead(backup, 'acme', 'agent'), ahead, 'the older source does not move the target back');

    writeFileSync(join(src, 'a.txt'), 'on the source\n');
    await pushDirectory(src, store, 'acme', 'agent', { xattrs: false, pushPack: false });
    const r = await homefs(['copy', 'acme/agent', '--store', h.storeUrl, '--to', `file://${target}`]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /generation 1 of acme\/agent holds another snapshot than the source's: the two have diverged/);
    assert.deepEqual(await readHead(backup, 'acme', 'agent'), ahead);
  } finally {
    await h.cleanup();
  }
});

test('a copy during seals and fsyncs, to the test Ceph and back, gives a state the home had', async () => {
  const h = new TestHome();
  const s3 = await testS3Url();
  try {
    const mnt = await h.mount();
    await shOk(`echo 0 > '${mnt}/a' && echo 0 > '${mnt}/b'`);
    await homefsOk(['sync', mnt]);
    // Each step writes a = i, then b = i, and fsyncs b (a whole-home segment); every fifth one also seals.
    const writer = shOk(`for i in $(seq 1 60); do echo $i > '${mnt}/a'; echo $i > '${mnt}/b'; python3 -c "import os; fd=os.open('${mnt}/b', os.O_RDONLY); os.fsync(fd)"; [ $((i % 5)) -eq 0 ] && '${BIN}' sync '${mnt}' >/dev/null; done`, { timeoutMs: 120_000 });
    await new Promise((r) => setTimeout(r, 300));
    const up = await copy(['acme/agent', '--store', h.storeUrl, '--to', s3]);
    await writer;
    assert.equal(up.homes, 1);
    const v = await homefs(['verify', 'acme/agent', '--full', '--store', s3]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    const back = `file://${join(h.root, 'back')}`;
    const down = await copy(['acme/agent', '--store', s3, '--to', back]);
    assert.ok(down.objects >= up.objects - 1, 'the copy back sends what went up');
    const there = new TestHome('acme', 'agent', back);
    try {
      const m2 = await there.mount({ host: 'fresh-host', extra: ['--read-only'] });
      const [a, b] = (await shOk(`cat '${m2}/a' '${m2}/b'`)).trim().split('\n').map(Number);
      assert.ok(a !== undefined && b !== undefined && (a === b || a === b + 1), `a state the home had (a = ${a}, b = ${b})`);
    } finally {
      await there.cleanup();
    }
  } finally {
    await h.cleanup();
  }
});

test('--keep N copies the newest N generations of each home, with their objects only', async () => {
  const h = new TestHome();
  try {
    const src = join(h.root, 'src');
    mkdirSync(src, { recursive: true });
    const store = await new FileStore(join(h.root, 'store')).init();
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(src, 'v.txt'), `version ${i}\n`);
      await pushDirectory(src, store, 'acme', 'agent', { xattrs: false, pushPack: false });
    }
    const target = join(h.root, 'backup');
    const r = await copy(['acme/agent', '--store', h.storeUrl, '--to', `file://${target}`, '--keep', '1']);
    const backup = await new FileStore(target).init();
    assert.deepEqual((await listHistory(backup, 'acme', 'agent')).map((g) => g.gen), [2], 'only the newest generation');
    assert.equal(readdirSync(join(target, 'acme/blocks')).flatMap((p) => readdirSync(join(target, 'acme/blocks', p))).length, 1, "only that generation's block");
    assert.ok(r.objects >= 4, 'a block, a tree, a snapshot, a head');
    const usage = await homefs(['copy', 'acme/agent', '--store', h.storeUrl, '--to', `file://${target}`, '--keep', '0']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /invalid --keep '0'/);
  } finally {
    await h.cleanup();
  }
});

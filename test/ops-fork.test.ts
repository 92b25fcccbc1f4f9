/**
 * fork, rollback, diff, history retention and du against a file store, in process: a fork of a home with
 * 2,000 files and a 50 MB file writes two small objects (no block read or copied) in well under 100 ms,
 * lists the same files, and later writes to the fork leave the source untouched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FileStore } from '../src/store/file.js';
import { pushDirectory } from '../src/transfer/push.js';
import { listHistory, readHead } from '../src/format/heads.js';
import { ObjectStore } from '../src/format/objects.js';
import { walkTree } from '../src/transfer/walk.js';
import { forkHome } from '../src/ops/fork.js';
import { rollbackHome } from '../src/ops/rollback.js';
import { diffTrees, summarize, type Change } from '../src/ops/diff.js';
import { pruneHistory } from '../src/ops/history.js';
import { orgUsage } from '../src/ops/du.js';
import { RecordingStore } from './support/ops-stores.js';

/** tmpfs when there is one: 2,000 fsync'd store writes cost seconds on a disk, and this test is about fork. */
const FAST_TMP = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

async function listing(objects: ObjectStore, home: string): Promise<string[]> {
  const head = await readHead(objects.store, objects.org, home);
  assert.ok(head);
  const snap = await objects.getSnapshot(head.snapshot);
  const out: string[] = [];
  for await (const w of walkTree(objects, snap.root)) out.push(`${w.path} ${w.entry.size} ${(w.entry.blocks ?? []).join(',')}`);
  return out;
}

async function countFiles(dir: string): Promise<number> {
  let n = 0;
  for (const sub of await readdir(dir).catch(() => [])) n += (await readdir(join(dir, sub))).length;
  return n;
}

async function diffOf(objects: ObjectStore, a: string, b: string): Promise<Change[]> {
  const out: Change[] = [];
  const [sa, sb] = await Promise.all([objects.getSnapshot(a), objects.getSnapshot(b)]);
  for await (const c of diffTrees(objects, sa.root, sb.root)) out.push(c);
  return out;
}

test('fork: 2,000 files + 50 MB, O(1) store work (counted in requests), same files, independent afterwards', async () => {
  const work = await mkdtemp(join(FAST_TMP, 'homefs-ops-fork-'));
  try {
    const src = join(work, 'src');
    for (let d = 0; d < 20; d++) {
      await mkdir(join(src, `dir${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) await writeFile(join(src, `dir${d}`, `f${f}.txt`), `file ${d}/${f}\n`);
    }
    await writeFile(join(src, 'big.bin'), randomBytes(50 * 1024 * 1024));
    const store = await new FileStore(join(work, 'store')).init();
    await pushDirectory(src, store, 'acme', 'src', { xattrs: false });
    const objects = new ObjectStore(store, 'acme');
    const blocksBefore = await countFiles(join(work, 'store/acme/blocks'));
    const metaBefore = await countFiles(join(work, 'store/acme/meta'));

    const rec = new RecordingStore(store);
    const r = await forkHome(rec, { org: 'acme', home: 'src' }, { org: 'acme', home: 'fork' });
    const writes = rec.calls.filter((c) => c.op === 'put' || c.op === 'putIfAbsent' || c.op === 'delete');
    assert.deepEqual(writes.map((c) => c.op).sort(), ['put', 'put', 'putIfAbsent'], 'one snapshot object, a copy of the namespace pack, one HEAD generation');
    assert.equal(writes.filter((c) => c.key.endsWith('/NSPACK')).length, 1, 'the namespace pack is copied for the fork’s first wake');
    assert.ok(rec.calls.every((c) => !c.key.includes('/blocks/')), 'no block is touched');
    assert.ok(rec.calls.length <= 11, `a handful of store calls (one lists the source's fsync log, two copy its namespace pack), got ${rec.calls.length}: ${rec.calls.map((c) => `${c.op} ${c.key}`).join(', ')}`);
    assert.equal(await countFiles(join(work, 'store/acme/blocks')), blocksBefore, 'no blocks copied');
    assert.equal(await countFiles(join(work, 'store/acme/meta')), metaBefore + 1, 'one new meta object (the snapshot)');

    const srcList = await listing(objects, 'src');
    assert.equal(srcList.length, 2021);
    assert.deepEqual(await listing(objects, 'fork'), srcList);
    const forkSnap = await objects.getSnapshot(r.snapshot);
    assert.equal(forkSnap.parent, r.from);
    assert.equal(forkSnap.reason, 'fork');
    assert.equal(forkSnap.home, 'acme/fork');

    // Writes to the fork (a push of a changed tree) do not change the source.
    const srcHead = await readHead(store, 'acme', 'src');
    await writeFile(join(src, 'dir0/f0.txt'), 'changed in the fork\n');
    await writeFile(join(src, 'only-in-fork'), 'x');
    await rm(join(src, 'dir1'), { recursive: true });
    await pushDirectory(src, store, 'acme', 'fork', { xattrs: false });
    assert.deepEqual(await readHead(store, 'acme', 'src'), srcHead);
    assert.deepEqual(await listing(objects, 'src'), srcList);
    const forkHead = await readHead(store, 'acme', 'fork');
    assert.ok(forkHead);
    const s = summarize(await diffOf(objects, r.snapshot, forkHead.snapshot));
    assert.deepEqual([s.added, s.removed, s.modified], [1, 101, 1]);

    // du: the big file is shared by both HEADs; the fork's new file is unique to it.
    const du = await orgUsage(store, objects);
    const [a, b] = [du.homes.find((h) => h.home === 'acme/fork'), du.homes.find((h) => h.home === 'acme/src')];
    assert.ok(a && b);
    assert.ok(a.sharedBytes >= 50 * 1024 * 1024 && b.sharedBytes >= 50 * 1024 * 1024);
    assert.equal(a.uniqueBytes, 'changed in the fork\n'.length + 1);
    assert.ok(du.dedupedBytes < a.logicalBytes + b.logicalBytes);

    await assert.rejects(forkHome(store, { org: 'acme', home: 'src' }, { org: 'acme', home: 'fork' }), /already exists/);
    await assert.rejects(forkHome(store, { org: 'acme', home: 'nope' }, { org: 'acme', home: 'x' }), /has no snapshots/);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('rollback writes a new generation equal to the old snapshot; diff; retention keeps the newest N', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-rb-'));
  try {
    const src = join(work, 'src');
    await mkdir(join(src, 'notes'), { recursive: true });
    const store = await new FileStore(join(work, 'store')).init();
    const objects = new ObjectStore(store, 'acme');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      await writeFile(join(src, 'notes', `n${i}.md`), `note ${i}\n`);
      ids.push((await pushDirectory(src, store, 'acme', 'a', { xattrs: false })).snapshot);
    }
    const v1 = await listing(objects, 'a');
    const r = await rollbackHome(store, 'acme', 'a', ids[1]?.slice(0, 10) ?? '');
    assert.equal(r.gen, 5);
    assert.equal(r.to, ids[1]);
    assert.equal(r.previous, ids[4]);
    const history = await listHistory(store, 'acme', 'a');
    assert.deepEqual(history.map((h) => h.gen), [5, 4, 3, 2, 1, 0], 'history is never rewritten');
    const rolled = await objects.getSnapshot(r.snapshot);
    assert.equal(rolled.root, (await objects.getSnapshot(ids[1] ?? '')).root);
    assert.equal(rolled.parent, ids[4]);
    assert.notDeepEqual(await listing(objects, 'a'), v1);

    const changes = await diffOf(objects, ids[4] ?? '', r.snapshot);
    assert.deepEqual(changes.map((c) => `${c.change} ${c.path} ${c.oldSize}`), ['removed notes/n2.md 7', 'removed notes/n3.md 7', 'removed notes/n4.md 7']);

    const dry = await pruneHistory(store, 'acme', 'a', 3, true);
    assert.equal(dry.pruned.length, 3);
    assert.equal((await listHistory(store, 'acme', 'a')).length, 6, 'dry run deletes nothing');
    const p = await pruneHistory(store, 'acme', 'a', 3);
    assert.equal(p.kept, 3);
    assert.deepEqual((await listHistory(store, 'acme', 'a')).map((h) => h.gen), [5, 4, 3]);
    assert.equal((await readHead(store, 'acme', 'a'))?.snapshot, r.snapshot, 'HEAD survives pruning');
    await assert.rejects(pruneHistory(store, 'acme', 'a', 0), /keep at least 1/);
    await assert.rejects(rollbackHome(store, 'acme', 'a', 'abcdef'), /no snapshot abcdef/);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

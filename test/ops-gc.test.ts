/**
 * gc and verify against a file store, in process. gc removes unreferenced objects older than the grace
 * period, keeps everything reachable from any retained snapshot and everything a seal held in flight
 * (blocks and snapshot written, HEAD not yet advanced) has uploaded, and re-marks roots committed while it
 * ran; a push pack (PUSHPACK) is deleted once its snapshot is no longer retained, never marked from. verify reports missing and corrupted objects with the path that uses them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStore } from '../src/store/file.js';
import { MemoryStore } from '../src/store/memory.js';
import { blockKey, pushPackKey } from '../src/store/keys.js';
import { pullSnapshot } from '../src/transfer/pull.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { pushDirectory } from '../src/transfer/push.js';
import { listHistory, readHead } from '../src/format/heads.js';
import { ObjectStore } from '../src/format/objects.js';
import { gcOrg } from '../src/ops/gc.js';
import { rollbackHome } from '../src/ops/rollback.js';
import { verifyHomes } from '../src/ops/verify.js';
import { gate, HookedStore } from './support/ops-stores.js';

const DAY = 86_400_000;
/** gc without the fence's wait (commits in these tests are either held before HEAD or fenced themselves). */
const NOW = { waitMs: 0 };

async function backdate(dir: string, ms: number): Promise<void> {
  const t = new Date(Date.now() - ms);
  for (const kind of ['blocks', 'meta']) {
    const root = join(dir, kind);
    for (const sub of await readdir(root).catch(() => [])) for (const f of await readdir(join(root, sub))) await utimes(join(root, sub, f), t, t);
  }
}

function blockFile(storeDir: string, content: string): string {
  return join(storeDir, blockKey('acme', hashBuffer(Buffer.from(content))));
}

test('gc: sweeps old garbage, keeps retained snapshots, young objects and a seal in flight; re-marks late roots', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-gc-'));
  try {
    const storeDir = join(work, 'store');
    const store = await new FileStore(storeDir).init();
    const objects = new ObjectStore(store, 'acme');
    const a = join(work, 'a');
    await mkdir(join(a, 'docs'), { recursive: true });
    await writeFile(join(a, 'docs/kept.md'), 'kept in every generation\n');
    await writeFile(join(a, 'docs/dropped.md'), 'only in generation 0\n');
    await writeFile(join(a, 'docs/rescued.md'), 'only in generation 1, rolled back to during gc\n');
    const gen0 = await pushDirectory(a, store, 'acme', 'a', { xattrs: false });
    await rm(join(a, 'docs/dropped.md'));
    const gen1 = await pushDirectory(a, store, 'acme', 'a', { xattrs: false });
    await rm(join(a, 'docs/rescued.md'));
    await writeFile(join(a, 'docs/new.md'), 'generation 2\n');
    await pushDirectory(a, store, 'acme', 'a', { xattrs: false });
    await objects.putBlock(hashBuffer(Buffer.from('old orphan')), Buffer.from('old orphan'));
    await backdate(join(storeDir, 'acme'), 2 * DAY);
    await objects.putBlock(hashBuffer(Buffer.from('young orphan')), Buffer.from('young orphan'));

    // A seal of home b held in flight: its blocks, trees and snapshot are in the store, HEAD not yet.
    const b = join(work, 'b');
    await mkdir(b);
    await writeFile(join(b, 'kept.md'), 'kept in every generation\n'); // dedupes against a's live block
    await writeFile(join(b, 'fresh.md'), 'sealed while gc runs\n');
    const g = gate();
    const sealing = new HookedStore(store, {
      beforePutIfAbsent: async (key) => {
        if (!key.includes('/heads/')) return;
        g.arrive();
        await g.wait;
      },
    });
    const seal = pushDirectory(b, sealing, 'acme', 'b', { xattrs: false });
    await g.reached;

    // While gc scans, a rollback of a to generation 1 (pruned by this gc) starts: the gc fence makes it wait
    // for the end of the gc, find gen 1's objects gone, and give up with HEAD unchanged.
    let rollback: Promise<unknown> = Promise.resolve();
    const gcStore = new HookedStore(store, {
      beforeList: {
        match: /^acme\/blocks\/$/,
        run: async () => void (rollback = rollbackHome(store, 'acme', 'a', gen1.snapshot, { fence: { pollMs: 5 } }).then(() => 'committed', (e: unknown) => String(e))),
      },
    });
    const dry = await gcOrg(store, 'acme', { graceMs: DAY, keep: 1, dryRun: true });
    assert.equal(dry.prunedGenerations, 2);
    assert.equal((await listHistory(store, 'acme', 'a')).length, 3, 'a dry run prunes nothing');
    assert.ok(existsSync(blockFile(storeDir, 'old orphan')), 'a dry run deletes nothing');

    const r = await gcOrg(gcStore, 'acme', { graceMs: DAY, keep: 1, dryRun: false, fence: NOW });
    g.open();
    const sealed = await seal;

    assert.equal(r.prunedGenerations, 2);
    assert.match(String(await rollback), /lost objects to a gc that ran meanwhile/);
    assert.equal((await listHistory(store, 'acme', 'a')).length, 1, 'the failed rollback wrote no generation');
    assert.ok(r.deletedObjects >= 3 && r.bytesFreed > 0, JSON.stringify(r));
    assert.equal(existsSync(blockFile(storeDir, 'old orphan')), false, 'old unreferenced block swept');
    assert.equal(existsSync(blockFile(storeDir, 'only in generation 0\n')), false, 'block only in a pruned generation swept');
    assert.ok(existsSync(blockFile(storeDir, 'young orphan')), 'unreferenced but within the grace period: kept');
    assert.ok(existsSync(blockFile(storeDir, 'sealed while gc runs\n')), 'the in-flight seal\'s new block is kept');
    assert.equal(existsSync(blockFile(storeDir, 'only in generation 1, rolled back to during gc\n')), false, 'only in a pruned generation: swept');
    assert.ok(existsSync(join(storeDir, 'acme/meta', gen0.snapshot.slice(0, 2), gen0.snapshot)) === false, 'pruned snapshot swept');

    assert.equal((await readHead(store, 'acme', 'b'))?.snapshot, sealed.snapshot);
    const v = await verifyHomes(store, objects, ['a', 'b'], { full: true });
    assert.deepEqual(v.problems, [], 'everything reachable from a retained snapshot survived');
    assert.equal(v.blocks, 3);

    const again = await gcOrg(store, 'acme', { graceMs: DAY, keep: 2, dryRun: false, fence: NOW });
    assert.equal(again.deletedObjects, 0, 'a second gc finds nothing old to delete');
    const young = await gcOrg(store, 'acme', { graceMs: 0, keep: 1, dryRun: false, fence: NOW });
    assert.equal(existsSync(blockFile(storeDir, 'young orphan')), false, 'grace 0 sweeps the young orphan');
    assert.ok(young.deletedObjects >= 1);
    assert.deepEqual((await verifyHomes(store, objects, ['a', 'b'], { full: true })).problems, []);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('gc stops before deleting anything when a retained snapshot cannot be read', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-gc2-'));
  try {
    const storeDir = join(work, 'store');
    const store = await new FileStore(storeDir).init();
    const src = join(work, 'src');
    await mkdir(join(src, 'sub'), { recursive: true });
    await writeFile(join(src, 'sub/x'), 'x');
    const p = await pushDirectory(src, store, 'acme', 'a', { xattrs: false });
    const objects = new ObjectStore(store, 'acme');
    await objects.putBlock(hashBuffer(Buffer.from('orphan')), Buffer.from('orphan'));
    await backdate(join(storeDir, 'acme'), 2 * DAY);
    const snap = await objects.getSnapshot(p.snapshot);
    const tree = await objects.getTree(snap.root);
    const subTree = tree.entries[0]?.tree ?? '';
    await rm(join(storeDir, 'acme/meta', subTree.slice(0, 2), subTree));
    await assert.rejects(gcOrg(store, 'acme', { graceMs: DAY, keep: 20, dryRun: false, fence: NOW }), /gc stopped before deleting anything/);
    assert.ok(existsSync(blockFile(storeDir, 'orphan')));
    const v = await verifyHomes(store, objects, ['a'], { full: false });
    assert.deepEqual(v.problems.map((x) => `${x.problem} ${x.object} ${x.path}`), ['missing tree sub']);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('gc keeps a candidate rewritten between its scan and its delete (a seal re-uploading a dedupe hit)', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-gc3-'));
  try {
    const storeDir = join(work, 'store');
    const store = await new FileStore(storeDir).init();
    const src = join(work, 'src');
    await mkdir(src);
    await writeFile(join(src, 'x'), 'x');
    await pushDirectory(src, store, 'acme', 'a', { xattrs: false });
    const objects = new ObjectStore(store, 'acme');
    const data = Buffer.from('garbage that a seal is about to reuse');
    const other = Buffer.from('plain garbage');
    await objects.putBlock(hashBuffer(data), data);
    await objects.putBlock(hashBuffer(other), other);
    await backdate(join(storeDir, 'acme'), 2 * DAY);
    const hooked = new HookedStore(store, { beforeList: { match: /^acme\/meta\/$/, run: () => objects.putBlock(hashBuffer(data), data) } });
    const r = await gcOrg(hooked, 'acme', { graceMs: DAY, keep: 20, dryRun: false, fence: NOW });
    assert.equal(r.refreshed, 1);
    assert.equal(r.deletedObjects, 1);
    assert.ok(existsSync(join(storeDir, blockKey('acme', hashBuffer(data)))), 'rewritten during gc: kept');
    assert.equal(existsSync(join(storeDir, blockKey('acme', hashBuffer(other)))), false);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('gc: a push pack is kept while its snapshot is retained, deleted after; it keeps no block alive; one it cannot decode is left alone', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-gc-pp-'));
  try {
    const storeDir = join(work, 'store');
    const store = await new FileStore(storeDir).init();
    const src = join(work, 'src');
    await mkdir(src);
    await writeFile(join(src, 'old.txt'), 'only in generation 0\n');
    await writeFile(join(src, 'kept.txt'), 'in both generations\n');
    const gen0 = await pushDirectory(src, store, 'acme', 'a', { xattrs: false, pushPack: true });
    assert.equal(gen0.pushPack?.blocks, 2);
    await rm(join(src, 'old.txt'));
    const gen1 = await pushDirectory(src, store, 'acme', 'a', { xattrs: false, pushPack: false }); // the pack stays gen 0's
    const pack = join(storeDir, pushPackKey('acme', 'a'));
    const age = async (): Promise<void> => {
      await backdate(join(storeDir, 'acme'), 2 * DAY);
      const t = new Date(Date.now() - 2 * DAY);
      await utimes(pack, t, t);
    };
    await age();

    const both = await gcOrg(store, 'acme', { graceMs: DAY, keep: 2, dryRun: false, fence: NOW });
    assert.equal(both.pushPacksDeleted, 0, 'generation 0 is retained: its pack may still serve a pull of it');
    assert.ok(existsSync(pack));
    const dry = await gcOrg(store, 'acme', { graceMs: DAY, keep: 1, dryRun: true });
    assert.equal(dry.pushPacksDeleted, 1);
    assert.ok(existsSync(pack), 'a dry run deletes nothing');
    const r = await gcOrg(store, 'acme', { graceMs: DAY, keep: 1, dryRun: false, fence: NOW });
    assert.equal(r.pushPacksDeleted, 1);
    assert.equal(existsSync(pack), false, 'generation 0 pruned: its pack is gone');
    assert.equal(existsSync(blockFile(storeDir, 'only in generation 0\n')), false, 'the pack kept no block alive');
    const pulled = await pullSnapshot(store, 'acme', gen1.snapshot, join(work, 'out'), { home: 'a', xattrs: false, pushPack: true });
    assert.equal(pulled.files, 1);

    // A pack of HEAD stays; a pack this homefs cannot decode is left alone and does not stop gc.
    await pushDirectory(src, store, 'acme', 'a', { xattrs: false, pushPack: true });
    await pushDirectory(src, store, 'acme', 'b', { xattrs: false });
    await writeFile(join(storeDir, pushPackKey('acme', 'b')), 'HFPP\x09 from a newer homefs');
    await age();
    const t = new Date(Date.now() - 2 * DAY);
    await utimes(join(storeDir, pushPackKey('acme', 'b')), t, t);
    const last = await gcOrg(store, 'acme', { graceMs: DAY, keep: 1, dryRun: false, fence: NOW });
    assert.equal(last.pushPacksDeleted, 0);
    assert.ok(existsSync(pack) && existsSync(join(storeDir, pushPackKey('acme', 'b'))));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('gc: an unfinished upload under the homes (a push pack of a push that died) is aborted once older than the grace period', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-gc-up-'));
  try {
    const store = new MemoryStore();
    await writeFile(join(work, 'a.txt'), 'a\n');
    await pushDirectory(work, store, 'acme', 'a', { xattrs: false });
    const id = await store.uploads.start(pushPackKey('acme', 'a'));
    await store.uploads.part(pushPackKey('acme', 'a'), id, 2, Buffer.alloc(10));
    await store.uploads.start('other/homes/a/PUSHPACK'); // another org's: not this gc's
    const young = await gcOrg(store, 'acme', { graceMs: DAY, keep: 1, dryRun: false, fence: NOW });
    assert.equal(young.uploadsAborted, 0, 'within the grace period: a push may still be streaming it');
    const dry = await gcOrg(store, 'acme', { graceMs: 0, keep: 1, dryRun: true });
    assert.equal(dry.uploadsAborted, 1);
    assert.equal(store.uploadsPending, 2, 'a dry run aborts nothing');
    const r = await gcOrg(store, 'acme', { graceMs: 0, keep: 1, dryRun: false, fence: NOW });
    assert.equal(r.uploadsAborted, 1);
    assert.deepEqual((await store.uploads.list('')).map((u) => u.key), ['other/homes/a/PUSHPACK']);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

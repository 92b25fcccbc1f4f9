/**
 * Directory loads held in memory (inodes/loads.ts, journal.ts `inMemoryLoad`): a load writes nothing to
 * the journal; a change writes, in its own batch, the loads it stands on, those above first; a directory
 * whose own load is still held is written as unloaded. Closing the journal drops what is held, as a kill -9
 * would, so reopening it shows what a restart finds on disk.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Journal } from '../src/inodes/journal.js';
import { MemoryLoads } from '../src/inodes/loads.js';
import { ROOT_INO } from '../src/inodes/types.js';
import { HomeView, type TreeSource } from '../src/inodes/view.js';
import type { Tree, TreeEntry } from '../src/model/tree.js';

const T = (c: string): string => c.repeat(64);
const ent = (name: string, kind: 'file' | 'dir', tree?: string): TreeEntry => ({
  name, kind, mode: kind === 'dir' ? 0o755 : 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n,
  ...(kind === 'dir' ? { tree } : { blocks: [] }),
});
// root: a/ (x, y), b/ (z), f
const trees = new Map<string, Tree>([
  [T('0'), { entries: [ent('a', 'dir', T('a')), ent('b', 'dir', T('b')), ent('f', 'file')] }],
  [T('a'), { entries: [ent('x', 'file'), ent('y', 'file')] }],
  [T('b'), { entries: [ent('z', 'file')] }],
]);
const source: TreeSource = {
  getTree: (h) => Promise.resolve(trees.get(h) ?? { entries: [] }),
  prefetchTrees: () => undefined,
};

async function withView(fn: (open: () => HomeView) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-loads-'));
  try {
    await fn(() => new HomeView(new Journal(join(dir, 'journal')), source));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function loadAll(v: HomeView): Promise<{ a: number; b: number }> {
  v.initRoot(T('0'), {}, 0, 0);
  v.journal.commit();
  await v.ensureLoaded(ROOT_INO);
  const a = v.lookup(ROOT_INO, 'a')?.ino ?? 0;
  const b = v.lookup(ROOT_INO, 'b')?.ino ?? 0;
  await v.ensureLoaded(a);
  await v.ensureLoaded(b);
  return { a, b };
}

test('held loads come out parents first; a record needs the loads of the directories it is in, a dirent also its own', () => {
  // 1 (root) holds 10 and 11; 10 holds 100; 100 is also linked from 11.
  const parents = new Map<number, number[]>([[1, []], [10, [1]], [11, [1]], [100, [10]]]);
  const l = new MemoryLoads((ino) => parents.get(ino) ?? []);
  for (const dir of [1, 10, 11]) l.record(dir, () => undefined);
  assert.deepEqual(l.takeFor(10, false).map((x) => x.dir), [1], 'the record of 10 stands on the root load only');
  assert.ok(l.holds(10) && l.holds(11) && !l.holds(1));
  assert.deepEqual(l.takeFor(100, false).map((x) => x.dir), [10]);
  assert.deepEqual(l.takeFor(11, true).map((x) => x.dir), [11]);
  assert.equal(l.size, 0);
  for (const dir of [1, 10, 11]) l.record(dir, () => undefined);
  parents.set(100, [10, 11]);
  assert.deepEqual(l.takeFor(100, false).map((x) => x.dir), [1, 10, 11], 'the chains above every name, top first');
  l.record(10, () => l.linked(7, 100));
  assert.equal(l.linkIno(7), 100);
  l.takeFor(10, true);
  assert.equal(l.linkIno(7), undefined, 'a taken load no longer answers for its links');
});

test('loading writes nothing; closing drops the loads and the directories read as unloaded again', async () => {
  await withView(async (open) => {
    let v = open();
    await loadAll(v);
    assert.equal(v.journal.pending, false, 'no journal write for three loads');
    assert.equal(v.journal.heldLoads, 3);
    assert.deepEqual(v.list(ROOT_INO).map(([n]) => n), ['a', 'b', 'f']);
    await v.journal.close();
    v = open();
    assert.equal(v.get(ROOT_INO).loaded, false);
    assert.equal(v.journal.children(ROOT_INO).size, 0);
    await v.ensureLoaded(ROOT_INO);
    assert.deepEqual(v.list(ROOT_INO).map(([n]) => n), ['a', 'b', 'f']);
    await v.journal.close();
  });
});

test('a change below loads writes them with it; a sibling whose load is still held is written unloaded', async () => {
  await withView(async (open) => {
    let v = open();
    const { a, b } = await loadAll(v);
    const x = v.lookup(a, 'x')?.ino ?? 0;
    const before = { x, y: v.lookup(a, 'y')?.ino, f: v.lookup(ROOT_INO, 'f')?.ino };
    v.setMeta(x, { mode: 0o600 });
    assert.equal(v.journal.heldLoads, 1, 'root and a written; b still held');
    v.create(a, 'new', { kind: 'file', mode: 0o644, uid: 0, gid: 0 });
    v.setMeta(b, { mode: 0o700 });
    assert.equal(v.journal.heldLoads, 1, "b's own load stays held after a change of its record");
    await v.journal.close();
    v = open();
    assert.equal(v.get(ROOT_INO).loaded, true);
    assert.equal(v.get(a).loaded, true);
    assert.deepEqual(v.list(a).map(([n]) => n), ['new', 'x', 'y']);
    assert.deepEqual({ x: v.lookup(a, 'x')?.ino, y: v.lookup(a, 'y')?.ino, f: v.lookup(ROOT_INO, 'f')?.ino }, before, 'same numbers');
    assert.equal(v.get(x).mode, 0o600);
    const bRec = v.get(b);
    assert.equal(bRec.loaded, false, 'b reads as unloaded');
    assert.equal(bRec.mode, 0o700, 'with the mode it was given');
    await v.ensureLoaded(b);
    assert.deepEqual(v.list(b).map(([n]) => n), ['z']);
    await v.journal.close();
  });
});

test('a rename out of a held load and a removal in one write both loads', async () => {
  await withView(async (open) => {
    let v = open();
    const { a, b } = await loadAll(v);
    v.rename(a, 'x', b, 'moved', 0);
    v.remove(b, 'z', false);
    assert.equal(v.journal.heldLoads, 0);
    await v.journal.close();
    v = open();
    assert.deepEqual(v.list(a).map(([n]) => n), ['y']);
    assert.deepEqual(v.list(b).map(([n]) => n), ['moved']);
    await v.journal.close();
  });
});

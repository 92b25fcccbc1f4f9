/**
 * Dropping unchanged directory loads from memory (inodes/trim.ts `drop`, journal.ts `dropHeldLoad`): a dropped
 * directory reads as unloaded and loads again with the same inode numbers; a load goes only when nothing
 * below it is loaded or in use and nothing in it changed; the trimmer drops the oldest first, bottom up,
 * down to 90 % of its budget, and asks the kernel to drop the names that hold the rest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Journal } from '../src/inodes/journal.js';
import { LoadTrimmer } from '../src/inodes/trim.js';
import { ROOT_INO } from '../src/inodes/types.js';
import { HomeView, type TreeSource } from '../src/inodes/view.js';
import type { Tree, TreeEntry } from '../src/model/tree.js';

const T = (c: string): string => c.repeat(64);
const ent = (name: string, kind: 'file' | 'dir', extra: Partial<TreeEntry> = {}): TreeEntry => ({
  name, kind, mode: kind === 'dir' ? 0o755 : 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n,
  ...(kind === 'dir' ? {} : { blocks: [] }), ...extra,
});
// root: a/ (x, y, s/ (w)), b/ (z), c/ (h1, h2: one hard-linked file), f
const trees = new Map<string, Tree>([
  [T('0'), { entries: [ent('a', 'dir', { tree: T('a') }), ent('b', 'dir', { tree: T('b') }), ent('c', 'dir', { tree: T('c') }), ent('f', 'file')] }],
  [T('a'), { entries: [ent('s', 'dir', { tree: T('5') }), ent('x', 'file'), ent('y', 'file')] }],
  [T('5'), { entries: [ent('w', 'file')] }],
  [T('b'), { entries: [ent('z', 'file')] }],
  [T('c'), { entries: [ent('h1', 'file', { link: 7 }), ent('h2', 'file', { link: 7 })] }],
]);
const source: TreeSource = {
  getTree: (h) => Promise.resolve(trees.get(h) ?? { entries: [] }),
  prefetchTrees: () => undefined,
};

async function withView(fn: (open: () => HomeView) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-trim-'));
  try {
    await fn(() => new HomeView(new Journal(join(dir, 'journal')), source));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Loads every directory; returns their numbers. */
async function loadAll(v: HomeView): Promise<Record<'a' | 'b' | 'c' | 's', number>> {
  v.initRoot(T('0'), {}, 0, 0);
  v.journal.commit();
  await v.ensureLoaded(ROOT_INO);
  const ino = (p: number, n: string): number => v.lookup(p, n)?.ino ?? 0;
  const [a, b, c] = [ino(ROOT_INO, 'a'), ino(ROOT_INO, 'b'), ino(ROOT_INO, 'c')];
  await v.ensureLoaded(a);
  const s = ino(a, 's');
  for (const d of [s, b, c]) await v.ensureLoaded(d);
  return { a, b, c, s };
}

const idle = (): boolean => false;

/** One try at dropping the held load of `dir` (LoadTrimmer.drop), with `inUse` saying what the kernel holds. */
function dropLoad(v: HomeView, dir: number, inUse: (ino: number) => boolean): string {
  const t = new LoadTrimmer(v.journal, { maxRecords: 1, minAgeMs: 0, scan: 1, delayMs: 0 }, {
    inUse, pinned: () => false, invalidate: () => undefined, standing: () => new Set(),
  });
  return t.drop(dir);
}

test('a dropped load reads as unloaded and comes back with the same numbers; bottom up only', async () => {
  await withView(async (open) => {
    const v = open();
    const { a, s } = await loadAll(v);
    const before = { x: v.lookup(a, 'x')?.ino, y: v.lookup(a, 'y')?.ino, w: v.lookup(s, 'w')?.ino };
    const records = v.journal.memoryCounts().records;
    assert.equal(dropLoad(v, a, idle), 'blocked', 'a/s is loaded');
    assert.equal(dropLoad(v, s, idle), 'dropped');
    assert.equal(v.journal.get(before.w ?? 0), undefined, "w's record left memory");
    assert.equal(v.get(s).loaded, false);
    assert.equal(dropLoad(v, a, idle), 'dropped');
    assert.equal(v.journal.memoryCounts().records, records - 4, 'x, y, s and w');
    assert.equal(v.journal.pending, false, 'dropping writes nothing');
    await v.ensureLoaded(a);
    await v.ensureLoaded(v.lookup(a, 's')?.ino ?? 0);
    assert.deepEqual({ x: v.lookup(a, 'x')?.ino, y: v.lookup(a, 'y')?.ino, w: v.lookup(s, 'w')?.ino }, before);
    assert.equal(v.lookup(a, 's')?.ino, s);
    await v.journal.close();
  });
});

test('a load stays while an entry is in use, after a change in it, with hard links, or while its directory changed', async () => {
  await withView(async (open) => {
    let v = open();
    const { a, b, c, s } = await loadAll(v);
    const w = v.lookup(s, 'w')?.ino ?? 0;
    assert.equal(dropLoad(v, s, (ino) => ino === w), 'blocked');
    assert.equal(dropLoad(v, c, idle), 'kept', 'hard-link ids registered');
    v.setMeta(v.lookup(b, 'z')?.ino ?? 0, { mode: 0o600 });
    assert.equal(dropLoad(v, b, idle), 'none', 'the change wrote the load: it is no longer held');
    v.setMeta(s, { mode: 0o700 });
    assert.equal(dropLoad(v, s, idle), 'kept', 'its directory changed since the last seal');
    assert.equal(dropLoad(v, ROOT_INO, idle), 'none');
    assert.equal(dropLoad(v, a, idle), 'none', 'the change of s wrote the load of a');
    await v.journal.close();
    v = open();
    assert.equal(v.get(v.lookup(b, 'z')?.ino ?? 0).mode, 0o600);
    assert.equal(v.get(s).mode, 0o700);
    await v.ensureLoaded(s);
    assert.deepEqual(v.list(s).map(([n]) => n), ['w']);
    await v.journal.close();
  });
});

test('a change after a drop and reload is kept across a restart', async () => {
  await withView(async (open) => {
    let v = open();
    const { a, s } = await loadAll(v);
    assert.equal(dropLoad(v, s, idle), 'dropped');
    assert.equal(dropLoad(v, a, idle), 'dropped');
    await v.ensureLoaded(a);
    v.create(a, 'new', { kind: 'file', mode: 0o644, uid: 0, gid: 0 });
    await v.journal.close();
    v = open();
    assert.deepEqual(v.list(a).map(([n]) => n), ['new', 's', 'x', 'y']);
    await v.journal.close();
  });
});

test('the trimmer drops the oldest loads bottom up to 90 % of its budget and asks the kernel to drop what holds the rest', async () => {
  await withView(async (open) => {
    const v = open();
    const { a, b, s } = await loadAll(v);
    const total = v.journal.memoryCounts().records; // root, a, b, c, f, s, x, y, w, z, h1 (h2 shares it)
    assert.equal(total, 11);
    const inUse = new Set<number>([v.lookup(b, 'z')?.ino ?? 0]);
    const asked: Array<[number, string]> = [];
    const pinned = new Set<number>();
    let standing: Set<number> | undefined;
    const t = new LoadTrimmer(v.journal, { maxRecords: 6, minAgeMs: 0, scan: 100, delayMs: 0 }, {
      inUse: (ino) => inUse.has(ino), pinned: (dir) => pinned.has(dir), invalidate: (p, n) => void asked.push([p, n]),
      standing: () => standing,
    });
    t.trim(Date.now());
    // Oldest first: root (blocked by its loaded directories; it would ask for its entries in use: none), a
    // (blocked by s), s (goes, and a right after it), b (z is in use), c (hard links: kept).
    assert.equal(t.dropped, 2);
    assert.equal(v.journal.get(s), undefined, "s's record went with a's load");
    assert.equal(v.journal.get(a)?.loaded, false);
    assert.equal(v.journal.memoryCounts().records, 7);
    assert.deepEqual(asked, [], 'no directory name is dropped while nobody knows where processes stand');
    standing = new Set([ROOT_INO, b]);
    t.trim(Date.now());
    assert.deepEqual(asked, [], 'nor the name of one a process stands in');
    standing = new Set([ROOT_INO]);
    t.trim(Date.now());
    assert.deepEqual(asked, [[ROOT_INO, 'b']], 'b is blocked by z, which the kernel holds: it is asked to drop b');
    t.trim(Date.now());
    assert.equal(asked.length, 1, 'not asked again until the kernel looks b up again');
    t.referenced(b);
    t.trim(Date.now());
    assert.deepEqual(asked, [[ROOT_INO, 'b'], [ROOT_INO, 'b']]);
    inUse.clear();
    pinned.add(b);
    t.trim(Date.now());
    assert.equal(v.journal.get(b)?.loaded, true, 'a directory being listed keeps its load');
    pinned.clear();
    t.trim(Date.now());
    assert.equal(v.journal.get(b)?.loaded, false);
    assert.ok(v.journal.memoryCounts().records <= 6);
    t.close();
    await v.journal.close();
  });
});

test('loads younger than the minimum age stay', async () => {
  await withView(async (open) => {
    const v = open();
    await loadAll(v);
    const t = new LoadTrimmer(v.journal, { maxRecords: 2, minAgeMs: 60_000, scan: 100, delayMs: 0 }, {
      inUse: () => false, pinned: () => false, invalidate: () => undefined, standing: () => new Set(),
    });
    t.trim(Date.now());
    assert.equal(t.dropped, 0);
    t.trim(Date.now() + 61_000);
    assert.ok(t.dropped > 0);
    t.close();
    await v.journal.close();
  });
});

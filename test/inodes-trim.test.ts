/**
 * Dropping unchanged directory loads from memory (inodes/trim.ts `drop`, journal.ts `dropHeldLoad`): a dropped
 * directory reads as unloaded and loads again with the same inode numbers; a load goes only when nothing
 * below it is loaded or open and nothing in it changed; the trimmer drops the oldest first, bottom up,
 * down to 90 % of its budget. Entries the kernel holds do not keep their load: a request about one
 * brings its records back (view.ts `restore`), and the kernel's forget lets it go.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Journal } from '../src/inodes/journal.js';
import { LoadTrimmer } from '../src/inodes/trim.js';
import { Xattrs } from '../src/inodes/xattrs.js';
import { ROOT_INO } from '../src/inodes/types.js';
import { HomeView, NeedsLoad, type TreeSource } from '../src/inodes/view.js';
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

/** One try at dropping the held load of `dir` (LoadTrimmer.drop), with `inUse` saying what is open. */
function dropLoad(v: HomeView, dir: number, inUse: (ino: number) => boolean): string {
  const t = new LoadTrimmer(v.journal, { maxRecords: 1, minAgeMs: 0, scan: 1, delayMs: 0 }, {
    inUse, pinned: () => false, dropping: () => undefined,
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

test('the trimmer drops the oldest loads bottom up to 90 % of its budget; open entries and listings keep theirs', async () => {
  await withView(async (open) => {
    const v = open();
    const { a, b, s } = await loadAll(v);
    const total = v.journal.memoryCounts().records; // root, a, b, c, f, s, x, y, w, z, h1 (h2 shares it)
    assert.equal(total, 11);
    const inUse = new Set<number>([v.lookup(b, 'z')?.ino ?? 0]);
    const pinned = new Set<number>();
    const t = new LoadTrimmer(v.journal, { maxRecords: 6, minAgeMs: 0, scan: 100, delayMs: 0 }, {
      inUse: (ino) => inUse.has(ino), pinned: (dir) => pinned.has(dir), dropping: () => undefined,
    });
    t.trim(Date.now());
    // Oldest first: root (blocked by its loaded directories), a (blocked by s), s (goes, and a right after
    // it), b (z is open), c (hard links: kept).
    assert.equal(t.dropped, 2);
    assert.equal(v.journal.get(s), undefined, "s's record went with a's load");
    assert.equal(v.journal.get(a)?.loaded, false);
    assert.equal(v.journal.memoryCounts().records, 7);
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

test('entries the kernel holds leave memory with their load and come back on the first request about them', async () => {
  await withView(async (open) => {
    const v = open();
    const { a, s } = await loadAll(v);
    const [x, w] = [v.lookup(a, 'x')?.ino ?? 0, v.lookup(s, 'w')?.ino ?? 0];
    for (const ino of [a, s, x, w]) v.ref(ino); // the kernel was told of them (a walk, a stat)
    const t = v.startTrimming({ maxRecords: 1, minAgeMs: 0, scan: 100, delayMs: 0 }, { pinned: () => false });
    t.trim(Date.now());
    assert.equal(v.journal.get(w), undefined, 'w went though the kernel holds it');
    assert.equal(v.journal.get(s), undefined, 's went with the load of a');
    assert.equal(v.trimCounts.remembered, 3, 'x, s and w: s is held, and holds w');
    assert.equal(v.attrs(s).mode, 0o755, "a directory's attributes are at hand");
    assert.equal(v.journal.get(s), undefined, 'without bringing it back');
    assert.throws(() => v.attrs(w), NeedsLoad, 'a file is brought back for them');
    assert.throws(() => new Xattrs(v.journal, (ino) => v.get(ino)).list(x), NeedsLoad, 'and for its extended attributes');
    assert.throws(() => v.get(w), NeedsLoad, 'a request about w brings it back before it is answered');
    assert.throws(() => v.get(987_654_321), /ENOENT|no inode/, 'a number nobody holds is no inode');
    await v.ensureLoaded(w);
    assert.equal(v.get(w).ino, w, 'w is back with the same number, through s');
    assert.equal(v.lookup(s, 'w')?.ino, w);
    assert.equal(v.get(s).loaded, true);
    assert.equal(v.trimCounts.remembered, 0, 'the loads of a and s brought x back too');
    t.trim(Date.now());
    assert.equal(v.trimCounts.remembered, 3, 'dropped again');
    v.forget(x, 1);
    assert.equal(v.trimCounts.remembered, 2, "the kernel's forget lets x go");
    assert.throws(() => v.get(x), /ENOENT|no inode/);
    v.stopTrimming();
    await v.journal.close();
  });
});

test('a remembered directory stays while the kernel holds something below it, and goes with the last of it', async () => {
  await withView(async (open) => {
    const v = open();
    const { a, s } = await loadAll(v);
    const w = v.lookup(s, 'w')?.ino ?? 0;
    v.ref(w); // the kernel holds w (and, as far as the daemon knows, not s)
    const t = v.startTrimming({ maxRecords: 1, minAgeMs: 0, scan: 100, delayMs: 0 }, { pinned: () => false });
    t.trim(Date.now());
    assert.equal(v.journal.get(a)?.loaded, false);
    assert.equal(v.trimCounts.remembered, 2, 'w, and s, which w is in');
    v.forget(w, 1);
    assert.equal(v.trimCounts.remembered, 0, 's goes with w');
    v.stopTrimming();
    await v.journal.close();
  });
});

test('loads younger than the minimum age stay', async () => {
  await withView(async (open) => {
    const v = open();
    await loadAll(v);
    const t = new LoadTrimmer(v.journal, { maxRecords: 2, minAgeMs: 60_000, scan: 100, delayMs: 0 }, {
      inUse: () => false, pinned: () => false, dropping: () => undefined,
    });
    t.trim(Date.now());
    assert.equal(t.dropped, 0);
    t.trim(Date.now() + 61_000);
    assert.ok(t.dropped > 0);
    t.close();
    await v.journal.close();
  });
});

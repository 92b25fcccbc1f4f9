/**
 * What an fsync's log segment may leave out (src/seal/omission.ts), on a real journal, content layer and
 * seal over a memory store, with write-behind off so nothing is stored: fresh names beyond the budget
 * are left out, never what was fsync'd, never a durable name, never a hard-linked file; a fresh directory
 * goes only when all of it did; an fsync'd directory keeps every entry; names a landed segment held are
 * durable for the next one; after a seal nothing it held is fresh.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROOT_INO, type Inode } from '../src/inodes/types.js';
import { Omissions } from '../src/seal/omission.js';
import { seal, sealToLog, type LogResult } from '../src/seal/seal.js';
import { decodeSnapshot, decodeTree } from '../src/format/codec.js';
import { decodeSegment, segmentObjects } from '../src/fsynclog/homelog.js';
import { logKey, metaKey } from '../src/store/keys.js';
import type { Tree } from '../src/model/tree.js';
import { writeBehindEnv, type Env } from './support/writebehind-env.js';

const KB = 1024;

interface OEnv extends Env {
  om: Omissions;
  /** A segment with these fsync'd inodes and this budget for fresh bytes. */
  segment: (fsynced: number[], freshBytes: number) => Promise<LogResult>;
  /** The entries' names of the directory at `path` in the segment's snapshot (null: absent). */
  names: (r: LogResult, path: string[]) => Promise<string[] | null>;
  mkdir: (parent: number, name: string) => number;
  file: (parent: number, name: string, bytes: number) => Promise<number>;
}

async function omissionEnv(): Promise<OEnv> {
  const e = writeBehindEnv();
  e.content.onChanged = () => undefined; // write-behind stores nothing: every fresh byte counts against the budget
  const om = new Omissions((ino) => e.j.get(ino)?.parents ?? []);
  e.view.onCreated = (ino) => om.created(ino);
  e.view.onNamed = (ino, dirs, link) => om.named(ino, dirs, link);
  const deps = e.deps;
  e.deps = () => ({ ...deps(), omissions: om });
  await seal(e.deps(), 'sync'); // a HEAD for the log to follow
  let seq = 0;
  const segment = async (fsynced: number[], freshBytes: number): Promise<LogResult> => {
    const gen = e.j.base().gen ?? 0;
    const r = await sealToLog(e.deps(), { gen, seq: seq++, writer: 'w', fsynced: { inodes: new Set(fsynced), freshBytes } }, 'fsync', 1 << 24);
    assert.ok(r, 'something changed');
    return r;
  };
  const names = async (r: LogResult, path: string[]): Promise<string[] | null> => {
    const gen = e.j.base().gen ?? 0;
    const objs = new Map<string, Buffer>();
    for (let s = 0; s <= r.seq; s++) {
      const buf = await e.mem.get(logKey('acme', 'h', gen, s)).catch(() => null);
      if (buf) for (const [k, v] of segmentObjects('acme', decodeSegment(buf, { home: 'acme/h', gen, seq: s }))) objs.set(k, v);
    }
    const get = async (hash: string): Promise<Buffer> => objs.get(metaKey('acme', hash)) ?? e.mem.get(metaKey('acme', hash));
    let tree: Tree = decodeTree(await get(decodeSnapshot(await get(r.snapshot)).root));
    for (const p of path) {
      const next = tree.entries.find((x) => x.name === p);
      if (!next?.tree) return null;
      tree = decodeTree(await get(next.tree));
    }
    return tree.entries.map((x) => x.name).sort();
  };
  const mkdir = (parent: number, name: string): number => e.view.create(parent, name, { kind: 'dir', mode: 0o755, uid: 0, gid: 0 }).ino;
  const file = async (parent: number, name: string, bytes: number): Promise<number> => {
    const ino = e.view.create(parent, name, { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
    await e.content.write(ino, 0, Buffer.alloc(bytes, name));
    return ino;
  };
  return { ...e, om, segment, names, mkdir, file };
}

test('fresh files beyond the budget are left out; the fsync’d file and the fresh directory’s name are held', async () => {
  const e = await omissionEnv();
  try {
    const pkg = e.mkdir(ROOT_INO, 'pkg');
    for (const n of ['a', 'b', 'c', 'd']) await e.file(pkg, n, 3 * KB);
    const note = await e.file(ROOT_INO, 'note', 10 * KB);
    const r = await e.segment([note], 7 * KB);
    assert.equal(r.omitted, 2, 'two of the four fresh files fit 7 KiB');
    assert.deepEqual(await e.names(r, []), ['note', 'pkg'], 'the fsync’d file (over the budget) and the fresh directory in a durable one');
    assert.equal((await e.names(r, ['pkg']))?.length, 2);
    const whole = await e.segment([], 1 << 20);
    assert.equal(whole.omitted, 0, 'with room, the next segment holds everything');
    assert.deepEqual(await e.names(whole, ['pkg']), ['a', 'b', 'c', 'd']);
  } finally {
    await e.close();
  }
});

test('a fresh directory goes only when everything in it did; an empty one stays', async () => {
  const e = await omissionEnv();
  try {
    const top = e.mkdir(ROOT_INO, 'top');
    e.mkdir(top, 'empty'); // (walked before the budget is spent)
    const deep = e.mkdir(top, 'deep');
    await e.file(deep, 'big', 8 * KB);
    const kept = e.mkdir(top, 'kept');
    const fsyncd = await e.file(kept, 'fsyncd', 8 * KB);
    const r = await e.segment([fsyncd], 1 * KB);
    assert.deepEqual(await e.names(r, ['top']), ['empty', 'kept'], 'deep (all of it left out) is gone; kept holds the fsync’d file');
    assert.deepEqual(await e.names(r, ['top', 'kept']), ['fsyncd']);
  } finally {
    await e.close();
  }
});

test('an fsync’d directory keeps every entry; a directory that gets a hard link or a durable file is walked and held', async () => {
  const e = await omissionEnv();
  try {
    await e.file(ROOT_INO, 'old', 10);
    await seal(e.deps(), 'sync'); // 'old' is durable now
    const d = e.mkdir(ROOT_INO, 'd');
    const inner = e.mkdir(d, 'inner');
    for (const n of ['x', 'y']) await e.file(inner, n, 4 * KB);
    const r = await e.segment([inner], 0);
    assert.deepEqual(await e.names(r, ['d', 'inner']), ['x', 'y']);
    const t = e.mkdir(d, 't');
    await e.file(t, 'a-big', 4 * KB); // walked first: spends the budget
    const moved = e.mkdir(t, 'moved');
    const linked = e.mkdir(t, 'linked');
    const skipped = e.mkdir(t, 'skipped');
    await e.file(skipped, 'z', 1);
    e.view.rename(ROOT_INO, 'old', moved, 'old', 0);
    const l = await e.file(linked, 'l', 4 * KB);
    e.view.link(l, linked, 'l2');
    const r2 = await e.segment([], 0);
    assert.deepEqual(await e.names(r2, ['d', 't']), ['linked', 'moved'], 'the spent budget leaves a-big and skipped out; the pinned ones are held');
    assert.deepEqual(await e.names(r2, ['d', 't', 'moved']), ['old'], 'the durable file moved into a fresh directory is held');
    assert.deepEqual(await e.names(r2, ['d', 't', 'linked']), ['l', 'l2']);
    assert.equal(r2.omitted, 2);
  } finally {
    await e.close();
  }
});

test('once the budget is spent a fresh directory is left out without a walk, unless an fsync’d file is below it', async () => {
  const e = await omissionEnv();
  try {
    const t = e.mkdir(ROOT_INO, 't');
    await e.file(t, 'a-big', 4 * KB);
    const deep = e.mkdir(e.mkdir(t, 'b'), 'deep');
    const note = await e.file(deep, 'note', 1);
    const c = e.mkdir(t, 'c');
    await e.file(e.mkdir(c, 'cc'), 'z', 1);
    const r = await e.segment([note], 0);
    assert.deepEqual(await e.names(r, ['t']), ['b']);
    assert.deepEqual(await e.names(r, ['t', 'b', 'deep']), ['note']);
    assert.equal(r.omitted, 2, 'a-big, and c as one entry (not walked)');
  } finally {
    await e.close();
  }
});

test('names a landed segment held are durable: a fresh file renamed over one is held; a seal ends every omission there', async () => {
  const e = await omissionEnv();
  try {
    const pkg = e.mkdir(ROOT_INO, 'pkg');
    await e.file(pkg, 'index', 2 * KB);
    const first = await e.segment([], 4 * KB);
    assert.equal(first.omitted, 0);
    await e.file(pkg, 'tmp', 8 * KB);
    await e.file(pkg, 'new', 8 * KB);
    e.view.rename(pkg, 'tmp', pkg, 'index', 0);
    const r = await e.segment([], 0);
    assert.deepEqual(await e.names(r, ['pkg']), ['index'], 'the replacement of a held name is held; the fresh name is left out');
    assert.equal(r.omitted, 1);
    await seal(e.deps(), 'sync');
    await e.file(pkg, 'after', 8 * KB);
    const s = await e.segment([], 0);
    assert.equal(s.omitted, 0, 'a sealed directory’s names are all durable: nothing new in it is left out');
    assert.deepEqual(await e.names(s, ['pkg']), ['after', 'index', 'new']);
  } finally {
    await e.close();
  }
});

test('the rules: only fresh inodes, not fsync’d, in a fresh directory or under a name the last segment did not hold', () => {
  const om = new Omissions(() => []);
  const node = (ino: number, kind: Inode['kind'] = 'file', nlink = 1): Inode => ({ ino, kind, mode: 0o644, uid: 0, gid: 0, size: 10, atimeNs: 0n, mtimeNs: 0n, ctimeNs: 0n, nlink, parents: [] });
  om.created(10);
  om.created(11);
  const w = om.begin(new Set([11]), 100);
  assert.equal(w.mayOmit(ROOT_INO, 'x', node(10)), false, 'a fresh name in a directory of unknown names is held');
  assert.equal(w.mayOmit(10, 'y', node(12)), false, 'an inode that is not fresh is held');
  om.created(12);
  assert.equal(w.mayOmit(10, 'y', node(12)), true, 'a fresh inode in a fresh directory may go');
  assert.equal(w.mayOmit(10, 'y', node(11)), false, 'an fsync’d inode is held');
  assert.equal(w.mayOmit(11, 'y', node(12)), false, 'an entry of an fsync’d directory is held');
  assert.equal(w.mayOmit(10, 'y', node(12, 'file', 2)), false, 'a hard-linked file is held');
  assert.equal(om.begin(null, 100).mayOmit(10, 'y', node(12)), false, 'a walk without rules leaves nothing out');
});

test('a segment walked before a seal that landed after it leaves every name of its directories durable', () => {
  const om = new Omissions(() => []);
  const node = (ino: number): Inode => ({ ino, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 10, atimeNs: 0n, mtimeNs: 0n, ctimeNs: 0n, nlink: 1, parents: [] });
  const early = om.begin(new Set(), 0);
  early.walked(50, [{ name: 'a', ino: 51 }], 0);
  om.sealed(om.begin(null, 0), () => true);
  om.landed(early);
  om.created(60);
  assert.equal(om.begin(new Set(), 100).mayOmit(50, 'b', node(60)), false, 'the seal may hold names the segment did not see');
  const late = om.begin(new Set(), 0);
  late.walked(50, [{ name: 'a', ino: 51 }], 0);
  om.landed(late);
  assert.equal(om.begin(new Set(), 100).mayOmit(50, 'b', node(60)), true, 'a segment walked after the seal tells the names');
});

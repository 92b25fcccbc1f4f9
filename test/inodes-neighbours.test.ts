/**
 * Neighbour prefetch (inodes/neighbours.ts) over a real journal: one cold read in a directory prefetches
 * nothing, the second prefetches the directory's other small uncached files in name order after the one
 * read, within budget and skipping large, cached and multi-block files; two prefetched subdirectories
 * move the prefetch up to their parent's subtree (loaded directories from the journal, unloaded ones
 * from their trees), and each directory is prefetched once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tree, TreeEntry } from '../src/model/tree.js';
import { cleanContent } from '../src/inodes/filestate.js';
import { Journal } from '../src/inodes/journal.js';
import { NeighbourPrefetch } from '../src/inodes/neighbours.js';
import type { Inode } from '../src/inodes/types.js';

const h = (s: string): string => s.padEnd(64, '0');

async function withJournal(fn: (j: Journal) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-neighbours-'));
  const j = new Journal(join(dir, 'journal'));
  try {
    await fn(j);
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function node(ino: number, parent: number, extra: Partial<Inode>): Inode {
  return { ino, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, atimeNs: 1n, mtimeNs: 1n, ctimeNs: 1n, nlink: 1, parents: [parent], ...extra };
}

function addFile(j: Journal, ino: number, parent: number, name: string, hash: string, size: number, blocks = [hash]): void {
  j.put(node(ino, parent, { size, content: cleanContent(blocks, size) }));
  j.setChild(parent, name, ino);
}

function addDir(j: Journal, ino: number, parent: number, name: string, extra: Partial<Inode> = { loaded: true }): void {
  j.put(node(ino, parent, { kind: 'dir', mode: 0o755, nlink: 2, ...extra }));
  j.setChild(parent, name, ino);
}

/** The root: no parent, no name. */
function addRoot(j: Journal): void {
  j.put({ ...node(1, 0, { kind: 'dir', mode: 0o755, nlink: 2, loaded: true }), parents: [] });
}

function fileEntry(name: string, hash: string, size: number): TreeEntry {
  return { name, kind: 'file', mode: 0o644, uid: 0, gid: 0, size, mtimeNs: 1n, ctimeNs: 1n, blocks: [hash] };
}

test('the second cold read in a directory prefetches its other small files, once, in order and within budget', async () => {
  await withJournal(async (j) => {
    addRoot(j);
    addDir(j, 2, 1, 'src');
    addFile(j, 10, 2, 'a', h('a'), 100);
    addFile(j, 11, 2, 'b', h('b'), 100);
    addFile(j, 12, 2, 'c', h('c'), 100);
    addFile(j, 13, 2, 'd', h('d'), 5000); // too big
    addFile(j, 14, 2, 'e', h('e'), 100); // cached
    addFile(j, 15, 2, 'f', h('f'), 100, [h('f'), h('f2')]); // two blocks
    addFile(j, 16, 2, 'g', h('g'), 300);
    addFile(j, 17, 2, 'h', h('h'), 300); // past the budget
    const asked: string[][] = [];
    const nb = new NeighbourPrefetch(j, { prefetch: (hs) => asked.push(hs), size: (x) => (x === h('e') ? 100 : undefined) },
      { getTree: () => Promise.reject(new Error('no trees here')) }, { maxFileBytes: 1000, budgetBytes: 600, subtreeBudgetBytes: 0 });
    assert.equal(nb.wants(1000), true);
    assert.equal(nb.wants(1001), false);
    nb.coldRead(11);
    assert.deepEqual(asked, [], 'one cold read is not a scan');
    nb.coldRead(10);
    assert.deepEqual(asked, [[h('b'), h('c'), h('g')]], 'after a, in name order, within 600 bytes');
    nb.coldRead(12);
    nb.coldRead(16);
    assert.equal(asked.length, 1, 'each directory once');
  });
});

test('two prefetched subdirectories move the prefetch up to their parent\'s subtree, loaded or not', async () => {
  await withJournal(async (j) => {
    addRoot(j);
    addDir(j, 2, 1, 'repo');
    addDir(j, 3, 2, 'a');
    addDir(j, 4, 2, 'b');
    addDir(j, 5, 2, 'c');
    addDir(j, 6, 2, 'd', { loaded: false, tree: h('t1') });
    addDir(j, 7, 1, 'other');
    for (const [dir, base] of [[3, 20], [4, 30], [5, 40]] as const) {
      for (let i = 0; i < 3; i++) addFile(j, base + i, dir, `f${i}`, h(`${dir}${i}`), 10);
    }
    addFile(j, 50, 7, 'x', h('x'), 10);
    const trees = new Map<string, Tree>([
      [h('t1'), { entries: [fileEntry('y', h('y'), 10), { name: 'z', kind: 'dir', mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n, tree: h('t2') }] }],
      [h('t2'), { entries: [fileEntry('w', h('w'), 10)] }],
    ]);
    const asked: string[] = [];
    const cached = new Set<string>(); // what the reader read is cached by the time the next read comes
    const nb = new NeighbourPrefetch(j, { prefetch: (hs) => asked.push(...hs), size: (x) => (cached.has(x) ? 10 : undefined) },
      { getTree: async (x) => trees.get(x) ?? Promise.reject(new Error(`no tree ${x}`)) }, { maxFileBytes: 100, budgetBytes: 1000, subtreeBudgetBytes: 1000 });
    const read = (ino: number, hash: string): void => {
      nb.coldRead(ino);
      cached.add(h(hash));
    };
    read(20, '30');
    read(21, '31');
    assert.deepEqual(asked, [h('32')], 'a/ prefetched its last file');
    read(30, '40');
    read(31, '41');
    await new Promise((r) => setTimeout(r, 10)); // the subtree's trees are read asynchronously
    assert.deepEqual(asked, [h('32'), h('42'), h('50'), h('51'), h('52'), h('y'), h('w')],
      'b/ prefetched its last file, then repo/ the rest of its subtree depth first in name order: c/ from the journal, d/ from its trees');
    assert.ok(!asked.includes(h('x')), 'nothing outside repo/');
  });
});

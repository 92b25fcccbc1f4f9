/**
 * The file content state machine (inodes/filestate.ts): which blocks a write or truncate marks dirty and
 * local, what a seal reuses, the illegal "seal a clean file" transition, a small new file held inline, and a journal written by the
 * previous version (separate blocks/sealedSize/local/dirty fields) opening as the same states.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BLOCK_SIZE } from '../src/hash/blake3.js';
import {
  canInline, changed, cleanContent, ContentStateError, copiedUp, emptyContent, hasUpper, inlined, isLocal, sealPlan, sealed,
  spilled, type DirtyContent,
} from '../src/inodes/filestate.js';
import { Journal } from '../src/inodes/journal.js';
import type { Inode } from '../src/inodes/types.js';

const MiB = 1024 * 1024;
const h = (c: string): string => c.repeat(64);

test('a small file is dirty as a whole; sealing returns it to copied with the new blocks', () => {
  const c0 = cleanContent([h('a')], 100);
  assert.equal(isLocal(c0, 0), false, 'a clean file reads from the store');
  const c1 = copiedUp(c0, 'all');
  assert.equal(c1.state, 'copied');
  const c2 = changed(c1, 10, 20, 100);
  assert.deepEqual([c2.state, c2.dirty, c2.local], ['dirty', 'all', 'all']);
  assert.deepEqual(sealPlan(c2, 100), [{ index: 0, offset: 0, length: 100 }]);
  const c3 = sealed(c2, [h('b')], 100);
  assert.deepEqual(c3, { state: 'copied', sealed: { blocks: [h('b')], size: 100 }, local: 'all' });
  assert.throws(() => sealed(c3, [h('c')], 100), ContentStateError, 'sealing a file with no changes is a bug');
});

test('a large file copies up and dirties only the 4 MiB blocks a write touches; the seal reuses the rest', () => {
  const blocks = [h('a'), h('b'), h('c'), h('d'), h('e')];
  const size = 18 * MiB; // 5 blocks, the last 2 MiB
  const c1 = copiedUp(cleanContent(blocks, size), [2]);
  const c2 = changed(c1, 2 * BLOCK_SIZE + 5, 2 * BLOCK_SIZE + 10, size);
  assert.deepEqual([c2.dirty, c2.local], [[2], [2]]);
  const c3 = changed(copiedUp(c2, [4]), 4 * BLOCK_SIZE, 4 * BLOCK_SIZE + 1, size);
  assert.deepEqual([c3.dirty, c3.local], [[2, 4], [2, 4]]);
  const plan = sealPlan(c3, size);
  assert.deepEqual(plan.map((b) => b.reuse ?? `read ${b.offset}+${b.length}`), [
    h('a'), h('b'), `read ${2 * BLOCK_SIZE}+${BLOCK_SIZE}`, h('d'), `read ${4 * BLOCK_SIZE}+${2 * MiB}`,
  ]);
  assert.equal(isLocal(c3, 1), false);
  assert.equal(isLocal(c3, 4), true);
});

test('growing a file past its sealed end reads the new blocks back; shrinking below 8 MiB rewrites it whole', () => {
  const c: DirtyContent = changed(copiedUp(cleanContent([h('a'), h('b'), h('c')], 10 * MiB), []), 10 * MiB, 13 * MiB, 13 * MiB);
  assert.deepEqual(sealPlan(c, 13 * MiB).map((b) => b.reuse ?? 'read'), [h('a'), h('b'), 'read', 'read']);
  const small = changed(c, 5 * MiB, 13 * MiB, 5 * MiB);
  assert.equal(small.dirty, 'all');
  assert.deepEqual(sealPlan(small, 5 * MiB), [{ index: 0, offset: 0, length: 5 * MiB }]);
  const fresh = changed(emptyContent(), 0, 3, 3);
  assert.deepEqual([fresh.state, fresh.dirty, fresh.local], ['dirty', 'all', [0]]);
});

test('a journal written with the earlier content fields opens as the same states', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-filestate-'));
  try {
    const base = { kind: 'file' as const, mode: 0o644, uid: 0, gid: 0, atimeNs: 1n, mtimeNs: 1n, ctimeNs: 1n, nlink: 1, parents: [1] };
    const legacy: Array<Record<string, unknown>> = [
      { ...base, ino: 2, size: 5, blocks: [h('a')], sealedSize: 5 },
      { ...base, ino: 3, size: 5, blocks: [h('a')], sealedSize: 5, local: 'all' },
      { ...base, ino: 4, size: 9, blocks: [h('a')], sealedSize: 5, local: 'all', dirty: 'all' },
      { ...base, ino: 5, size: 20 * MiB, blocks: [], sealedSize: 20 * MiB, local: [1, 3], dirty: [3] },
    ];
    let j = new Journal(dir);
    for (const r of legacy) j.put(r as unknown as Inode);
    await j.close();
    j = new Journal(dir);
    assert.deepEqual(j.get(2)?.content, { state: 'clean', sealed: { blocks: [h('a')], size: 5 } });
    assert.deepEqual(j.get(3)?.content, { state: 'copied', sealed: { blocks: [h('a')], size: 5 }, local: 'all' });
    assert.deepEqual(j.get(4)?.content, { state: 'dirty', sealed: { blocks: [h('a')], size: 5 }, local: 'all', dirty: 'all' });
    assert.deepEqual(j.get(5)?.content, { state: 'dirty', sealed: { blocks: [], size: 20 * MiB }, local: [1, 3], dirty: [3] });
    assert.equal('blocks' in (j.get(5) ?? {}), false, 'the earlier fields are gone from the upgraded record');
    await j.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('only a file with nothing sealed holds its bytes inline; it spills to an upper file whole before any upper-file change', () => {
  assert.equal(canInline(emptyContent()), true);
  assert.equal(canInline(cleanContent([h('a')], 100)), false, 'a sealed file copies up instead');
  assert.throws(() => inlined(cleanContent([h('a')], 100), Buffer.from('x')), ContentStateError);
  const c = inlined(emptyContent(), Buffer.from('abc'));
  assert.deepEqual([c.state, hasUpper(c), isLocal(c, 0)], ['inline', false, false]);
  assert.deepEqual(sealPlan(c, 3), [{ index: 0, offset: 0, length: 3 }]);
  assert.throws(() => changed(c, 0, 1, 3), ContentStateError, 'an upper-file change needs the spill first');
  assert.throws(() => copiedUp(c, 'all'), ContentStateError);
  assert.throws(() => sealed(c, [h('b')], 3), ContentStateError, 'sealed bytes are not kept inline');
  assert.deepEqual(sealed(inlined(emptyContent(), Buffer.alloc(0)), [], 0), emptyContent(), 'an empty file seals clean');
  const d = spilled(c);
  assert.deepEqual([d.state, d.local, d.dirty], ['dirty', 'all', 'all']);
  assert.deepEqual(sealed(d, [h('b')], 3), { state: 'copied', sealed: { blocks: [h('b')], size: 3 }, local: 'all' });
});

/**
 * How the journal hands out inode numbers (model/inos.ts): a recorded number while it is free, a derived or
 * counter one otherwise; created-range numbers for new files that never repeat, also across a restart; and
 * which numbers it handed out itself (an unlinked inline file of such a number has no upper file to remove).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Journal, stableIno } from '../src/inodes/journal.js';
import type { Inode } from '../src/inodes/types.js';
import { CREATED_INO_BASE, DERIVED_INO_BASE, PUSHED_INO_BASE } from '../src/model/inos.js';

function file(ino: number): Inode {
  return { ino, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, atimeNs: 0n, mtimeNs: 0n, ctimeNs: 0n, nlink: 1, parents: [1] };
}

test('a recorded number is served while free; taken, the entry falls back to its derived number, then the counter', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-inos-'));
  const j = new Journal(join(dir, 'journal'));
  try {
    const recorded = PUSHED_INO_BASE + 4242;
    assert.equal(j.allocIno('1/a', recorded), recorded);
    j.put(file(recorded));
    const derived = j.allocIno('1/b', recorded);
    assert.equal(derived, stableIno('1/b'), 'taken: the derived number');
    j.put(file(derived));
    const counter = j.allocIno('1/b', recorded);
    assert.ok(counter < DERIVED_INO_BASE, 'both taken: the counter');
    assert.equal(j.allocIno('1/c', 7), stableIno('1/c'), 'a counter-range number is never served as recorded');
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('created numbers never repeat within a journal, across a restart too, and the journal knows them as its own', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-inos-'));
  let j = new Journal(join(dir, 'journal'));
  try {
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++) {
      const n = j.createdIno();
      assert.ok(n >= CREATED_INO_BASE && n < 2 ** 53);
      seen.add(n);
    }
    j.commit();
    await j.close();
    j = new Journal(join(dir, 'journal'));
    for (let i = 0; i < 500; i++) seen.add(j.createdIno());
    assert.equal(seen.size, 1000);
    for (const n of seen) assert.ok(j.handedOut(n), `${n} was handed out here`);
    assert.ok(j.handedOut(5), 'a counter number');
    assert.equal(j.handedOut(PUSHED_INO_BASE + 1), false, 'a pushed number came from a tree');
    assert.equal(j.handedOut(stableIno('1/x')), false, 'a derived number came from a tree');
    const mine = [...seen][0] as number;
    const other = CREATED_INO_BASE + ((mine - CREATED_INO_BASE + 2 ** 50) % 2 ** 51);
    assert.equal(j.handedOut(other), false, 'another journal\'s created number');
    // A created number already in use (a loaded entry recorded it) is not handed out again: the counter is.
    const next = CREATED_INO_BASE + ((mine - CREATED_INO_BASE + 1000) % 2 ** 51);
    j.put(file(next));
    assert.ok(j.createdIno() < DERIVED_INO_BASE);
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

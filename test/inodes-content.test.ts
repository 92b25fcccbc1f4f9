/**
 * The content layer's seal-side transitions on a real journal and upper directory: a large file copies up
 * and seals only the block it changed, and a block a gc deleted after the seal deduplicated against it is
 * restored from the upper file, or, when the file changed there since, only that block is sealed again
 * (the untouched blocks still come from the store, never from the sparse upper file's holes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BLOCK_SIZE, hashBuffer } from '../src/hash/blake3.js';
import { Content, type BlockReader } from '../src/inodes/content.js';
import { cleanContent } from '../src/inodes/filestate.js';
import { Journal } from '../src/inodes/journal.js';
import { UpperFiles } from '../src/inodes/upper.js';

const FILE = 2;

async function withFile(fn: (c: Content, j: Journal, sealed: string[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-content-'));
  const blocks = new Map<string, Buffer>();
  const sealed = [1, 2, 3].map((fill) => {
    const data = Buffer.alloc(BLOCK_SIZE, fill);
    const h = hashBuffer(data);
    blocks.set(h, data);
    return h;
  });
  const reader: BlockReader = {
    read: async (h, off, len) => (blocks.get(h) ?? Buffer.alloc(0)).subarray(off, off + len),
    get: async (h) => blocks.get(h) ?? Buffer.alloc(0),
    prefetch: () => undefined,
    size: (h) => blocks.get(h)?.length,
  };
  const j = new Journal(join(dir, 'journal'));
  try {
    const t = 1n;
    j.put({ ino: FILE, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 3 * BLOCK_SIZE, atimeNs: t, mtimeNs: t, ctimeNs: t, nlink: 1, parents: [1], content: cleanContent(sealed, 3 * BLOCK_SIZE) });
    const c = new Content(j, new UpperFiles(join(dir, 'upper')), reader, { readaheadBlocks: 0, quotaBytes: 0 });
    await fn(c, j, sealed);
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Seals the file, recording every block handed over (by its hash). */
async function sealNow(c: Content): Promise<{ blocks: string[]; handed: string[] }> {
  const handed: string[] = [];
  const r = await c.sealFile(FILE, async (_b, data) => {
    const h = hashBuffer(data);
    handed.push(h);
    return h;
  });
  return { blocks: r.blocks, handed };
}

test('a large file seals only the block a write changed', async () => {
  await withFile(async (c, j, sealed) => {
    await c.write(FILE, BLOCK_SIZE + 10, Buffer.from('changed'));
    assert.deepEqual(j.get(FILE)?.content?.state, 'dirty');
    const { blocks, handed } = await sealNow(c);
    assert.equal(handed.length, 1, 'one block read back and hashed');
    assert.deepEqual([blocks[0], blocks[2]], [sealed[0], sealed[2]]);
    assert.notEqual(blocks[1], sealed[1]);
    assert.equal(j.get(FILE)?.content?.state, 'copied');
  });
});

test('a deduplicated block a gc deleted is restored from the upper file when its bytes are unchanged', async () => {
  await withFile(async (c, j) => {
    await c.write(FILE, BLOCK_SIZE + 10, Buffer.from('changed'));
    const { blocks } = await sealNow(c);
    let stored: string | undefined;
    const ok = await c.restoreBlock(FILE, BLOCK_SIZE, BLOCK_SIZE, async (data) => {
      stored = hashBuffer(data);
      return stored === blocks[1];
    });
    assert.equal(ok, true);
    assert.equal(stored, blocks[1]);
    assert.equal(j.get(FILE)?.content?.state, 'copied', 'nothing left to seal');
  });
});

test('when the file changed there since, only that block is sealed again, the rest still from the store', async () => {
  await withFile(async (c, j, sealed) => {
    await c.write(FILE, BLOCK_SIZE + 10, Buffer.from('changed'));
    const first = await sealNow(c);
    const ok = await c.restoreBlock(FILE, BLOCK_SIZE, BLOCK_SIZE, async (data) => hashBuffer(data) === 'f'.repeat(64));
    assert.equal(ok, false, 'the bytes no longer hash to the deleted block');
    const content = j.get(FILE)?.content;
    assert.equal(content?.state, 'dirty');
    assert.deepEqual(content?.state === 'dirty' ? content.dirty : null, [1], 'only the restored block is dirty, never the whole file');
    assert.ok(j.changedSeq(FILE) !== undefined, 'the file is in the change set for the next seal');
    const again = await sealNow(c);
    assert.deepEqual(again.blocks, [sealed[0], first.blocks[1], sealed[2]], 'untouched blocks keep their store hashes');
    assert.equal(again.handed.length, 1);
  });
});

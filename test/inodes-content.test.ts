/**
 * The content layer's seal-side transitions on a real journal and upper directory: a large file copies up
 * and seals only the block it changed, and a block a gc deleted after the seal deduplicated against it is
 * restored from the upper file, or, when the file changed there since, only that block is sealed again
 * (the untouched blocks still come from the store, never from the sparse upper file's holes). A new file
 * that stays small holds its bytes in its journal record, with no upper file, until it outgrows the
 * inline limit or is sealed. A seal's uploads do not hold the file's lock: it is recorded as sealed once they
 * landed, unless it changed since the capture.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BLOCK_SIZE, hashBuffer } from '../src/hash/blake3.js';
import { Content, INLINE_MAX, type BlockReader } from '../src/inodes/content.js';
import { cleanContent } from '../src/inodes/filestate.js';
import { Journal } from '../src/inodes/journal.js';
import { UpperFiles } from '../src/inodes/upper.js';

const FILE = 2;

async function withFile(fn: (c: Content, j: Journal, sealed: string[], dir: string) => Promise<void>): Promise<void> {
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
    await fn(c, j, sealed, dir);
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Seals the file, recording every block handed over (by its hash). */
async function sealNow(c: Content): Promise<{ blocks: string[]; handed: string[] }> {
  const handed: string[] = [];
  const r = await c.sealFile(FILE, async (_b, bytes) => {
    const h = hashBuffer(await bytes());
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

test("a seal's uploads do not hold the file: a write meanwhile goes through, and the file then stays dirty", async () => {
  await withFile(async (c, j) => {
    await c.write(FILE, BLOCK_SIZE + 10, Buffer.from('changed'));
    let land: () => void = () => undefined;
    const uploading = new Promise<void>((r) => (land = r));
    let captured = false;
    const sealing = c.sealFile(FILE, async (_b, bytes) => hashBuffer(await bytes()), {
      captured: () => {
        captured = true;
      },
      landed: () => uploading,
    });
    while (!captured) await new Promise((r) => setImmediate(r));
    // The upload has not landed: a write to the file must not wait for it (it would hang here if it did).
    await c.write(FILE, 10, Buffer.from('after the capture'));
    land();
    await sealing;
    assert.equal(j.get(FILE)?.content?.state, 'dirty', 'changed since the capture: not recorded as sealed');
    const again = await sealNow(c);
    assert.equal(again.handed.length, 2, 'the next seal captures both changed blocks');
  });
});

test('a file unchanged while its upload ran is recorded as sealed once it landed, not before', async () => {
  await withFile(async (c, j) => {
    await c.write(FILE, BLOCK_SIZE + 10, Buffer.from('changed'));
    let land: () => void = () => undefined;
    const uploading = new Promise<void>((r) => (land = r));
    const sealing = c.sealFile(FILE, async (_b, bytes) => hashBuffer(await bytes()), { landed: () => uploading });
    await c.settle(FILE); // the capture is done and the lock free
    assert.equal(j.get(FILE)?.content?.state, 'dirty', 'not sealed before its blocks landed');
    land();
    await sealing;
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

const NEW = 3;

/** `withFile`, plus a new empty file NEW (as create makes it) and the path its upper file would have. */
async function withNewFile(fn: (c: Content, j: Journal, upperPath: string, dir: string) => Promise<void>): Promise<void> {
  await withFile(async (c, j, _sealed, dir) => {
    const t = 1n;
    j.put({ ino: NEW, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, atimeNs: t, mtimeNs: t, ctimeNs: t, nlink: 1, parents: [1], content: cleanContent([], 0) });
    await fn(c, j, join(dir, 'upper', String(NEW)), dir);
  });
}

test('a small new file is held inline in its journal record, with no upper file, and reads back', async () => {
  await withNewFile(async (c, j, upperPath, dir) => {
    await c.write(NEW, 0, Buffer.from('hello world'));
    await c.truncate(NEW, 20);
    await c.write(NEW, 5, Buffer.from('_'));
    assert.equal(j.get(NEW)?.content?.state, 'inline');
    assert.equal(j.get(NEW)?.size, 20);
    assert.equal(existsSync(upperPath), false, 'no upper file');
    assert.deepEqual(await c.read(NEW, 0, 100), Buffer.concat([Buffer.from('hello_world'), Buffer.alloc(9)]));
    // The bytes are in the committed record: a fresh journal on the same directory reads them.
    j.commit();
    const again = new Journal(join(dir, 'journal'));
    try {
      const rec = again.get(NEW)?.content;
      assert.equal(rec?.state, 'inline');
      assert.deepEqual(Buffer.from(rec?.state === 'inline' ? rec.data : []).subarray(0, 11).toString(), 'hello_world');
    } finally {
      await again.close();
    }
  });
});

test('an inline file that grows past the limit spills into an upper file with every byte', async () => {
  await withNewFile(async (c, j, upperPath) => {
    await c.write(NEW, 0, Buffer.from('head'));
    const tail = Buffer.alloc(INLINE_MAX, 7);
    await c.write(NEW, 10, tail);
    assert.equal(j.get(NEW)?.content?.state, 'dirty');
    const want = Buffer.concat([Buffer.from('head'), Buffer.alloc(6), tail]);
    assert.deepEqual(readFileSync(upperPath), want);
    assert.deepEqual(await c.read(NEW, 0, want.length + 10), want);
  });
});

test('sealing an inline file hands over its bytes, then keeps them in an upper file (an empty one: clean)', async () => {
  await withNewFile(async (c, j, upperPath) => {
    await c.write(NEW, 0, Buffer.from('small'));
    const handed: Buffer[] = [];
    const r = await c.sealFile(NEW, async (_b, bytes) => {
      const data = await bytes();
      handed.push(data);
      return hashBuffer(data);
    });
    assert.deepEqual(handed.map(String), ['small']);
    assert.deepEqual(r.blocks, [hashBuffer(Buffer.from('small'))]);
    assert.equal(j.get(NEW)?.content?.state, 'copied');
    assert.equal(readFileSync(upperPath, 'utf8'), 'small');
    assert.equal(String(await c.read(NEW, 0, 10)), 'small');
    await c.truncate(NEW, 0);
    await c.sealFile(NEW, async (_b, bytes) => hashBuffer(await bytes()));
    assert.equal(j.get(NEW)?.content?.state, 'copied', 'a file that had an upper file keeps it');
  });
  await withNewFile(async (c, j, upperPath) => {
    await c.truncate(NEW, 1);
    await c.truncate(NEW, 0);
    assert.equal(j.get(NEW)?.content?.state, 'inline');
    const r = await c.sealFile(NEW, async () => assert.fail('an empty file has no block'));
    assert.deepEqual(r.blocks, []);
    assert.equal(j.get(NEW)?.content?.state, 'clean');
    assert.equal(existsSync(upperPath), false);
  });
});

test('a file sealed empty and truncated past 8 MiB reads its zeros in one upper read, not one per byte', async () => {
  await withNewFile(async (c, j) => {
    j.put({ ...(j.get(NEW) as NonNullable<ReturnType<Journal['get']>>), content: cleanContent([], 0) });
    const upper = (c as unknown as { upper: UpperFiles }).upper;
    let upperReads = 0;
    const read = upper.read.bind(upper);
    upper.read = (ino, offset, length) => (upperReads++, read(ino, offset, length));
    await c.truncate(NEW, 9 * 1024 * 1024);
    assert.deepEqual(await c.read(NEW, 0, 64 * 1024), Buffer.alloc(64 * 1024));
    assert.ok(upperReads <= 1, `${upperReads} reads of the upper file for one read of 64 KiB`);
  });
});

test('writes to other bytes of a file in its upper file land together: every byte, the furthest end, all dirty', async () => {
  await withNewFile(async (c, j) => {
    await c.write(NEW, 0, Buffer.alloc(INLINE_MAX + 1, 1)); // spilled: wholly in its upper file from now on
    const chunk = (i: number): Buffer => Buffer.alloc(256 * 1024, 10 + i);
    // Issued at once, out of order, none awaited before the next: the last one ends furthest.
    const order = [3, 0, 2, 5, 1, 4];
    const n = await Promise.all(order.map((i) => c.write(NEW, INLINE_MAX + 1 + i * chunk(i).length, chunk(i))));
    assert.deepEqual(n, order.map((i) => chunk(i).length));
    const size = INLINE_MAX + 1 + 6 * 256 * 1024;
    assert.equal(j.get(NEW)?.size, size);
    assert.equal(c.usedBytes, size, 'the home counts each byte once');
    const want = Buffer.concat([Buffer.alloc(INLINE_MAX + 1, 1), ...[0, 1, 2, 3, 4, 5].map(chunk)]);
    assert.ok((await c.read(NEW, 0, size)).equals(want));
    const handed: Buffer[] = [];
    await c.sealFile(NEW, async (_b, bytes) => {
      const data = await bytes();
      handed.push(Buffer.from(data));
      return hashBuffer(data);
    });
    assert.ok(Buffer.concat(handed).equals(want), 'the seal hands over every byte written');
  });
});

test('a block hashed early is sealed by its hash, read again only on demand; a write to it drops the hash', async () => {
  await withNewFile(async (c, j) => {
    const block = (i: number): Buffer => Buffer.alloc(BLOCK_SIZE, 40 + i);
    for (let i = 0; i < 3; i++) await c.write(NEW, i * BLOCK_SIZE, block(i)); // 12 MiB: three 4 MiB blocks
    const hash = async (data: Buffer): Promise<{ hash: string; data: Buffer }> => ({ hash: hashBuffer(data), data });
    assert.equal((await c.hashEarly(NEW, 0, hash))?.hash, hashBuffer(block(0)));
    assert.equal((await c.hashEarly(NEW, 1, hash))?.hash, hashBuffer(block(1)));
    assert.equal(await c.hashEarly(NEW, 1, hash), undefined, 'hashed once');
    assert.equal(await c.hashEarly(NEW, 3, hash), undefined, 'no such whole block');
    await c.write(NEW, BLOCK_SIZE + 5, Buffer.from('x')); // block 1 changes after its early hash
    const seen: Array<{ index: number; known?: string; read: boolean }> = [];
    const r = await c.sealFile(NEW, async (b, bytes, known) => {
      const s: { index: number; known?: string; read: boolean } = { index: b.index, read: false, ...(known ? { known } : {}) };
      seen.push(s);
      if (known) return known;
      s.read = true;
      return hashBuffer(await bytes());
    });
    const b1 = block(1);
    b1.write('x', 5);
    assert.deepEqual(r.blocks, [hashBuffer(block(0)), hashBuffer(b1), hashBuffer(block(2))]);
    assert.deepEqual(seen.sort((a, b) => a.index - b.index), [
      { index: 0, known: hashBuffer(block(0)), read: false },
      { index: 1, read: true },
      { index: 2, read: true },
    ]);
    assert.equal(j.get(NEW)?.content?.state, 'copied');
    assert.equal(await c.hashEarly(NEW, 2, hash), undefined, 'a sealed block is not dirty: nothing to hash');
  });
});

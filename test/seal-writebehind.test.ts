/**
 * Write-behind (src/seal/writebehind.ts) on a real journal, content layer and seal over a memory store:
 * a quiet file's blocks go up and it is recorded as stored; a file rewritten while its upload is in
 * flight is not; a deleted file's pending upload is dropped; identical blocks go up once; a seal after
 * write-behind uploads no block again and its snapshot holds the bytes; a log segment references stored
 * blocks; a gc announced after the tag makes a segment refuse the tag and the seal check and upload again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashBuffer } from '../src/hash/blake3.js';
import { storedOf } from '../src/inodes/filestate.js';
import { ROOT_INO } from '../src/inodes/types.js';
import { LogUnsafeError, seal, sealToLog } from '../src/seal/seal.js';
import { decodeTree } from '../src/format/codec.js';
import { blockKey, gcEpochKey, metaKey } from '../src/store/keys.js';
import { newFile, writeBehindEnv, type Env } from './support/writebehind-env.js';

const blockPuts = (e: Env): string[] => e.puts.filter((k) => k.includes('/blocks/'));

test('a quiet file goes up in the background and is recorded as stored; identical blocks go up once', async () => {
  const e = writeBehindEnv();
  try {
    const a = await newFile(e, 'a', 'same bytes');
    const b = await newFile(e, 'b', 'same bytes');
    const c = await newFile(e, 'c', 'other bytes');
    await e.wb.idle();
    for (const ino of [a, b, c]) assert.deepEqual(storedOf(e.j.get(ino)?.content)?.epoch, null, `inode ${ino} is stored`);
    assert.equal(blockPuts(e).length, 2, 'one upload per distinct block');
    assert.equal(e.wb.blocksUploaded, 2);
    assert.equal(storedOf(e.j.get(a)?.content)?.blocks[0], hashBuffer(Buffer.from('same bytes')));
    assert.deepEqual(e.wb.backlog(), { files: 0, bytes: 0, oldest: null });
  } finally {
    await e.close();
  }
});

test('a file rewritten while its upload is in flight is not recorded as stored; its new bytes go up after', async () => {
  const e = writeBehindEnv();
  try {
    e.gate.hold = true;
    const a = await newFile(e, 'a', 'first');
    while (e.gate.waiting.length === 0) await new Promise((r) => setTimeout(r, 1));
    await e.content.write(a, 0, Buffer.from('second'));
    e.gate.hold = false;
    e.gate.waiting.splice(0).forEach((f) => f());
    await e.wb.idle();
    const stored = storedOf(e.j.get(a)?.content);
    assert.equal(stored?.blocks[0], hashBuffer(Buffer.from('second')), 'the stored record is of the bytes the file holds');
    assert.equal(blockPuts(e).length, 2);
  } finally {
    await e.close();
  }
});

test("a deleted file's pending upload is dropped", async () => {
  const e = writeBehindEnv();
  try {
    const ino = e.view.create(ROOT_INO, 'gone', { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
    await e.content.write(ino, 0, Buffer.from('deleted before it was quiet'));
    e.view.remove(ROOT_INO, 'gone', false);
    await e.wb.idle();
    assert.equal(blockPuts(e).length, 0, 'nothing of the deleted file went up');
  } finally {
    await e.close();
  }
});

test('a seal after write-behind uploads no block again, and its snapshot holds the bytes', async () => {
  const e = writeBehindEnv();
  try {
    const a = await newFile(e, 'a', 'note');
    await e.wb.idle();
    e.puts.length = 0;
    const r = await seal(e.deps(), 'sync');
    assert.ok(r);
    assert.deepEqual(blockPuts(e), [], 'the block was not uploaded again');
    const rootHash = e.j.get(ROOT_INO)?.tree ?? '';
    const root = decodeTree(await e.mem.get(metaKey('acme', rootHash)), rootHash);
    assert.deepEqual(root.entries.find((x) => x.name === 'a')?.blocks, [hashBuffer(Buffer.from('note'))]);
    assert.equal(e.j.get(a)?.content?.state, 'copied');
  } finally {
    await e.close();
  }
});

test('a log segment references stored blocks instead of carrying them, once the fence confirms their epoch', async () => {
  const e = writeBehindEnv();
  try {
    await seal(e.deps(), 'sync'); // a HEAD for the log to follow
    await newFile(e, 'a', 'referenced, not inline');
    await e.wb.idle();
    const hash = hashBuffer(Buffer.from('referenced, not inline'));
    const base = e.j.base();
    const r = await sealToLog(e.deps(), { gen: base.gen ?? 0, seq: 0, writer: 'w' }, 'fsync', 1 << 20);
    assert.ok(r);
    assert.ok(!r.keys.includes(blockKey('acme', hash)), 'the block is not in the segment');
    assert.ok(r.keys.some((k) => k.includes('/meta/')), 'its trees and snapshot are');
  } finally {
    await e.close();
  }
});

test('a gc announced after the tag: a log segment refuses the tag, the seal checks and uploads again', async () => {
  const e = writeBehindEnv();
  try {
    await seal(e.deps(), 'sync');
    await newFile(e, 'a', 'tagged under no epoch');
    await e.wb.idle();
    const hash = hashBuffer(Buffer.from('tagged under no epoch'));
    // A gc announces epoch 0, deletes the (unreferenced) block, and ends.
    await e.mem.put(gcEpochKey('acme', 0), Buffer.from(JSON.stringify({ v: 1, epoch: 0, host: 't', pid: 1, startedMs: Date.now(), waitMs: 1 })));
    await e.mem.delete(blockKey('acme', hash));
    await e.mem.put(`${gcEpochKey('acme', 0)}.done`, Buffer.from('{}'));
    assert.equal((await e.objects.missingBlocks([hash])).size, 1, 'the gc took the block');
    const base = e.j.base();
    await assert.rejects(sealToLog(e.deps(), { gen: base.gen ?? 0, seq: 0, writer: 'w' }, 'fsync', 1 << 20), LogUnsafeError);
    await seal(e.deps(), 'sync');
    assert.equal((await e.objects.missingBlocks([hash])).size, 0, 'the seal uploaded the block again');
  } finally {
    await e.close();
  }
});

/**
 * hashBuffer gives BLAKE3-256's reference digests. HashPool: worker-thread hashes (the binding's Buffer digest)
 * equal the inline ones (its string digest, recoded), the bytes come back intact (transferred, or copied for
 * views into a larger buffer), small buffers stay inline, and a closed pool refuses work.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { hashBuffer } from '../src/hash/blake3.js';
import { HashPool } from '../src/hash/pool.js';

test('hashBuffer: the reference digests, for a Buffer and for a view of another array', () => {
  assert.equal(hashBuffer(Buffer.alloc(0)), 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
  assert.equal(hashBuffer(Buffer.from('abc')), '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
  const u = new Uint8Array([0, 97, 98, 99, 0]).subarray(1, 4);
  assert.equal(hashBuffer(u), '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
});

test('worker hashes equal inline hashes and the bytes come back', async () => {
  const pool = new HashPool({ threads: 2, inlineBelow: 1024 });
  try {
    const inputs = [Buffer.alloc(0), randomBytes(100), Buffer.from(randomBytes(4 * 1024 * 1024)), Buffer.allocUnsafeSlow(1 << 20).fill(7)];
    const big = randomBytes(3 * 1024 * 1024);
    inputs.push(big.subarray(1000, 1000 + 2 * 1024 * 1024)); // a view: copied, the parent stays usable
    const expected = inputs.map((b) => ({ hash: hashBuffer(b), bytes: Buffer.from(b) }));
    const results = await Promise.all(inputs.map((b) => pool.hash(b)));
    results.forEach((r, i) => {
      assert.equal(r.hash, expected[i]?.hash, `input ${i}`);
      assert.ok(r.data.equals(expected[i]?.bytes as Buffer), `input ${i} bytes intact`);
    });
    assert.equal(big.length, 3 * 1024 * 1024, 'a view is copied, its parent buffer is not detached');
    const owned = Buffer.allocUnsafeSlow(2 << 20).fill(1);
    const r = await pool.hash(owned);
    assert.equal(owned.length, 0, 'a buffer that owns its memory is transferred (detached meanwhile)');
    assert.equal(r.data.length, 2 << 20);
    assert.equal(r.hash, hashBuffer(Buffer.alloc(2 << 20, 1)));
  } finally {
    await pool.close();
  }
  await assert.rejects(pool.hash(Buffer.alloc(1 << 20)), /closed/);
});

test('many concurrent blocks spread over the workers', async () => {
  const pool = new HashPool({ threads: 3, inlineBelow: 0 });
  try {
    const blocks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(256 * 1024, i));
    const want = blocks.map((b) => hashBuffer(b));
    const got = await Promise.all(blocks.map((b) => pool.hash(b)));
    assert.deepEqual(got.map((g) => g.hash), want);
  } finally {
    await pool.close();
  }
});

test('a buffer over a SharedArrayBuffer is read in place: nothing detached, the same buffer comes back', async () => {
  const pool = new HashPool({ threads: 1, inlineBelow: 1024 });
  try {
    const shared = Buffer.from(new SharedArrayBuffer(3 << 20));
    randomBytes(3 << 20).copy(shared);
    const view = shared.subarray(1 << 20); // a view at an offset is read in place too
    const want = [hashBuffer(Buffer.from(shared)), hashBuffer(Buffer.from(view))];
    const [a, b] = await Promise.all([pool.hash(shared), pool.hash(view)]);
    assert.deepEqual([a?.hash, b?.hash], want);
    assert.equal(a?.data, shared, 'the caller gets its own buffer back');
    assert.equal(b?.data, view);
    assert.equal(shared.length, 3 << 20, 'not detached');
  } finally {
    await pool.close();
  }
});

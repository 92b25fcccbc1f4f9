/**
 * HEAD generations on the memory store: first generation, advancing, history order, a retry that finds
 * its own record, a lost race recorded under conflicts/, malformed records, and commitSnapshot's hook.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commitSnapshot } from '../src/format/commit.js';
import { advanceHead, listHistory, readHead } from '../src/format/heads.js';
import { GcFence } from '../src/format/gcfence.js';
import { ObjectStore } from '../src/format/objects.js';
import { headKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import { FormatError, HeadConflictError } from '../src/util/errors.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);

test('generations advance, the newest is HEAD, history is newest first', async () => {
  const s = new MemoryStore();
  assert.equal(await readHead(s, 'acme', 'alice'), null);
  assert.equal(await advanceHead(s, 'acme', 'alice', null, A), 0);
  assert.equal(await advanceHead(s, 'acme', 'alice', 0, B), 1);
  for (let g = 1; g < 12; g++) await advanceHead(s, 'acme', 'alice', g, g % 2 ? C : A);
  assert.deepEqual(await readHead(s, 'acme', 'alice'), { gen: 12, snapshot: C });
  const h = await listHistory(s, 'acme', 'alice', 3);
  assert.deepEqual(h.map((r) => r.gen), [12, 11, 10]);
  assert.equal((await listHistory(s, 'acme', 'alice')).length, 13);
  assert.equal(await readHead(s, 'acme', 'bob'), null, 'homes are separate');
});

test('a retry finds its own record; a lost race keeps the snapshot under conflicts/', async () => {
  const s = new MemoryStore();
  await advanceHead(s, 'acme', 'alice', null, A);
  assert.equal(await advanceHead(s, 'acme', 'alice', 0, B), 1);
  assert.equal(await advanceHead(s, 'acme', 'alice', 0, B), 1, 'same snapshot at the same generation: success');
  await assert.rejects(advanceHead(s, 'acme', 'alice', 0, C), (e: unknown) => e instanceof HeadConflictError && e.snapshot === C && /acme\/alice/.test(e.message));
  const conflicts: string[] = [];
  for await (const o of s.list('acme/homes/alice/conflicts/')) conflicts.push((await s.get(o.key)).toString());
  assert.deepEqual(conflicts, [C]);
  assert.deepEqual(await readHead(s, 'acme', 'alice'), { gen: 1, snapshot: B });
});

test('a malformed generation record is a FormatError', async () => {
  const s = new MemoryStore();
  await s.put(headKey('acme', 'alice', 0), Buffer.from('../../etc/passwd'));
  await assert.rejects(readHead(s, 'acme', 'alice'), (e: unknown) => e instanceof FormatError && /does not hold a snapshot id/.test(e.message));
  await assert.rejects(readHead(s, 'Acme', 'alice'), /invalid org name/);
});

test('commitSnapshot writes the snapshot then HEAD under the gc fence; a failed re-verification leaves HEAD alone', async () => {
  const s = new MemoryStore();
  const objects = new ObjectStore(s, 'acme');
  const root = await objects.putTree({ entries: [] });
  const stats = { files: 0, dirs: 0, bytes: 0 };
  const gc = new GcFence(s, 'acme', { waitMs: 0, pollMs: 1 });
  let reverified = 0;
  const fence = { gc, since: await gc.observe(), reverify: async () => void reverified++ };
  const first = await commitSnapshot(objects, 'alice', null, { root, parent: null, stats, reason: 'push', host: 'h1' }, { fence });
  assert.equal(reverified, 0, 'no gc overlapped: nothing to re-verify');
  assert.equal(first.gen, 0);
  assert.deepEqual([first.observed?.epoch, first.observed?.done], [null, true]);
  assert.deepEqual(await readHead(s, 'acme', 'alice'), { gen: 0, snapshot: first.snapshot });
  const snap = await objects.getSnapshot(first.snapshot);
  assert.equal(snap.home, 'acme/alice');
  assert.equal(snap.host, 'h1');
  assert.equal(snap.reason, 'push');

  const since = await gc.observe();
  await gc.endEpoch(await gc.beginEpoch(), {}); // a whole gc runs between the first look and HEAD
  await assert.rejects(
    commitSnapshot(objects, 'alice', 0, { root, parent: first.snapshot, stats, reason: 'sync' }, { fence: { gc, since, reverify: () => Promise.reject(new Error('fenced')) } }),
    /fenced/,
  );
  assert.deepEqual(await readHead(s, 'acme', 'alice'), { gen: 0, snapshot: first.snapshot }, 'HEAD unchanged after an aborted commit');
  await assert.rejects(commitSnapshot(objects, 'alice', null, { root, parent: null, stats, reason: 'push', host: 'h2' }), HeadConflictError);
});

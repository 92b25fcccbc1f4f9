/**
 * ObjectStore.resolveSnapshot on the memory store: a unique prefix resolves, trees sharing the prefix are
 * skipped, and a corrupt object or an unreachable store is reported instead of being taken for "no match".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ObjectStore } from '../src/format/objects.js';
import { metaKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import type { Store } from '../src/store/store.js';
import { CorruptObjectError, StoreUnavailableError, UserError } from '../src/util/errors.js';

async function oneSnapshot(): Promise<{ store: MemoryStore; objects: ObjectStore; id: string }> {
  const store = new MemoryStore();
  const objects = new ObjectStore(store, 'acme');
  const root = await objects.putTree({ entries: [] });
  const id = await objects.putSnapshot({ root, parent: null, home: 'acme/a', time: '2026-01-01T00:00:00.000Z', host: 'h', stats: { files: 0, dirs: 0, bytes: 0 } });
  return { store, objects, id };
}

test('a snapshot prefix resolves; a tree is never a match', async () => {
  const { objects, id } = await oneSnapshot();
  assert.equal(await objects.resolveSnapshot(id.slice(0, 8)), id);
  const tree = await objects.putTree({ entries: [] });
  await assert.rejects(objects.resolveSnapshot(tree.slice(0, 8)), (e: unknown) => e instanceof UserError && /no snapshot/.test(e.message));
});

test('a corrupt snapshot object is reported, not skipped as "no snapshot"', async () => {
  const { store, objects, id } = await oneSnapshot();
  await store.put(metaKey('acme', id), Buffer.from('{"tampered":true}'));
  await assert.rejects(objects.resolveSnapshot(id.slice(0, 8)), CorruptObjectError);
});

test('an unreachable store is reported, not skipped as "no snapshot"', async () => {
  const { store, id } = await oneSnapshot();
  const failing: Store = Object.assign(Object.create(store) as MemoryStore, {
    get: (): Promise<Buffer> => Promise.reject(new StoreUnavailableError(store.url, 'test outage')),
  });
  await assert.rejects(new ObjectStore(failing, 'acme').resolveSnapshot(id.slice(0, 8)), StoreUnavailableError);
});

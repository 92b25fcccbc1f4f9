/** The `file://` store (the embedded default) against the Store conformance suite, in a temp directory; its multipart uploads; parted puts. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { FileStore } from '../src/store/file.js';
import { MemoryStore } from '../src/store/memory.js';
import { PartedPut } from '../src/store/parted.js';
import type { Store } from '../src/store/store.js';
import { NotFoundError } from '../src/util/errors.js';
import { storeConformance } from './support/store-conformance.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

storeConformance('file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-store-file-'));
  dirs.push(dir);
  return new FileStore(join(dir, 'store')).init();
});

test('multipart uploads: parts replace, complete concatenates atomically, list and abort, never listed as keys', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-store-file-'));
  dirs.push(dir);
  const s = await new FileStore(join(dir, 'store')).init();
  const u = s.uploads;
  await s.put('homes/h/PACK', Buffer.from('old'));
  const id = await u.start('homes/h/PACK');
  const e1 = await u.part('homes/h/PACK', id, 1, Buffer.from('first-'));
  await u.part('homes/h/PACK', id, 2, Buffer.from('wrong'));
  const e2 = await u.part('homes/h/PACK', id, 2, Buffer.from('second'));
  assert.deepEqual((await u.list('homes/')).map((p) => p.key), ['homes/h/PACK']);
  assert.equal((await s.get('homes/h/PACK')).toString(), 'old', 'nothing visible before complete');
  const keys: string[] = [];
  for await (const o of s.list('')) keys.push(o.key);
  assert.deepEqual(keys, ['homes/h/PACK'], 'the upload directory is not a key');
  await assert.rejects(u.complete('homes/h/PACK', id, [e1, '2-5']), /part 2 is not the one uploaded/);
  await assert.rejects(u.part('homes/h/OTHER', id, 1, Buffer.from('x')), NotFoundError);
  await u.complete('homes/h/PACK', id, [e1, e2]);
  assert.equal((await s.get('homes/h/PACK')).toString(), 'first-second');
  assert.deepEqual(await u.list(''), []);
  const gone = await u.start('homes/h/X');
  await u.part('homes/h/X', gone, 1, Buffer.from('x'));
  await u.abort('homes/h/X', gone);
  assert.deepEqual(await u.list(''), []);
  await assert.rejects(s.get('homes/h/X'), NotFoundError);
});

test('a parted put holds one part: small objects go in one put, larger ones through an upload', async () => {
  const store = new MemoryStore({ minPartBytes: 4 });
  const small = new PartedPut(store, 'k/small', 8);
  await small.write(Buffer.from('abc'));
  await small.finish();
  assert.equal((await store.get('k/small')).toString(), 'abc');
  const big = new PartedPut(store, 'k/big', 8);
  for (const piece of ['0123456', '789abcdefghij', 'klmno']) await big.write(Buffer.from(piece));
  assert.equal(store.uploadsPending, 1, 'parts went up before finish');
  await big.finish();
  assert.equal((await store.get('k/big')).toString(), '0123456789abcdefghijklmno');
  assert.equal(store.uploadsPending, 0);
  const plain = new PartedPut({ ...store, uploads: undefined, put: (k: string, d: Buffer) => store.put(k, d) } as unknown as Store, 'k/plain', 4);
  await plain.write(Buffer.from('0123456789'));
  await plain.finish();
  assert.equal((await store.get('k/plain')).toString(), '0123456789', 'a store without uploads gets the whole object');
});

/**
 * The Store contract (src/store/store.ts) as one test suite that every backend must pass: the file and
 * memory stores, the S3 store against Ceph, and wrappers. `make` returns a fresh, empty store; the suite
 * deletes what it wrote and closes it at the end. Each test works under its own key prefix, so a failure never cascades.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { NotFoundError } from '../../src/util/errors.js';
import type { ObjectInfo, Store } from '../../src/store/store.js';

export async function collect(it: AsyncIterable<ObjectInfo>): Promise<ObjectInfo[]> {
  const out: ObjectInfo[] = [];
  for await (const o of it) out.push(o);
  return out;
}

/** Every byte value, then random bytes: catches any text conversion on the data path. */
function binary(n: number): Buffer {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  return Buffer.concat([all, randomBytes(Math.max(0, n - 256))]).subarray(0, n);
}

export function storeConformance(name: string, make: () => Promise<Store>): void {
  describe(`Store conformance: ${name}`, () => {
    let store: Store;
    let n = 0;
    /** A fresh key prefix per test. */
    const ns = (): string => `c${n++}-${randomBytes(3).toString('hex')}`;

    before(async () => {
      store = await make();
    });
    after(async () => {
      // leave nothing behind (a long-lived test Ceph keeps objects in RAM)
      for (const o of await collect(store.list(''))) await store.delete(o.key);
      await store.close();
    });

    it('get of a missing key throws NotFoundError naming the key', async () => {
      const key = `${ns()}/missing`;
      await assert.rejects(store.get(key), (e: unknown) => e instanceof NotFoundError && e.key === key);
    });

    it('put then get returns the same bytes (binary, empty, overwrite with the same bytes)', async () => {
      const p = ns();
      const data = binary(70_000);
      await store.put(`${p}/bin`, data);
      assert.ok((await store.get(`${p}/bin`)).equals(data));
      await store.put(`${p}/bin`, data); // idempotent
      assert.ok((await store.get(`${p}/bin`)).equals(data));
      await store.put(`${p}/empty`, Buffer.alloc(0));
      assert.equal((await store.get(`${p}/empty`)).length, 0);
    });

    it('getRange returns the asked bytes, fewer at the end, empty past it; NotFoundError when missing', async () => {
      const key = `${ns()}/r`;
      const data = binary(70_000);
      await store.put(key, data);
      assert.ok((await store.getRange(key, 0, 10)).equals(data.subarray(0, 10)));
      assert.ok((await store.getRange(key, 1000, 30_000)).equals(data.subarray(1000, 31_000)));
      assert.ok((await store.getRange(key, 69_990, 100)).equals(data.subarray(69_990)));
      assert.equal((await store.getRange(key, 70_000, 10)).length, 0);
      assert.equal((await store.getRange(key, 5, 0)).length, 0);
      const missing = `${ns()}/missing`;
      await assert.rejects(store.getRange(missing, 0, 10), (e: unknown) => e instanceof NotFoundError && e.key === missing);
    });

    it('get returns a buffer the caller may modify without changing the store', async () => {
      const key = `${ns()}/k`;
      await store.put(key, Buffer.from('abc'));
      const got = await store.get(key);
      got[0] = 0x7a;
      assert.equal((await store.get(key)).toString(), 'abc');
    });

    it('has returns exactly the existing subset, for many keys at once', async () => {
      const p = ns();
      const present = Array.from({ length: 40 }, (_, i) => `${p}/k${String(i).padStart(2, '0')}`);
      await Promise.all(present.filter((_, i) => i % 2 === 0).map((k) => store.put(k, Buffer.from(k))));
      const found = await store.has(present);
      assert.deepEqual([...found].sort(), present.filter((_, i) => i % 2 === 0));
      assert.equal((await store.has([])).size, 0);
      assert.equal((await store.has([`${p}/nope`])).size, 0);
    });

    it('putIfAbsent creates once; a second call returns false and leaves the first bytes', async () => {
      const key = `${ns()}/heads/0000000000001`;
      assert.equal(await store.putIfAbsent(key, Buffer.from('first')), true);
      assert.equal(await store.putIfAbsent(key, Buffer.from('second')), false);
      assert.equal(await store.putIfAbsent(key, Buffer.from('first')), false);
      assert.equal((await store.get(key)).toString(), 'first');
    });

    it('concurrent putIfAbsent on one key: exactly one winner, whose bytes are stored', async () => {
      const key = `${ns()}/heads/0000000000002`;
      const bodies = Array.from({ length: 8 }, (_, i) => Buffer.from(`writer ${i} ${randomBytes(8).toString('hex')}`));
      const results = await Promise.all(bodies.map((b) => store.putIfAbsent(key, b)));
      assert.equal(results.filter((r) => r).length, 1, `winners: ${JSON.stringify(results)}`);
      const winner = bodies[results.indexOf(true)];
      assert.ok(winner && (await store.get(key)).equals(winner));
    });

    it('list yields keys under a prefix in ascending order, with sizes and times', async () => {
      const p = ns();
      const keys = [`${p}/b/2`, `${p}/a`, `${p}/b/1`, `${p}/c.x`, `${p}/b/10`, `${p}x/other`];
      const t0 = Date.now();
      for (const k of keys) await store.put(k, Buffer.from(k));
      const listed = await collect(store.list(`${p}/`));
      assert.deepEqual(
        listed.map((o) => o.key),
        [`${p}/a`, `${p}/b/1`, `${p}/b/10`, `${p}/b/2`, `${p}/c.x`],
      );
      for (const o of listed) {
        assert.equal(o.size, Buffer.byteLength(o.key));
        // generous: the server's clock may differ a little from ours
        assert.ok(Math.abs(o.mtimeMs - t0) < 10 * 60_000, `mtime ${o.mtimeMs} vs ${t0}`);
      }
      // a prefix that is not a whole path component
      assert.deepEqual((await collect(store.list(`${p}/b/1`))).map((o) => o.key), [`${p}/b/1`, `${p}/b/10`]);
      // the prefix is a string prefix: `${p}` also matches `${p}x/...`
      assert.equal((await collect(store.list(p))).length, 6);
      assert.deepEqual(await collect(store.list(`${p}/none/`)), []);
    });

    it('list honours limit: the first keys in order, then stops', async () => {
      const p = ns();
      const keys = Array.from({ length: 7 }, (_, i) => `${p}/heads/${String(9 - i).padStart(13, '0')}`);
      await Promise.all(keys.map((k) => store.put(k, Buffer.from(k))));
      const sorted = [...keys].sort();
      assert.deepEqual((await collect(store.list(`${p}/heads/`, 1))).map((o) => o.key), sorted.slice(0, 1));
      assert.deepEqual((await collect(store.list(`${p}/heads/`, 3))).map((o) => o.key), sorted.slice(0, 3));
      assert.deepEqual((await collect(store.list(`${p}/heads/`, 100))).map((o) => o.key), sorted);
      assert.deepEqual(await collect(store.list(`${p}/heads/`, 0)), []);
    });

    it('delete removes a key; deleting a missing key is not an error; the key can be created again', async () => {
      const key = `${ns()}/gone`;
      await store.put(key, Buffer.from('x'));
      await store.delete(key);
      await assert.rejects(store.get(key), NotFoundError);
      assert.equal((await store.has([key])).size, 0);
      await store.delete(key);
      await store.delete(`${ns()}/never/existed`);
      assert.equal(await store.putIfAbsent(key, Buffer.from('y')), true);
      assert.equal((await store.get(key)).toString(), 'y');
    });

    it('stores a 10 MiB object intact', async () => {
      const key = `${ns()}/blocks/large`;
      const data = randomBytes(10 * 1024 * 1024);
      await store.put(key, data);
      const got = await store.get(key);
      assert.equal(got.length, data.length);
      assert.ok(got.equals(data));
      const [info] = await collect(store.list(key));
      assert.equal(info?.size, data.length);
    });

    it('has a printable url without credentials', () => {
      assert.equal(typeof store.url, 'string');
      assert.ok(store.url.length > 0);
      assert.doesNotMatch(store.url, /secret|AWS_SECRET|:[^/@]*@/i);
    });
  });
}

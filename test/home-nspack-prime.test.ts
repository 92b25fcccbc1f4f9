/**
 * NsPack (home/nspack.ts) against a memory store: the first range asked for by `primeHead` while a mount is
 * still being set up is the one `load` uses, so loading the pack costs no extra request; a primed range
 * that failed is the load failure it would have been (the walk then fetches trees one by one).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { NsPack, type NsCache } from '../src/home/nspack.js';
import { decodeNsPackIndex } from '../src/snapshot/nspack.js';
import { nsPackKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import { createLogger } from '../src/util/log.js';

const log = createLogger({ level: 'error', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
const fixture = readFileSync(new URL('../../test/fixtures/format/nspack-v1.bin', import.meta.url));
const ROOT = decodeNsPackIndex(fixture).root;

class CountingRanges extends MemoryStore {
  ranges = 0;
  fail = false;
  override async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    this.ranges++;
    if (this.fail) throw new Error('connection reset');
    return super.getRange(key, offset, length);
  }
}

class Trees implements NsCache {
  readonly put = new Set<string>();
  has(_kind: 'meta', hash: string): boolean {
    return this.put.has(hash);
  }
  async get(): Promise<Buffer> {
    throw new Error('not cached');
  }
  putInMemory(_kind: 'meta', hash: string): void {
    this.put.add(hash);
  }
}

test('load uses the primed first range: one request for the whole (small) pack', async () => {
  const store = new CountingRanges();
  await store.put(nsPackKey('acme', 'a'), fixture);
  const cache = new Trees();
  const ns = new NsPack(store, 'acme', 'a', cache, log);
  ns.primeHead();
  assert.equal(store.ranges, 1, 'asked for at once');
  const r = await ns.load(ROOT);
  assert.equal(store.ranges, 1, 'load asked for nothing more');
  assert.equal(r.requests, 1);
  assert.equal(r.fromPack, 3);
  assert.equal(r.sameRoot, true);
  assert.equal(cache.put.size, 3);
});

test('a primed first range that failed: load reports nothing loaded and does not throw', async () => {
  const store = new CountingRanges();
  await store.put(nsPackKey('acme', 'a'), fixture);
  store.fail = true;
  const cache = new Trees();
  const ns = new NsPack(store, 'acme', 'a', cache, log);
  ns.primeHead();
  await new Promise((resolve) => setImmediate(resolve));
  store.fail = false;
  const r = await ns.load(ROOT);
  assert.equal(r.done, true);
  assert.equal(r.found, false);
  assert.equal(cache.put.size, 0);
  assert.equal(store.ranges, 1, 'the failed range was not asked for again');
});

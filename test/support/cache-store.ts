/**
 * Test support for the block cache tests: a Store wrapper that counts GETs per key and can hold, fail or
 * hang them, plus helpers to make content-addressed blocks and temporary cache directories.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { BlockCache } from '../../src/cache/blockcache.js';
import { hashBuffer } from '../../src/hash/blake3.js';
import { blockKey, metaKey } from '../../src/store/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { ForwardingStore } from '../../src/store/forwarding.js';

export const ORG = 'acme';

export class CountingStore extends ForwardingStore {
  declare readonly inner: MemoryStore;
  readonly gets = new Map<string, number>();
  /** Every GET's key, in the order the GETs started. */
  readonly order: string[] = [];
  /** When set, every GET throws it. */
  failWith: Error | undefined;
  /** When set, every GET waits for this promise first. */
  gate: Promise<void> | undefined;
  /** When true, every GET never answers. */
  hang = false;
  /** GETs in progress now, and the most ever in progress at once. */
  inFlight = 0;
  maxInFlight = 0;

  constructor() {
    super(new MemoryStore());
  }

  override get url(): string {
    return 'memory://counting';
  }

  getCount(key?: string): number {
    if (key !== undefined) return this.gets.get(key) ?? 0;
    let n = 0;
    for (const v of this.gets.values()) n += v;
    return n;
  }

  override async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    return (await this.get(key)).subarray(offset, offset + length);
  }

  override async get(key: string): Promise<Buffer> {
    this.gets.set(key, (this.gets.get(key) ?? 0) + 1);
    this.order.push(key);
    if (this.hang) return new Promise<Buffer>(() => undefined);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.gate) await this.gate;
      if (this.failWith) throw this.failWith;
      return await this.inner.get(key);
    } finally {
      this.inFlight--;
    }
  }
}

export interface Obj {
  hash: string;
  data: Buffer;
  key: string;
}

/** A random block of `size` bytes, stored in `store`. */
export async function addBlock(store: CountingStore, size: number): Promise<Obj> {
  const data = randomBytes(size);
  const hash = hashBuffer(data);
  const key = blockKey(ORG, hash);
  await store.inner.put(key, data);
  return { hash, data, key };
}

export async function addMeta(store: CountingStore, size: number): Promise<Obj> {
  const data = randomBytes(size);
  const hash = hashBuffer(data);
  const key = metaKey(ORG, hash);
  await store.inner.put(key, data);
  return { hash, data, key };
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-cache-test-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A promise and the function that resolves it. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A block cache over `store` in `dir` (64 MiB cap), initialised. */
export async function openCache(dir: string, store: CountingStore, extra: Partial<ConstructorParameters<typeof BlockCache>[0]> = {}): Promise<BlockCache> {
  const c = new BlockCache({ dir, store, org: ORG, maxBytes: 64 * 1024 * 1024, ...extra });
  await c.init();
  return c;
}

/** Resolves once `cond()` holds; throws after 5 s naming `what`. */
export async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

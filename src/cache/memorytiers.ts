/**
 * The block cache's memory: two LRUs of the same budget, one for trees and snapshots (`meta/` keys) and one
 * for blocks, so that reading through a large repo never pushes the home's trees out. Trees of a file://
 * store and of the namespace pack live in memory only (blockcache.ts `putInMemory`); evicted, each becomes a
 * file of the cache directory, and the next sleep's hot set reads them back one by one (a 64 MiB LRU shared
 * with blocks sent all 26,137 trees of the full-size home to disk during one `grep -r`).
 *
 * The block tier is smaller: a store on this host's disk has its blocks in the kernel's page cache already,
 * and a remote store's blocks are written to the cache directory as they arrive and read back from the page
 * cache at once, so holding more of them than a reader is about to use only adds to the daemon's RSS.
 */
import { LRUCache } from 'lru-cache';

export class MemoryTiers {
  private readonly meta: LRUCache<string, Buffer>;
  private readonly blocks: LRUCache<string, Buffer>;

  /** `bytes`: the tree tier's budget, and the block tier's unless `blockBytes`; `dispose` is called for every entry that leaves either. */
  constructor(bytes: number, dispose: (data: Buffer, key: string, reason: LRUCache.DisposeReason) => void, blockBytes = bytes) {
    const tier = (max: number): LRUCache<string, Buffer> => new LRUCache<string, Buffer>({ maxSize: Math.max(1, max), sizeCalculation: (b) => Math.max(1, b.length), dispose });
    this.meta = tier(bytes);
    this.blocks = tier(blockBytes);
  }

  private of(key: string): LRUCache<string, Buffer> {
    return key.startsWith('meta/') ? this.meta : this.blocks;
  }

  get(key: string): Buffer | undefined {
    return this.of(key).get(key);
  }

  has(key: string): boolean {
    return this.of(key).has(key);
  }

  set(key: string, data: Buffer): void {
    this.of(key).set(key, data);
  }

  clear(): void {
    this.meta.clear();
    this.blocks.clear();
  }

  /** Bytes held in both tiers. */
  get calculatedSize(): number {
    return this.meta.calculatedSize + this.blocks.calculatedSize;
  }

  /** Entries held in both tiers. */
  get size(): number {
    return this.meta.size + this.blocks.size;
  }
}

/**
 * The block cache's prefetch queue: objects to fetch in the background, first in first out, each started
 * when a background fetch slot is free (fetchslots.ts) and skipped when it got cached or fetched by a
 * reader meanwhile. An entry may carry waiters (`BlockCache.getInBackground`): they get the object's bytes,
 * or the error of its fetch, or a rejection when the queue is cleared (the cache closes).
 */
import type { ObjectKind } from './diskfiles.js';
import type { Release } from './fetchslots.js';

interface Waiter {
  resolve(data: Buffer): void;
  reject(e: unknown): void;
}

interface Queued {
  key: string;
  kind: ObjectKind;
  hash: string;
  waiters: Waiter[];
}

/** What the queue needs from the cache. */
export interface PrefetchHost {
  /** The cache is open (a closed one starts nothing). */
  open(): boolean;
  /** Cached or being fetched already: nothing to start. */
  present(kind: ObjectKind, hash: string): boolean;
  /** A background fetch slot if one is free now. */
  trySlot(): Release | undefined;
  /** Fetches (and caches) the object on the slot given, which it releases. */
  start(kind: ObjectKind, hash: string, slot: Release): Promise<Buffer>;
  /** The object, from where it is now (memory, disk, a fetch in flight). */
  join(kind: ObjectKind, hash: string): Promise<Buffer>;
  /** A background fetch failed (nobody waits for it). */
  failed(kind: ObjectKind, hash: string, e: unknown): void;
}

export class PrefetchQueue {
  /** Entries from `head` on are queued; the ones before it were taken (dropped in bulk, not one shift each). */
  private queue: Queued[] = [];
  private head = 0;
  private readonly queued = new Map<string, Queued>();

  constructor(private readonly host: PrefetchHost) {}

  get length(): number {
    return this.queue.length - this.head;
  }

  has(key: string): boolean {
    return this.queued.has(key);
  }

  /** Queues the object (no-op if queued already). */
  add(key: string, kind: ObjectKind, hash: string): void {
    if (this.queued.has(key)) return;
    const q: Queued = { key, kind, hash, waiters: [] };
    this.queue.push(q);
    this.queued.set(key, q);
  }

  /** Queues the object if needed and resolves with its bytes once fetched. */
  wait(key: string, kind: ObjectKind, hash: string): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      this.add(key, kind, hash);
      this.queued.get(key)?.waiters.push({ resolve, reject });
      this.pump();
    });
  }

  /** Starts queued fetches while background slots are free. */
  pump(): void {
    while (this.host.open() && this.length > 0) {
      const next = this.queue[this.head];
      if (!next) break;
      if (this.host.present(next.kind, next.hash)) {
        this.take();
        // cached or already on its way: waiters join it without taking a slot
        if (next.waiters.length > 0) settle(next.waiters, this.host.join(next.kind, next.hash));
        continue;
      }
      const slot = this.host.trySlot();
      if (!slot) break;
      this.take();
      const p = this.host.start(next.kind, next.hash, slot);
      if (next.waiters.length > 0) settle(next.waiters, p);
      p.catch((e: unknown) => this.host.failed(next.kind, next.hash, e));
    }
  }

  /** Drops everything queued; waiters are rejected with `reason`. */
  clear(reason: Error): void {
    const dropped = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    this.queued.clear();
    for (const q of dropped) for (const w of q.waiters) w.reject(reason);
  }

  /**
   * Takes the first entry. Array.shift moves every entry after it, and a move's warm-up queues 17,000:
   * 0.2 s of the thread over the queue's life; the taken ones are dropped once they are half the array.
   */
  private take(): void {
    const q = this.queue[this.head];
    if (!q) return;
    this.queued.delete(q.key);
    this.head++;
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}

function settle(waiters: readonly Waiter[], p: Promise<Buffer>): void {
  p.then((data) => {
    for (const w of waiters) w.resolve(data);
  }, (e: unknown) => {
    for (const w of waiters) w.reject(e);
  });
}

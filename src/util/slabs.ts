/**
 * Reusable buffers within a byte budget, for a pipeline that reads, hashes and writes many blocks (push).
 *
 * A fresh Buffer per block is garbage as soon as the block is stored, and V8 frees an ArrayBuffer only when
 * it collects the object that holds it: at push's rate (gigabytes a minute) the freed-but-uncollected
 * buffers reached 200 MB, more than the blocks in flight. Slabs are taken and given back instead. Each is
 * a SharedArrayBuffer, so the hash workers read it in place (hash/pool.ts) and nothing is transferred.
 *
 * Capacities are powers of two from `minCapacity` up; a request is served from the smallest class that
 * holds it. What is taken is bounded by the budget (ByteBudget: a request larger than the budget runs
 * alone); what is kept free for reuse by `keepFree` (half the budget unless told), the oldest free slab
 * dropped first.
 * A taken buffer must not be used after its release: whoever keeps its bytes longer copies them.
 * With `idleDropMs`, the free slabs are dropped once none has been taken for that long (a long-lived owner,
 * such as a mounted home's seals, holds no memory between its bursts).
 */
import { ByteBudget } from './concurrency.js';

export interface Slab {
  /** `length` bytes over the slab (its contents are whatever was there: write before reading). */
  buf: Buffer;
  /** Gives the slab back; further calls do nothing. */
  release(): void;
}

export class Slabs {
  private readonly budget: ByteBudget;
  /** Free slabs by capacity, and all of them oldest first (to drop from when over the budget). */
  private readonly free = new Map<number, SharedArrayBuffer[]>();
  private readonly freeOrder = new Set<SharedArrayBuffer>();
  private freeBytes = 0;
  private taken = 0;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    limit: number,
    private readonly minCapacity = 64 * 1024,
    private readonly keepFree = limit / 2,
    private readonly idleDropMs?: number,
  ) {
    this.budget = new ByteBudget(limit);
  }

  /** The capacity a request of `length` bytes takes. */
  capacityFor(length: number): number {
    let c = this.minCapacity;
    while (c < length) c *= 2;
    return c;
  }

  /** Bytes kept free for reuse (for tests and diagnostics). */
  get idleBytes(): number {
    return this.freeBytes;
  }

  async take(length: number): Promise<Slab> {
    const capacity = this.capacityFor(length);
    const give = await this.budget.acquire(capacity);
    const sab = this.free.get(capacity)?.pop() ?? new SharedArrayBuffer(capacity);
    if (this.freeOrder.delete(sab)) this.freeBytes -= capacity;
    this.taken++;
    let released = false;
    return {
      buf: Buffer.from(sab, 0, length),
      release: () => {
        if (released) return;
        released = true;
        this.taken--;
        this.keep(sab);
        give();
        if (this.taken === 0 && this.idleDropMs !== undefined) this.dropWhenIdle(this.idleDropMs);
      },
    };
  }

  /** Drops the free slabs (when the pipeline is done with reading): later takes allocate afresh. */
  dropFree(): void {
    this.free.clear();
    this.freeOrder.clear();
    this.freeBytes = 0;
  }

  private dropWhenIdle(ms: number): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.taken === 0) this.dropFree();
    }, ms);
    this.idleTimer.unref();
  }

  private keep(sab: SharedArrayBuffer): void {
    const list = this.free.get(sab.byteLength) ?? [];
    list.push(sab);
    this.free.set(sab.byteLength, list);
    this.freeOrder.add(sab);
    this.freeBytes += sab.byteLength;
    while (this.freeBytes > this.keepFree) {
      const old = this.freeOrder.values().next().value as SharedArrayBuffer;
      this.freeOrder.delete(old);
      const same = this.free.get(old.byteLength) as SharedArrayBuffer[];
      same.splice(same.indexOf(old), 1);
      this.freeBytes -= old.byteLength;
    }
  }
}

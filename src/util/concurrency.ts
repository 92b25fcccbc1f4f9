/**
 * Small concurrency primitives: bounded-parallel map and single-flight (concurrent callers of one key share
 * one promise). No dependencies; used by the store, the cache and the seal.
 */

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first error after all settle. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let firstError: unknown;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
      const i = next++;
      try {
        out[i] = await fn(items[i] as T, i);
      } catch (e) {
        if (!failed) {
          failed = true;
          firstError = e;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failed) throw firstError;
  return out;
}

/** Concurrent calls with the same key share one in-flight promise. */
export class SingleFlight<K, V> {
  private readonly inflight = new Map<K, Promise<V>>();

  run(key: K, fn: () => Promise<V>): Promise<V> {
    const existing = this.inflight.get(key);
    if (existing) return existing;
    const p = fn().finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  get size(): number {
    return this.inflight.size;
  }
}

/** A counting semaphore for bounding concurrent work that is not a simple map. */
export class Semaphore {
  private waiters: Array<() => void> = [];
  constructor(private available: number) {}

  async acquire(): Promise<() => void> {
    if (this.available > 0) {
      this.available--;
    } else {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const w = this.waiters.shift();
      if (w) w();
      else this.available++;
    };
  }
}

/**
 * A budget of bytes held at once: `acquire(n)` waits until `n` more fit (one request larger than the whole
 * budget is let through alone, not refused). Waiters are served in order, so a large request is not starved.
 */
export class ByteBudget {
  private used = 0;
  private readonly waiters: Array<{ n: number; go: () => void }> = [];
  constructor(private readonly limit: number) {}

  async acquire(n: number): Promise<() => void> {
    if (this.waiters.length > 0 || !this.fits(n)) await new Promise<void>((go) => this.waiters.push({ n, go }));
    else this.used += n;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= n;
      this.serve();
    };
  }

  private fits(n: number): boolean {
    return this.used === 0 || this.used + n <= this.limit;
  }

  private serve(): void {
    for (let w = this.waiters[0]; w && this.fits(w.n); w = this.waiters[0]) {
      this.waiters.shift();
      this.used += w.n;
      w.go();
    }
  }
}

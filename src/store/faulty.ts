/**
 * `FaultyStore`: a fault-injecting wrapper for tests. Faults are added and removed at run time while the
 * store is in use, and each one matches some operations (and optionally a key prefix):
 *   - `latency`  delays the call by `ms`, then runs it;
 *   - `fail`     throws `error()` instead of running the call (the store is never touched);
 *   - `failAfter` runs the call, then throws `error()`: the write happened but the reply was "lost", the
 *                ambiguous case retries must handle;
 *   - `corrupt`  runs `get` and flips one bit of the returned body (what a bad disk or proxy would do);
 *   - `hang`     never answers until `releaseHangs()` (or `close()`), then runs the call.
 * A fault fires `times` times (default: forever) and then retires; all faults matching a call fire on it. `calls` counts calls per operation, so
 * tests can assert how many attempts a retry made.
 */
import type { ObjectInfo, Store } from './store.js';

export type StoreOp = 'has' | 'get' | 'put' | 'putIfAbsent' | 'list' | 'delete';

export type FaultKind = 'latency' | 'fail' | 'failAfter' | 'corrupt' | 'hang';

export interface Fault {
  kind: FaultKind;
  /** Operations it applies to; default all. */
  ops?: readonly StoreOp[];
  /** Only keys (or list prefixes) starting with this. */
  keyPrefix?: string;
  /** How many calls it affects before it retires; default unlimited. */
  times?: number;
  /** `latency`: the delay. */
  ms?: number;
  /** `fail`/`failAfter`: the error to throw (a fresh one per call); default a connection reset. */
  error?: () => Error;
  /** `failAfter` on `list`: break off after this many items. */
  afterItems?: number;
}

interface ActiveFault extends Fault {
  id: number;
  left: number;
}

/** An error shaped like a dropped connection: transient for RetryingStore. */
export function connectionReset(): Error {
  return Object.assign(new Error('socket hang up (injected)'), { code: 'ECONNRESET' });
}

export class FaultyStore implements Store {
  readonly url: string;
  readonly calls: Record<StoreOp, number> = { has: 0, get: 0, put: 0, putIfAbsent: 0, list: 0, delete: 0 };
  private faults: ActiveFault[] = [];
  private nextId = 1;
  private hung: Array<() => void> = [];

  constructor(readonly inner: Store) {
    this.url = inner.url;
  }

  /** Adds a fault; returns its id for `remove`. */
  add(fault: Fault): number {
    const id = this.nextId++;
    this.faults.push({ ...fault, id, left: fault.times ?? Infinity });
    return id;
  }

  remove(id: number): void {
    this.faults = this.faults.filter((f) => f.id !== id);
  }

  clear(): void {
    this.faults = [];
  }

  /** Lets every hung call proceed. */
  releaseHangs(): void {
    const hung = this.hung;
    this.hung = [];
    for (const release of hung) release();
  }

  /** Number of calls currently hung. */
  get hanging(): number {
    return this.hung.length;
  }

  /** The faults that fire for this call, consuming one use of each. */
  private take(op: StoreOp, key: string): ActiveFault[] {
    const hits = this.faults.filter((f) => (!f.ops || f.ops.includes(op)) && (!f.keyPrefix || key.startsWith(f.keyPrefix)) && f.left > 0);
    for (const f of hits) f.left--;
    this.faults = this.faults.filter((f) => f.left > 0);
    return hits;
  }

  /** The faults that act before the call: delay, hang, refuse. */
  private async before(hits: readonly ActiveFault[]): Promise<void> {
    for (const f of hits) {
      if (f.kind === 'latency') await new Promise((resolve) => setTimeout(resolve, f.ms ?? 0));
      if (f.kind === 'hang') await new Promise<void>((resolve) => this.hung.push(resolve));
      if (f.kind === 'fail') throw (f.error ?? connectionReset)();
    }
  }

  private async run<T>(op: StoreOp, key: string, fn: () => Promise<T>): Promise<T> {
    this.calls[op]++;
    const hits = this.take(op, key);
    await this.before(hits);
    let result: T = await fn();
    for (const f of hits) {
      if (f.kind === 'failAfter') throw (f.error ?? connectionReset)();
      if (f.kind === 'corrupt' && Buffer.isBuffer(result) && result.length > 0) {
        const copy = Buffer.from(result);
        const i = copy.length >> 1;
        copy[i] = (copy[i] ?? 0) ^ 0x01;
        result = copy as T;
      }
    }
    return result;
  }

  has(keys: readonly string[]): Promise<Set<string>> {
    return this.run('has', keys[0] ?? '', () => this.inner.has(keys));
  }

  get(key: string): Promise<Buffer> {
    return this.run('get', key, () => this.inner.get(key));
  }

  /** Counted and faulted as a `get` (a ranged GET is a GET). */
  getRange(key: string, offset: number, length: number): Promise<Buffer> {
    return this.run('get', key, () => this.inner.getRange(key, offset, length));
  }

  put(key: string, data: Buffer): Promise<void> {
    return this.run('put', key, () => this.inner.put(key, data));
  }

  putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    return this.run('putIfAbsent', key, () => this.inner.putIfAbsent(key, data));
  }

  /**
   * `latency`, `hang` and `fail` act before the first item; `failAfter` throws after `afterItems` items
   * (default: after the last one): a listing that breaks off midway.
   */
  async *list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    this.calls.list++;
    const hits = this.take('list', prefix);
    await this.before(hits);
    const cut = hits.find((f) => f.kind === 'failAfter');
    let n = 0;
    for await (const o of this.inner.list(prefix, limit)) {
      if (cut && n >= (cut.afterItems ?? Infinity)) throw (cut.error ?? connectionReset)();
      n++;
      yield o;
    }
    if (cut) throw (cut.error ?? connectionReset)();
  }

  delete(key: string): Promise<void> {
    return this.run('delete', key, () => this.inner.delete(key));
  }

  async close(): Promise<void> {
    this.releaseHangs();
    await this.inner.close();
  }
}

/**
 * `inner` with every HEAD write under `heads` delayed by `headMs` and every block write under `blocks` by
 * `blockMs` (HOMEFS_TEST_HEAD_DELAY_MS, HOMEFS_TEST_BLOCK_DELAY_MS, config.ts).
 */
export function withWriteDelays(inner: Store, delays: { heads: string; headMs?: number | undefined; blocks: string; blockMs?: number | undefined }): Store {
  if (!delays.headMs && !delays.blockMs) return inner;
  const f = new FaultyStore(inner);
  if (delays.headMs) f.add({ kind: 'latency', ops: ['putIfAbsent'], keyPrefix: delays.heads, ms: delays.headMs });
  if (delays.blockMs) f.add({ kind: 'latency', ops: ['put', 'putIfAbsent'], keyPrefix: delays.blocks, ms: delays.blockMs });
  return f;
}

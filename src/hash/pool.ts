/**
 * HashPool: BLAKE3 of large buffers on worker threads, so a process that must stay responsive (a FUSE
 * server, or push with its uploads in flight) never blocks its event loop for the ~1 ms a 4 MiB block takes.
 *
 * Buffers that own their whole ArrayBuffer (any `Buffer.allocUnsafe` of more than 4 KiB) are transferred
 * to the worker and back, not copied: the caller must use the buffer returned by `hash()`, the one it
 * passed in is detached meanwhile. Buffers over a SharedArrayBuffer are read by the worker in place (and
 * come back as they went): nothing moves, so the main thread's V8 sees no new external memory per block
 * (a transferred buffer counts as a new allocation each time it comes back, and 4 MiB ones make it collect
 * garbage often). Other buffers are copied once. Buffers under `inlineBelow` bytes are
 * hashed on the calling thread, where that is cheaper than the two messages (~50 µs) a worker costs.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { hashBuffer } from './blake3.js';

export interface HashPoolOptions {
  /** Worker threads (default: available cores − 1, at least 1, at most 4). */
  threads?: number;
  /** Smaller buffers are hashed inline (default 256 KiB). */
  inlineBelow?: number;
}

interface Pending {
  resolve: (r: { hash: string; data: Buffer }) => void;
  reject: (e: Error) => void;
  length: number;
  /** The caller's buffer, read in place by the worker (over a SharedArrayBuffer). */
  shared?: Buffer;
}

export class HashPool {
  private readonly workers: Worker[] = [];
  private readonly busy: number[] = [];
  private readonly pending = new Map<number, Pending & { worker: number }>();
  private readonly inlineBelow: number;
  private nextId = 1;
  private closed = false;

  private readonly threads: number;

  /** Workers start with the first buffer large enough to need one (a worker costs about 17 MB of RSS). */
  constructor(opts: HashPoolOptions = {}) {
    this.threads = opts.threads ?? Math.min(4, Math.max(1, availableParallelism() - 1));
    this.inlineBelow = opts.inlineBelow ?? 256 * 1024;
  }

  private start(): void {
    for (let i = 0; i < this.threads; i++) {
      const w = new Worker(new URL('./pool-worker.js', import.meta.url));
      w.unref();
      w.on('message', (m: { id: number; hash: string; buf?: ArrayBuffer }) => {
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        this.busy[i] = (this.busy[i] ?? 1) - 1;
        p.resolve({ hash: m.hash, data: p.shared ?? Buffer.from(m.buf ?? new ArrayBuffer(0), 0, p.length) });
      });
      w.on('error', (e) => this.failWorker(i, e));
      w.on('exit', (code) => {
        if (!this.closed) this.failWorker(i, new Error(`hash worker exited with code ${code}`));
      });
      this.workers.push(w);
      this.busy.push(0);
    }
  }

  private failWorker(i: number, e: Error): void {
    for (const [id, p] of this.pending) {
      if (p.worker !== i) continue;
      this.pending.delete(id);
      p.reject(e);
    }
  }

  /** The BLAKE3 hash of `data`, and the bytes again (use these: `data` may be detached meanwhile). */
  hash(data: Buffer): Promise<{ hash: string; data: Buffer }> {
    if (this.closed) return Promise.reject(new Error('HashPool is closed'));
    if (data.length < this.inlineBelow || this.threads === 0) return Promise.resolve({ hash: hashBuffer(data), data });
    if (this.workers.length === 0) this.start();
    let i = 0;
    for (let k = 1; k < this.busy.length; k++) if ((this.busy[k] ?? 0) < (this.busy[i] ?? 0)) i = k;
    const id = this.nextId++;
    this.busy[i] = (this.busy[i] ?? 0) + 1;
    const worker = this.workers[i] as Worker;
    if (data.buffer instanceof SharedArrayBuffer) {
      return new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject, length: data.length, worker: i, shared: data });
        worker.postMessage({ id, buf: data.buffer, offset: data.byteOffset, length: data.length });
      });
    }
    const owns = data.byteOffset === 0 && data.buffer.byteLength === data.length && data.buffer instanceof ArrayBuffer;
    const buf = owns ? (data.buffer as ArrayBuffer) : new Uint8Array(data).buffer;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, length: data.length, worker: i });
      worker.postMessage({ id, buf, offset: 0, length: data.length }, [buf]);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.reject(new Error('HashPool closed'));
    }
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

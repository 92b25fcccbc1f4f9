/**
 * Write-behind: a changed file that has gone quiet (closed, or no change for `quietMs`) is captured and
 * its new blocks go to the store in the background, without moving HEAD, so that an fsync, a protection
 * segment or the seal at sleep finds them there and pays only for what changed after (the tail).
 *
 * A capture is `Content.sealFile` in write-behind mode: under the file's content lock its changed blocks
 * are read (or their early hash taken, seal/preseal.ts), hashed and handed to `put`; once every upload
 * has landed, the file is recorded as stored (inodes/filestate.ts `stored`) only if its content is still
 * the one captured. A file changed meanwhile is queued again; a deleted one is dropped (`dropped`), and
 * its capture, if running, finds nothing to record.
 *
 * Safety against gc: every capture first takes a look at the org's gc fence (`epoch`, reused for a short
 * while) and tags what it records with the epoch that look saw settled. A seal or segment relies on the
 * blocks only when it sees that same epoch settled (no gc announced since), and then treats them as it
 * treats its own dedupe hits (seal.ts, docs/operations.md). While a gc runs, write-behind waits.
 *
 * Foreground first: nothing new starts while a reader waits for a store fetch (`foregroundBusy`), and
 * while the foreground is busy (FUSE requests flowing: `busy`) only a couple of files are in flight;
 * files and bytes in flight are bounded (so is the bandwidth write-behind takes). Each distinct block goes up once: uploads
 * of one hash are shared while in flight, and hashes stored under the current epoch are remembered.
 * Blocks go to a `BlockSink`, one object per block today; a pack writer can take its place.
 */
import { BLOCK_SIZE, SINGLE_BLOCK_MAX } from '../hash/blake3.js';
import type { SealBlock } from '../inodes/filestate.js';
import { SMALL_OBJECT } from '../format/objects.js';
import { readAndHash, type BlockBytes } from './blockread.js';
import type { Slabs } from '../util/slabs.js';

/** Where write-behind's blocks go. */
export interface BlockSink {
  /** Of these block hashes, those the store does not have. */
  missing(hashes: string[]): Promise<Set<string>>;
  /** Stores one block (resolves once it is durable in the store). */
  put(hash: string, data: Buffer): Promise<void>;
}

/** What write-behind needs to know about a file before it captures it. */
export interface FileLook {
  /** Dirty or inline and not stored yet: there is something to upload. */
  pending: boolean;
  size: number;
}

export type StoreBlock = (block: SealBlock, bytes: BlockBytes, known?: string) => Promise<string>;

export interface WriteBehindDeps {
  look(ino: number): FileLook | undefined;
  /**
   * Content.sealFile in write-behind mode: captures `ino` through `store` (under the file's lock, which
   * `store` does not hold for the uploads it starts), then, once `landed` resolves, records it stored with
   * `epoch` if it is unchanged.
   */
  stage(ino: number, store: StoreBlock, landed: () => Promise<void>, epoch: number | null): Promise<{ captured: boolean; size: number }>;
  /** A settled look at the gc fence (reused while fresh); undefined while a gc runs. */
  epoch(): Promise<{ epoch: number | null } | undefined>;
  hash(data: Buffer): Promise<{ hash: string; data: Buffer }>;
  /** Reused buffers for the large blocks read (seal/blockread.ts); none: a new buffer per block. */
  slabs?: Slabs;
  sink: BlockSink;
  /** The upload of this block that the presealer started, while in flight. */
  uploading?(hash: string): Promise<unknown> | undefined;
  /** The seal would leave this file out (an excluded path): nothing to upload. */
  excluded(ino: number): boolean;
  /** A reader is waiting for the store: start nothing new. */
  foregroundBusy(): boolean;
  /** The foreground is busy (FUSE requests flowing, home/foreground.ts): at most `busyFiles` run. */
  busy?(): boolean;
  onError(ino: number, e: unknown): void;
  now?: () => number;
}

export interface WriteBehindOptions {
  /** A file not closed counts as quiet once unchanged this long. */
  quietMs: number;
  /** A closed file counts as quiet once unchanged this long (the kernel's last writes and its setattr). */
  closedQuietMs: number;
  /** Files captured at once. */
  files: number;
  /** …and while the foreground is busy (`busy`), only this many. */
  busyFiles: number;
  /** Block bytes held in memory for uploads at most (a larger file runs alone). */
  memoryBytes: number;
  /** How often the queue is looked at. */
  pumpMs: number;
  /** While a gc runs (or the look failed), wait this long before looking again. */
  retryMs: number;
}

export const defaultWriteBehindOptions: WriteBehindOptions = {
  quietMs: 1000, closedQuietMs: 100, files: 16, busyFiles: 0, memoryBytes: 64 * 1024 * 1024, pumpMs: 50, retryMs: 5000,
};

interface Pending {
  /** When the oldest change not stored happened. */
  first: number;
  last: number;
  closed: boolean;
}

/** Hashes remembered as stored (per epoch), so identical content in many files goes up once. */
const REMEMBER_MAX = 200_000;

export class WriteBehind {
  private readonly pending = new Map<number, Pending>();
  private readonly running = new Map<number, { first: number; done: Promise<void> }>();
  private readonly uploads = new Map<string, Promise<void>>();
  private stored = new Set<string>();
  private storedEpoch: number | null | undefined = undefined;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private kicked = false;
  private pausedUntil = 0;
  private memory = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  /** Counters for status and metrics. */
  filesStored = 0;
  blocksUploaded = 0;
  bytesUploaded = 0;
  blocksFound = 0;

  constructor(private readonly deps: WriteBehindDeps, readonly opts: WriteBehindOptions = defaultWriteBehindOptions) {
    this.now = deps.now ?? Date.now;
  }

  /** File `ino`'s bytes or size changed. */
  changed(ino: number): void {
    if (this.closed) return;
    const t = this.now();
    const p = this.pending.get(ino);
    if (p) {
      p.last = t;
      p.closed = false;
    } else {
      this.pending.set(ino, { first: this.running.get(ino)?.first ?? t, last: t, closed: false });
    }
    this.arm();
  }

  /** A handle of `ino` was closed. */
  closedFile(ino: number): void {
    const p = this.pending.get(ino);
    if (p) p.closed = true;
  }

  /** File `ino` is gone (its last link and handle): nothing of it is uploaded any more. */
  dropped(ino: number): void {
    this.pending.delete(ino);
  }

  /** Whether `hash` was stored by write-behind after a look that saw `epoch` settled. */
  has(hash: string, epoch: number | null): boolean {
    return this.storedEpoch === epoch && this.stored.has(hash);
  }

  /** The upload of `hash` while it is in flight. */
  inFlight(hash: string): Promise<void> | undefined {
    return this.uploads.get(hash);
  }

  /** Files changed and not stored yet (queued or being captured), and the time of the oldest such change. */
  backlog(): { files: number; bytes: number; oldest: number | null } {
    let bytes = 0;
    let oldest: number | null = null;
    const count = (ino: number, first: number): void => {
      bytes += this.deps.look(ino)?.size ?? 0;
      if (oldest === null || first < oldest) oldest = first;
    };
    for (const [ino, p] of this.pending) count(ino, p.first);
    for (const [ino, r] of this.running) if (!this.pending.has(ino)) count(ino, r.first);
    return { files: new Set([...this.pending.keys(), ...this.running.keys()]).size, bytes, oldest };
  }

  /** Files queued or being captured. */
  get queued(): number {
    return this.pending.size + this.running.size;
  }

  /** Resolves once nothing is queued or running (a file changed meanwhile is waited for too). */
  idle(): Promise<void> {
    if (this.pending.size === 0 && this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops: nothing new starts; resolves once the captures in flight have ended. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
    this.wakeIdle();
  }

  /** Looks at the queue again after `pumpMs` (a file may have gone quiet by then). */
  private arm(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, this.opts.pumpMs);
    this.timer.unref();
  }

  /** Looks at the queue again at once (a capture ended: its slot is free). */
  private kick(): void {
    if (this.kicked || this.closed) return;
    this.kicked = true;
    setImmediate(() => {
      this.kicked = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.closed) return;
    const t = this.now();
    if (t < this.pausedUntil || this.deps.foregroundBusy()) return this.arm();
    // Foreground first: while requests flow, write-behind takes only a little of the machine.
    const limit = this.deps.busy?.() ? this.opts.busyFiles : this.opts.files;
    for (const [ino, p] of this.pending) {
      if (this.running.size >= limit) return this.arm(); // (a capture that ends kicks the queue too)
      if (this.running.has(ino)) continue; // changed again while captured: after that capture ends
      if (t - p.last < (p.closed ? this.opts.closedQuietMs : this.opts.quietMs)) continue;
      const look = this.deps.look(ino);
      if (!look?.pending || this.deps.excluded(ino)) {
        this.pending.delete(ino);
        continue;
      }
      const need = captureBytes(look.size);
      if (this.running.size > 0 && this.memory + need > this.opts.memoryBytes) break;
      this.pending.delete(ino);
      this.start(ino, p.first, need);
    }
    if (this.pending.size > 0) this.arm();
    else this.wakeIdle();
  }

  private start(ino: number, first: number, need: number): void {
    this.memory += need;
    const done = this.capture(ino).catch((e: unknown) => {
      this.deps.onError(ino, e);
      if (this.deps.look(ino)?.pending) this.requeue(ino, first);
    }).finally(() => {
      this.memory -= need;
      this.running.delete(ino);
      if (this.pending.size > 0) this.kick();
      else this.wakeIdle();
    });
    this.running.set(ino, { first, done });
  }

  /** Back in the queue, keeping the age of its oldest change. */
  private requeue(ino: number, first: number): void {
    const p = this.pending.get(ino);
    if (p) p.first = Math.min(p.first, first);
    else this.pending.set(ino, { first, last: 0, closed: true });
  }

  private async capture(ino: number): Promise<void> {
    const look = await this.deps.epoch().catch(() => undefined);
    if (!look) {
      this.pausedUntil = this.now() + this.opts.retryMs;
      throw new Error('a gc is running or the gc fence cannot be read: write-behind waits');
    }
    if (look.epoch !== this.storedEpoch) {
      this.stored = new Set();
      this.storedEpoch = look.epoch;
    }
    const epoch = look.epoch;
    const uploads: Array<Promise<void>> = [];
    const store: StoreBlock = async (block, bytes, known) => {
      const r = await this.storeBlock(block, bytes, known, epoch);
      uploads.push(r.landed);
      r.landed.catch(() => undefined); // (observed by `landed`)
      return r.hash;
    };
    const r = await this.deps.stage(ino, store, async () => {
      await Promise.all(uploads);
    }, epoch);
    if (r.captured) this.filesStored++;
  }

  /** Hashes a block (unless its early hash is known) and starts its upload; the file's lock is not held for it. */
  private async storeBlock(block: SealBlock, bytes: BlockBytes, known: string | undefined, epoch: number | null): Promise<{ hash: string; landed: Promise<void> }> {
    let data: Buffer | undefined;
    let hash: string;
    let release = (): void => undefined;
    if (known !== undefined) {
      hash = known;
    } else {
      ({ hash, data, release } = await readAndHash(this.deps.slabs, block.length, bytes, (b) => this.deps.hash(b)));
    }
    let up = this.has(hash, epoch) ? Promise.resolve() : this.uploads.get(hash);
    if (!up) {
      const early = this.deps.uploading?.(hash);
      const d = data;
      up = (async () => {
        await early?.catch(() => undefined);
        await this.upload(hash, block.length, d, bytes, epoch);
      })().finally(() => {
        this.uploads.delete(hash);
        release();
      });
      this.uploads.set(hash, up);
    } else {
      release(); // stored already, or on its way up with another file's bytes
    }
    return { hash, landed: up };
  }

  private async upload(hash: string, length: number, data: Buffer | undefined, bytes: BlockBytes, epoch: number | null): Promise<void> {
    // A small block costs as much to ask about as to write again (one round trip): written. A large one only if missing.
    const small = length <= SMALL_OBJECT;
    if (!small && !(await this.deps.sink.missing([hash])).has(hash)) {
      this.blocksFound++;
    } else {
      if (!data) {
        const check = await this.deps.hash(await bytes());
        if (check.hash !== hash) throw new Error(`write-behind: a block no longer has its early hash`);
        data = check.data;
      }
      await this.deps.sink.put(hash, data);
      this.blocksUploaded++;
      this.bytesUploaded += length;
    }
    if (this.storedEpoch === epoch) {
      if (this.stored.size >= REMEMBER_MAX) this.stored = new Set();
      this.stored.add(hash);
    }
  }

  private wakeIdle(): void {
    if (this.pending.size > 0 || this.running.size > 0) return;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }
}

/** A block of a file this large is read whole into memory by its capture (a small file is one block). */
export function captureBytes(size: number): number {
  return size <= SINGLE_BLOCK_MAX ? size : 4 * BLOCK_SIZE;
}

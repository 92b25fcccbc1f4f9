/**
 * Cold reads of a mount served from the home's push pack (transfer/pushpack.ts, docs/format.md "Push
 * pack"). The pack holds the pushed snapshot's small blocks in the order `pull` writes files: depth first,
 * names in byte order within a directory's own files and within its hidden entries and node_modules, which
 * come last (pushpack.ts `pullRank`). That is about the order in which `grep -r`, `tar c` and `git status`
 * go through a directory, so the blocks a cold reader asks for next lie right after the one it asks for now.
 *
 * When the block cache must fetch a block the pack's index names, it asks `fetch`: one ranged GET reads a
 * window of the pack starting at that block (up to `windowBytes`), every block cut out of it is verified by
 * its hash, the one asked for is returned and the others are held, in memory and bounded, for the fetches
 * that come next (the directory prefetch asks for them a moment later). A fetch of a block whose window is
 * in flight joins it. A file's later blocks and other homes' blocks are not in the pack: they go to
 * `blocks/` as before.
 *
 * Read-ahead: once fetches walk forward through the pack (each one at or just after the previous one),
 * the reader is going through it in order, so the windows after the one it consumes are read meanwhile
 * (up to `aheadWindows` windows of pack ahead of its last fetch, held bytes permitting). Without it every
 * window costs the reader one store round trip of waiting; with it the round trips overlap its work. A fetch that jumps elsewhere starts a new run and reads
 * nothing ahead until it walks forward again.
 *
 * Like every pack it is a hint: the index loads in the background while the mount wakes and is decoded a
 * time slice at a time once the hot set's warm-up is done (fetches before then go to `blocks/`), any block
 * of a snapshot is welcome (content addressing: a block is its hash, not its snapshot's), and a pack that
 * is missing, damaged, too large to index, or a window that fails or holds a wrong block only sends those
 * fetches to `blocks/`. Nothing here can fail a read.
 */
import type { Logger } from 'pino';
import { hashBuffer } from '../hash/blake3.js';
import { PushPackIndexDecoder, pushPackIndexLength, type PushPackEntry, type PushPackIndex } from '../transfer/pushpack.js';
import { pushPackKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { NotFoundError, errorMessage } from '../util/errors.js';
import { backgroundSlicer } from '../util/slicer.js';

export interface PackReadOptions {
  /** One ranged GET reads at most this many bytes of the pack (one block larger than that alone). */
  windowBytes: number;
  /** Blocks read in a window and not asked for yet are held up to this many bytes (oldest dropped first). */
  heldBytes: number;
  /** An index longer than this is not loaded (the pack is then not used by mounts). */
  maxIndexBytes: number;
  /** Windows read ahead of a reader walking forward through the pack (0: none). */
  aheadWindows?: number;
}

/** What the push pack did for this mount (`status`, `pushpack`). */
export interface PackReadReport {
  /** loading, none (no pack), skipped (damaged or too large), fetched (decoded at the first cold read), ready. */
  state: 'loading' | 'none' | 'skipped' | 'fetched' | 'ready';
  blocks: number;
  windows: number;
  /** Blocks served from windows; blocks that failed their hash; window GETs that failed. */
  served: number;
  rejected: number;
  failed: number;
  /** Bytes of index and windows fetched. */
  bytesFetched: number;
  /** Windows started ahead of a reader walking forward (counted in `windows` too once read). */
  ahead: number;
}

/** Entries the background decode reads per time slice check. */
const DECODE_STEP = 512;

export class PackReads {
  readonly report: PackReadReport = { state: 'loading', blocks: 0, windows: 0, served: 0, rejected: 0, failed: 0, bytesFetched: 0, ahead: 0 };
  private entries: PushPackEntry[] = [];
  private where: Map<string, number> | null = null;
  private dataStart = 0;
  private readonly inflight = new Map<string, Promise<Map<string, Buffer>>>();
  private readonly held = new Map<string, Buffer>();
  private heldTotal = 0;
  private readonly key: string;
  /** Index of the entry the last fetch asked for (-1: none yet); a fetch at or just after it walks forward. */
  private lastAt = -1;
  /** Index just past the last entry read or in flight in the current forward run. */
  private frontier = 0;
  /** Read-ahead windows in flight. */
  private aheadInFlight = 0;
  /** Per entry: 1 once its block was handed out (the cache has it; no window reads it again unasked). */
  private taken = new Uint8Array(0);
  /** The index, kept by `load({ lazy })` until `decodeInBackground`, `has` or `fetch` decodes it. */
  private decoder: PushPackIndexDecoder | null = null;
  private decoding: Promise<void> | null = null;
  private loading: Promise<void> | null = null;

  constructor(private readonly store: Store, org: string, home: string, private readonly opts: PackReadOptions, private readonly log?: Logger) {
    this.key = pushPackKey(org, home);
  }

  /**
   * Loads the index (two ranged GETs at most, once); never throws. With `lazy`, the index's bytes are kept
   * and decoded by `decodeInBackground`, or at once by `has` (state `fetched` until then): tens of ms at
   * 17k blocks, which must not run in one piece right when the mount starts serving.
   */
  load(opts: { lazy?: boolean } = {}): Promise<void> {
    this.loading ??= this.loadIndex(opts);
    return this.loading;
  }

  private async loadIndex(opts: { lazy?: boolean }): Promise<void> {
    try {
      const first = await this.get(0, Math.min(this.opts.windowBytes, this.opts.maxIndexBytes));
      const indexEnd = pushPackIndexLength(first);
      if (indexEnd > this.opts.maxIndexBytes) {
        this.report.state = 'skipped';
        this.log?.info({ op: 'pushpack.load', indexBytes: indexEnd }, 'push pack index too large to load; cold reads fetch block by block');
        return;
      }
      const head = first.length >= indexEnd ? first : Buffer.concat([first, await this.get(first.length, indexEnd - first.length)]);
      this.decoder = new PushPackIndexDecoder(head);
      if (opts.lazy) this.report.state = 'fetched';
      else this.decodeKept();
    } catch (e) {
      this.failed(e);
    }
  }

  /** The decoded index in use; `where` already maps its first entries (decodeInBackground). */
  private use(index: PushPackIndex, where = new Map<string, number>()): void {
    this.entries = index.entries;
    this.taken = new Uint8Array(index.entries.length);
    this.dataStart = index.dataStart;
    for (let i = where.size; i < index.entries.length; i++) where.set((index.entries[i] as PushPackEntry).hash, i);
    this.where = where;
    this.report.blocks = index.entries.length;
    this.report.state = 'ready';
  }

  /** Decodes what is left of the index `load` kept, at once. */
  private decodeKept(where?: Map<string, number>): void {
    const d = this.decoder;
    if (!d) return;
    this.decoder = null;
    try {
      d.step(Infinity);
      this.use(d.index, where);
    } catch (e) {
      this.failed(e);
    }
  }

  /**
   * Decodes the index `load({ lazy })` kept a time slice at a time (`pause`), once, after the load if it is
   * still under way; fetches before it ends go to `blocks/`. An index of tens of thousands of blocks took tens
   * of ms in one piece, right when the mount began to serve (a move's first prefetch), ahead of the agent's
   * first requests; wake starts this once the hot set's warm-up is done.
   */
  decodeInBackground(pause: () => Promise<void> = () => backgroundSlicer.pause()): Promise<void> {
    this.decoding ??= (async () => {
      await this.loading;
      const d = this.decoder;
      const where = new Map<string, number>();
      while (d !== null && d === this.decoder) {
        await pause();
        try {
          const done = d.step(DECODE_STEP);
          const entries = d.index.entries;
          for (let i = where.size; i < entries.length; i++) where.set((entries[i] as PushPackEntry).hash, i);
          if (done) break;
        } catch {
          break; // (decodeKept reports it)
        }
      }
      if (d === this.decoder) this.decodeKept(where);
    })();
    return this.decoding;
  }

  private failed(e: unknown): void {
    this.report.state = e instanceof NotFoundError ? 'none' : 'skipped';
    if (!(e instanceof NotFoundError)) this.log?.warn({ op: 'pushpack.load', err: errorMessage(e) }, 'push pack not used; cold reads fetch block by block');
  }

  /** Whether the pack can supply `hash` now (held, in a window in flight, or in the index). */
  has(hash: string): boolean {
    this.decodeKept();
    return this.held.has(hash) || this.inflight.has(hash) || (this.where?.has(hash) ?? false);
  }

  /**
   * The verified bytes of block `hash` from the pack, or undefined when the pack cannot supply them (not in
   * it, index not loaded yet, window failed, hash mismatch): the caller then fetches from `blocks/`.
   */
  async fetch(hash: string): Promise<Buffer | undefined> {
    if (this.decoder) return undefined; // loaded, not decoded yet (decodeInBackground): to blocks/, like a fetch before the load
    const at = this.where?.get(hash);
    const forward = at !== undefined && this.walk(at);
    const ready = this.take(hash);
    const pending = ready ? undefined : (this.inflight.get(hash) ?? (at === undefined ? undefined : this.window(at)));
    if (forward) this.readAhead(at);
    if (ready) return ready;
    return pending ? this.take(hash, await pending) : undefined;
  }

  /** Notes a fetch of entry `at`; true when it continues a forward run (at or within a window after the last). */
  private walk(at: number): boolean {
    const prev = this.lastAt;
    this.lastAt = at;
    if (prev >= 0 && at >= prev && this.span(prev, at) <= this.opts.windowBytes) return true;
    this.frontier = at; // a new run: nothing read ahead of it yet
    return false;
  }

  /** Bytes of pack from the start of entry `from` to the start of entry `to`. */
  private span(from: number, to: number): number {
    return (this.entries[to] as PushPackEntry).offset - (this.entries[from] as PushPackEntry).offset;
  }

  /** Whether entry `i` needs no read: held, in flight, or not to be asked of the pack (rejected). */
  private covered(i: number): boolean {
    const h = (this.entries[i] as PushPackEntry).hash;
    return this.taken[i] === 1 || this.held.has(h) || this.inflight.has(h) || !(this.where?.has(h) ?? false);
  }

  /**
   * In a forward run at entry `at`: while less than `aheadWindows` windows of pack after `at` are read or
   * in flight, starts the next window (held bytes permitting).
   */
  private readAhead(at: number): void {
    const max = this.opts.aheadWindows ?? 0;
    while (this.aheadInFlight < max) {
      let next = Math.max(this.frontier, at + 1);
      while (next < this.entries.length && this.covered(next) && this.span(at, next) < this.opts.windowBytes * max) next++; // bounded: a re-read run is mostly covered
      this.frontier = next;
      if (next >= this.entries.length || this.span(at, next) >= this.opts.windowBytes * max) return;
      if (this.heldTotal + this.opts.windowBytes * (this.aheadInFlight + 1) > this.opts.heldBytes) return;
      this.aheadInFlight++;
      this.report.ahead++;
      const done = (): void => {
        this.aheadInFlight--;
      };
      this.window(next).then(done, done);
    }
  }

  /** Held bytes of `hash` (removed from the held set), from `got` if given. */
  private take(hash: string, got?: Map<string, Buffer>): Buffer | undefined {
    const b = this.held.get(hash);
    if (b) {
      this.held.delete(hash);
      this.heldTotal -= b.length;
    }
    const out = b ?? got?.get(hash);
    if (out) {
      this.report.served++;
      const at = this.where?.get(hash);
      if (at !== undefined) this.taken[at] = 1;
    }
    return out;
  }

  /** Reads the window starting at entry `at`; its blocks are held (the caller takes its own). */
  private window(at: number): Promise<Map<string, Buffer>> {
    const first = this.entries[at] as PushPackEntry;
    const slice: PushPackEntry[] = [];
    for (let i = at; i < this.entries.length; i++) {
      const e = this.entries[i] as PushPackEntry;
      if (slice.length > 0 && e.offset + e.length - first.offset > this.opts.windowBytes) break;
      if (i > at && (this.held.has(e.hash) || this.inflight.has(e.hash) || this.taken[i] === 1)) break; // read already, or being read
      slice.push(e);
    }
    const last = slice[slice.length - 1] as PushPackEntry;
    this.frontier = Math.max(this.frontier, at + slice.length);
    const p = this.read(first, last, slice);
    for (const e of slice) this.inflight.set(e.hash, p);
    const done = (): void => {
      for (const e of slice) if (this.inflight.get(e.hash) === p) this.inflight.delete(e.hash);
    };
    p.then(done, done);
    return p;
  }

  private async read(first: PushPackEntry, last: PushPackEntry, slice: readonly PushPackEntry[]): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    let buf: Buffer;
    try {
      buf = await this.get(this.dataStart + first.offset, last.offset + last.length - first.offset);
      this.report.windows++;
    } catch (e) {
      this.report.failed++;
      this.log?.warn({ op: 'pushpack.window', err: errorMessage(e) }, 'push pack window not read; those blocks are fetched one by one');
      return out;
    }
    for (const e of slice) {
      const data = Buffer.from(buf.subarray(e.offset - first.offset, e.offset - first.offset + e.length)); // own copy: no slice pins the window
      if (data.length !== e.length || hashBuffer(data) !== e.hash) {
        this.report.rejected++;
        this.where?.delete(e.hash); // never asked of the pack again
        continue;
      }
      out.set(e.hash, data);
      this.hold(e.hash, data);
    }
    return out;
  }

  private hold(hash: string, data: Buffer): void {
    if (this.held.has(hash) || data.length > this.opts.heldBytes) return;
    this.held.set(hash, data);
    this.heldTotal += data.length;
    for (const [h, b] of this.held) {
      if (this.heldTotal <= this.opts.heldBytes) break;
      this.held.delete(h);
      this.heldTotal -= b.length;
    }
  }

  private async get(offset: number, length: number): Promise<Buffer> {
    const b = await this.store.getRange(this.key, offset, length);
    this.report.bytesFetched += b.length;
    return b;
  }
}

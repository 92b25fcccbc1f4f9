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
 * Like every pack it is a hint: the index loads in the background while the mount wakes (fetches before it
 * has loaded go to `blocks/`) into a table that costs a few ms at 95,000 blocks (transfer/pushpack.ts
 * `PushPackTable`), so a move's warm-up finds it in place for the objects its wake pack lacks; any block
 * of a snapshot is welcome (content addressing: a block is its hash, not its snapshot's), and a pack that
 * is missing, damaged, too large to index, or a window that fails or holds a wrong block only sends those
 * fetches to `blocks/`. Nothing here can fail a read.
 */
import type { Logger } from 'pino';
import { hashBuffer } from '../hash/blake3.js';
import { PushPackTable, pushPackIndexLength } from '../transfer/pushpack.js';
import { pushPackKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { NotFoundError, errorMessage } from '../util/errors.js';

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
  /** loading, none (no pack), skipped (damaged or too large), ready. */
  state: 'loading' | 'none' | 'skipped' | 'ready';
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

/** An entry of the pack's index in a window (`PushPackTable` holds them as numbers). */
interface Slot {
  i: number;
  hash: string;
  offset: number;
  length: number;
}

/** Per entry: not asked for yet, handed out (the cache has it: no window reads it again unasked), or rejected. */
const FRESH = 0;
const TAKEN = 1;
const REJECTED = 2;

export class PackReads {
  readonly report: PackReadReport = { state: 'loading', blocks: 0, windows: 0, served: 0, rejected: 0, failed: 0, bytesFetched: 0, ahead: 0 };
  private table: PushPackTable | null = null;
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
  /** Per entry: FRESH, TAKEN or REJECTED. */
  private marks = new Uint8Array(0);
  private loading: Promise<void> | null = null;

  constructor(private readonly store: Store, org: string, home: string, private readonly opts: PackReadOptions, private readonly log?: Logger) {
    this.key = pushPackKey(org, home);
  }

  /** Loads the index (two ranged GETs at most, once); never throws. */
  load(): Promise<void> {
    this.loading ??= this.loadIndex();
    return this.loading;
  }

  private async loadIndex(): Promise<void> {
    try {
      const first = await this.get(0, Math.min(this.opts.windowBytes, this.opts.maxIndexBytes));
      const indexEnd = pushPackIndexLength(first);
      if (indexEnd > this.opts.maxIndexBytes) {
        this.report.state = 'skipped';
        this.log?.info({ op: 'pushpack.load', indexBytes: indexEnd }, 'push pack index too large to load; cold reads fetch block by block');
        return;
      }
      const head = first.length >= indexEnd ? first : Buffer.concat([first, await this.get(first.length, indexEnd - first.length)]);
      const table = new PushPackTable(head.length > indexEnd ? Buffer.from(head.subarray(0, indexEnd)) : head);
      this.table = table;
      this.marks = new Uint8Array(table.count);
      this.report.blocks = table.count;
      this.report.state = 'ready';
    } catch (e) {
      this.failed(e);
    }
  }

  private failed(e: unknown): void {
    this.report.state = e instanceof NotFoundError ? 'none' : 'skipped';
    if (!(e instanceof NotFoundError)) this.log?.warn({ op: 'pushpack.load', err: errorMessage(e) }, 'push pack not used; cold reads fetch block by block');
  }

  /** Whether the pack can supply `hash` now (held, in a window in flight, or in the index). */
  has(hash: string): boolean {
    return this.held.has(hash) || this.inflight.has(hash) || this.at(hash) >= 0;
  }

  /** The index's entry for `hash`, unless the pack cannot supply it (not in it, not loaded, rejected): -1. */
  private at(hash: string): number {
    const i = this.table?.find(hash) ?? -1;
    return i >= 0 && this.marks[i] !== REJECTED ? i : -1;
  }

  /**
   * The verified bytes of block `hash` from the pack, or undefined when the pack cannot supply them (not in
   * it, index not loaded yet, window failed, hash mismatch): the caller then fetches from `blocks/`.
   */
  async fetch(hash: string): Promise<Buffer | undefined> {
    const at = this.at(hash);
    const forward = at >= 0 && this.walk(at);
    const ready = this.take(hash, at);
    const pending = ready ? undefined : (this.inflight.get(hash) ?? (at < 0 ? undefined : this.window(at)));
    if (forward) this.readAhead(at);
    if (ready) return ready;
    return pending ? this.take(hash, at, await pending) : undefined;
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
    const t = this.table as PushPackTable;
    return t.offset(to) - t.offset(from);
  }

  /** Whether entry `i` needs no read: taken, rejected, held or in flight. */
  private covered(i: number): boolean {
    if (this.marks[i] !== FRESH) return true;
    const h = (this.table as PushPackTable).hash(i);
    return this.held.has(h) || this.inflight.has(h);
  }

  /**
   * In a forward run at entry `at`: while less than `aheadWindows` windows of pack after `at` are read or
   * in flight, starts the next window (held bytes permitting).
   */
  private readAhead(at: number): void {
    const max = this.opts.aheadWindows ?? 0;
    while (this.aheadInFlight < max) {
      let next = Math.max(this.frontier, at + 1);
      const count = (this.table as PushPackTable).count;
      while (next < count && this.covered(next) && this.span(at, next) < this.opts.windowBytes * max) next++; // bounded: a re-read run is mostly covered
      this.frontier = next;
      if (next >= count || this.span(at, next) >= this.opts.windowBytes * max) return;
      if (this.heldTotal + this.opts.windowBytes * (this.aheadInFlight + 1) > this.opts.heldBytes) return;
      this.aheadInFlight++;
      this.report.ahead++;
      const done = (): void => {
        this.aheadInFlight--;
      };
      this.window(next).then(done, done);
    }
  }

  /** Held bytes of `hash` (entry `at`; removed from the held set), from `got` if given. */
  private take(hash: string, at: number, got?: Map<string, Buffer>): Buffer | undefined {
    const b = this.held.get(hash);
    if (b) {
      this.held.delete(hash);
      this.heldTotal -= b.length;
    }
    const out = b ?? got?.get(hash);
    if (out) {
      this.report.served++;
      if (at >= 0) this.marks[at] = TAKEN;
    }
    return out;
  }

  /** Reads the window starting at entry `at`; its blocks are held (the caller takes its own). */
  private window(at: number): Promise<Map<string, Buffer>> {
    const t = this.table as PushPackTable;
    const start = t.offset(at);
    const slice: Slot[] = [];
    for (let i = at; i < t.count; i++) {
      if (slice.length > 0 && t.offset(i) + t.length(i) - start > this.opts.windowBytes) break;
      const hash = t.hash(i);
      if (i > at && (this.marks[i] !== FRESH || this.held.has(hash) || this.inflight.has(hash))) break; // read already, being read, or rejected
      slice.push({ i, hash, offset: t.offset(i), length: t.length(i) });
    }
    this.frontier = Math.max(this.frontier, at + slice.length);
    const p = this.read(slice);
    for (const e of slice) this.inflight.set(e.hash, p);
    const done = (): void => {
      for (const e of slice) if (this.inflight.get(e.hash) === p) this.inflight.delete(e.hash);
    };
    p.then(done, done);
    return p;
  }

  private async read(slice: readonly Slot[]): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    const first = slice[0] as Slot;
    const last = slice[slice.length - 1] as Slot;
    let buf: Buffer;
    try {
      buf = await this.get((this.table as PushPackTable).dataStart + first.offset, last.offset + last.length - first.offset);
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
        this.marks[e.i] = REJECTED; // never asked of the pack again
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

/**
 * Reading a push pack during `homefs pull` (format: pushpack.ts). The pull asks for each block as it writes
 * files (`take`); the reader streams the pack ahead of it in ranged GETs of about `rangeBytes`,
 * `rangeParallelism` at once, in pack order (the pull's order), cuts the blocks out, verifies each by its
 * hash and holds it until every file that needs it has taken it.
 *
 * It never makes a pull wrong or stuck: `take` answers undefined (the caller fetches the block from
 * `blocks/` as without a pack, and that counts as a fallback) for a block that failed its hash, whose range
 * could not be read, or whose range is not started while the reader is stopped at its memory budget
 * (`bufferBytes` of blocks held that no file has taken yet). A pack that is missing, does not decode, or
 * belongs to another snapshot is not used at all.
 */
import { hashBuffer } from '../hash/blake3.js';
import { NotFoundError, errorMessage } from '../util/errors.js';
import { decodePushPackIndex, pushPackIndexLength, type PushPackEntry } from './pushpack.js';

export interface PushPackReadOptions {
  rangeBytes: number;
  rangeParallelism: number;
  bufferBytes: number;
}

/** What a pull took from the push pack (`homefs pull --json`, `pushPack`). */
export interface PushPackStats {
  /** A pack object exists under the home. */
  found: boolean;
  /** It decoded and belongs to the snapshot pulled. */
  used: boolean;
  /** Why it was not used (missing, another snapshot, damaged). */
  skipped?: string;
  /** Blocks the pull took from the pack, and their bytes. */
  blocks: number;
  bytes: number;
  /** Blocks in the pack's index that the pull fetched from `blocks/` instead (damaged, unreadable, or not read yet at the memory budget). */
  fallbacks: number;
  /** Ranged GETs of the pack, and the bytes they returned. */
  requests: number;
  bytesFetched: number;
}

export function emptyPushPackStats(): PushPackStats {
  return { found: false, used: false, blocks: 0, bytes: 0, fallbacks: 0, requests: 0, bytesFetched: 0 };
}

interface Range {
  entries: PushPackEntry[];
  state: 'idle' | 'busy' | 'done';
  /** Settles when the range is done, or when its waiters are let go at the memory budget. */
  ready: Promise<void>;
  release: () => void;
}

type Get = (offset: number, length: number) => Promise<Buffer>;

function newRange(entries: PushPackEntry[]): Range {
  let release = (): void => undefined;
  const ready = new Promise<void>((r) => (release = r));
  return { entries, state: 'idle', ready, release };
}

/** Entries (ascending offsets) grouped into ranges spanning at most `rangeBytes` (a longer block is a range alone). */
export function groupRanges(entries: readonly PushPackEntry[], rangeBytes: number): PushPackEntry[][] {
  const out: PushPackEntry[][] = [];
  let cur: PushPackEntry[] = [];
  for (const e of entries) {
    const first = cur[0];
    if (first && e.offset + e.length - first.offset > rangeBytes) {
      out.push(cur);
      cur = [];
    }
    cur.push(e);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

export class PushPackReader {
  readonly stats: PushPackStats;
  private readonly where = new Map<string, Range>();
  private readonly held = new Map<string, Buffer>();
  private heldBytes = 0;
  private ranges: Range[] = [];
  private next = 0;
  private busy = 0;
  private needs: Map<string, number> | null = null;

  private constructor(
    private readonly get: Get,
    private readonly dataStart: number,
    private readonly opts: PushPackReadOptions,
    stats: PushPackStats,
  ) {
    this.stats = stats;
  }

  /**
   * Reads the pack's first range (header, index, first blocks) and the rest of the index if it is longer.
   * Returns a reader that has started streaming the rest, or null when the pack is missing, damaged, or of
   * another snapshot than `snapshot`; `stats` says which. Only a store error other than "not found" throws.
   */
  static async open(get: Get, snapshot: string, opts: PushPackReadOptions, stats: PushPackStats = emptyPushPackStats()): Promise<PushPackReader | null> {
    let head: Buffer;
    stats.requests++;
    try {
      head = await get(0, opts.rangeBytes);
    } catch (e) {
      if (e instanceof NotFoundError) {
        stats.skipped = 'none';
        return null;
      }
      throw e;
    }
    stats.found = true;
    stats.bytesFetched += head.length;
    let index;
    try {
      const indexEnd = pushPackIndexLength(head);
      if (head.length < indexEnd) {
        stats.requests++;
        const more = await get(head.length, indexEnd - head.length);
        stats.bytesFetched += more.length;
        head = Buffer.concat([head, more]);
      }
      index = decodePushPackIndex(head);
      // A first read shorter than asked ends the object: it must hold all the data the header announces.
      if (head.length < opts.rangeBytes && head.length < index.dataStart + index.dataBytes) {
        throw new Error(`${head.length} bytes where the header says ${index.dataStart + index.dataBytes} (truncated)`);
      }
    } catch (e) {
      stats.skipped = `damaged: ${errorMessage(e)}`;
      return null;
    }
    if (index.snapshot !== snapshot) {
      stats.skipped = `of another snapshot (${index.snapshot.slice(0, 12)})`;
      return null;
    }
    stats.used = true;
    const reader = new PushPackReader(get, index.dataStart, opts, stats);
    const inHead = head.length - index.dataStart;
    const first = index.entries.filter((e) => e.offset + e.length <= inHead);
    const rest = index.entries.filter((e) => e.offset + e.length > inHead);
    const firstRange = newRange(first);
    firstRange.state = 'done';
    firstRange.release();
    reader.ranges = [firstRange, ...groupRanges(rest, opts.rangeBytes).map(newRange)];
    reader.next = 1;
    for (const r of reader.ranges) for (const e of r.entries) if (!reader.where.has(e.hash)) reader.where.set(e.hash, r);
    reader.cut(head.subarray(index.dataStart), 0, first);
    reader.pump();
    return reader;
  }

  /**
   * How many times the pull will take each block (a block of several files is held until the last takes
   * it). Blocks held that nobody needs are dropped; until this is called every verified block is held.
   */
  setNeeds(needs: Map<string, number>): void {
    this.needs = new Map();
    for (const [h, n] of needs) if (this.where.has(h)) this.needs.set(h, n);
    for (const h of [...this.held.keys()]) if (!this.needs.has(h)) this.drop(h);
    this.pump();
  }

  /** Block `hash`, verified, if the pack has it; undefined: fetch it from `blocks/`. */
  async take(hash: string): Promise<Buffer | undefined> {
    const range = this.where.get(hash);
    if (!range) return undefined;
    if (range.state === 'idle' && this.stalled()) return this.missed(hash);
    await range.ready;
    const data = this.held.get(hash);
    if (!data) return this.missed(hash);
    this.used(hash);
    this.stats.blocks++;
    this.stats.bytes += data.length;
    return data;
  }

  private missed(hash: string): undefined {
    this.used(hash);
    this.stats.fallbacks++;
    return undefined;
  }

  /** One of the block's takers is served (from the pack or not): the last one frees it. */
  private used(hash: string): void {
    const n = (this.needs?.get(hash) ?? 1) - 1;
    if (n > 0) {
      this.needs?.set(hash, n);
      return;
    }
    this.needs?.delete(hash);
    this.drop(hash);
    this.pump();
  }

  private drop(hash: string): void {
    const d = this.held.get(hash);
    if (!d) return;
    this.held.delete(hash);
    this.heldBytes -= d.length;
  }

  private wanted(hash: string): boolean {
    return this.needs === null ? true : (this.needs.get(hash) ?? 0) > 0;
  }

  /** At the memory budget with nothing in flight: nothing will free memory but a taker. */
  private stalled(): boolean {
    return this.busy === 0 && this.next < this.ranges.length && this.heldBytes >= this.opts.bufferBytes;
  }

  private pump(): void {
    while (this.busy < this.opts.rangeParallelism && this.next < this.ranges.length && this.heldBytes < this.opts.bufferBytes) {
      const range = this.ranges[this.next++] as Range;
      if (this.needs !== null && !range.entries.some((e) => this.wanted(e.hash))) {
        range.state = 'done';
        range.release();
        continue;
      }
      this.busy++;
      range.state = 'busy';
      void this.fetch(range);
    }
    if (this.stalled()) {
      // Takers waiting for ranges not started would wait for memory only they can free: let them go.
      for (let i = this.next; i < this.ranges.length; i++) {
        const r = this.ranges[i] as Range;
        r.release();
        const fresh = newRange(r.entries);
        r.ready = fresh.ready;
        r.release = fresh.release;
      }
    }
  }

  private async fetch(range: Range): Promise<void> {
    const first = range.entries[0];
    const last = range.entries[range.entries.length - 1];
    try {
      if (first && last) {
        this.stats.requests++;
        const data = await this.get(this.dataStart + first.offset, last.offset + last.length - first.offset);
        this.stats.bytesFetched += data.length;
        this.cut(data, first.offset, range.entries);
      }
    } catch {
      // (its blocks are not held: their takers fetch them from blocks/)
    } finally {
      range.state = 'done';
      this.busy--;
      range.release();
      this.pump();
    }
  }

  /**
   * Holds each wanted block found in `data` (which starts at data offset `at`) whose bytes match its hash.
   * A block one file takes is held as a view of `data` (no copy: the files take a range's blocks about
   * together, and then the range is freed); a block several files take, or any before `setNeeds`, is
   * copied, so that a late taker does not keep its whole range alive.
   */
  private cut(data: Buffer, at: number, entries: readonly PushPackEntry[]): void {
    for (const e of entries) {
      if (!this.wanted(e.hash) || this.held.has(e.hash)) continue;
      const piece = data.subarray(e.offset - at, e.offset - at + e.length);
      if (piece.length !== e.length || hashBuffer(piece) !== e.hash) continue;
      const block = this.needs?.get(e.hash) === 1 ? piece : Buffer.from(piece);
      this.held.set(e.hash, block);
      this.heldBytes += block.length;
    }
  }
}

/**
 * The push pack (pushpack.ts has the format) written while `homefs push` reads the files, from the bytes it
 * has just read and hashed for `blocks/`: no second read, no second hash, and never the whole pack in memory.
 *
 * Push hands over each file's small blocks when it is done with the file (`offer`, by the file's position
 * in pull order, its *slot*). Files finish out of order (64 at once), so blocks wait here until every
 * earlier slot has arrived, then go to the pack in pull order. The wait is bounded: once more than
 * `reorderBytes` wait, the earliest slot still missing (a large file still being read) is given up, its
 * blocks left out of the pack when they come (`late`; a pull fetches them from `blocks/`).
 *
 * On a store with multipart uploads (S3) the data after the first part goes up in parts of `partBytes`
 * as it fills, at most `partsInFlight` at once (a file that would start one more waits: push's
 * backpressure). Part 1 is uploaded last: header and index go in front of the data and name the snapshot,
 * which exists only once HEAD moved, so part 1 holds them and the first `minPartBytes` of data (S3's
 * smallest part). `finish(snapshot)` uploads it and completes the upload; until then nothing is visible
 * under the key. A pack that fits in part 1 and one part (or a store without multipart uploads, which
 * holds all of it) is written with one put.
 *
 * The pack is a hint: any failure is reported in the result (`written` false) and the upload aborted;
 * `abort()` (a push that fails) drops it. Neither ever throws.
 */
import type { Store, Uploads } from '../store/store.js';
import { errorMessage } from '../util/errors.js';
import { MAX_BLOCK, MAX_BLOCKS, MAX_DATA, pushPackDataStart, writePushPackHead, type PushPackEntry } from './pushpack.js';

/** A block of a pushed file, as push read and hashed it. */
export interface PackBlock {
  hash: string;
  data: Buffer;
}

/** The push pack written after HEAD moved: its blocks and length, or why it is not there (the push succeeded either way). */
export interface PushPackResult {
  written: boolean;
  blocks: number;
  bytes: number;
  /** Blocks left out because their file was read too late for the pack's order (they go block by block). */
  late: number;
  error?: string;
}

export interface PackWriterOptions {
  /** Blocks up to this size go into the pack. */
  blockMax: number;
  /** The pack holds blocks up to this many bytes in all (the first ones in pull order). */
  maxBytes: number;
  /** Parts of this size (at least the store's smallest). */
  partBytes: number;
  partsInFlight: number;
  /** Blocks waiting for earlier files, at most (then the earliest missing file is left out). */
  reorderBytes: number;
}

export class PushPackWriter {
  private readonly uploads: Uploads | undefined;
  private readonly blockMax: number;
  private readonly maxBytes: number;
  private readonly partBytes: number;
  /** Data held for part 1 (all of it on a store without uploads). */
  private readonly firstCap: number;
  private readonly first: Buffer[] = [];
  private firstLen = 0;
  /** The part being filled (number `nextPart`). */
  private part: Buffer | null = null;
  private partLen = 0;
  private nextPart = 2;
  /** ETags by part number - 1. */
  private readonly etags: string[] = [];
  private upload: Promise<string> | null = null;
  private readonly inflight = new Set<Promise<void>>();
  /** The next slot to go into the pack; earlier ones are in or given up. */
  private next = 0;
  private readonly waiting = new Map<number, readonly PackBlock[]>();
  private waitingBytes = 0;
  private readonly seen = new Set<string>();
  private readonly entries: PushPackEntry[] = [];
  private dataBytes = 0;
  private full = false;
  private late = 0;
  private error: string | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly key: string,
    private readonly slots: number,
    private readonly opts: PackWriterOptions,
  ) {
    this.uploads = store.uploads;
    this.blockMax = Math.min(opts.blockMax, MAX_BLOCK);
    this.maxBytes = Math.min(opts.maxBytes, MAX_DATA);
    this.partBytes = Math.max(opts.partBytes, this.uploads?.minPartBytes ?? 0);
    this.firstCap = this.uploads ? this.uploads.minPartBytes : Infinity;
  }

  /**
   * The small blocks of the file in `slot` (each slot once; none if the file was left out). Resolves when
   * the pack can take more (fewer than `partsInFlight` parts uploading).
   */
  async offer(slot: number, blocks: readonly PackBlock[]): Promise<void> {
    if (this.error !== null || this.closed) return;
    if (slot < this.next) {
      this.late += blocks.length; // given up on
      return;
    }
    this.waiting.set(slot, blocks);
    this.waitingBytes += bytesOf(blocks);
    this.drain(this.opts.reorderBytes);
    while (this.inflight.size >= this.opts.partsInFlight && this.error === null) await Promise.race(this.inflight);
  }

  /** Takes waiting slots in order; gives up missing ones while more than `budget` bytes wait. */
  private drain(budget: number): void {
    while (this.next < this.slots) {
      const blocks = this.waiting.get(this.next);
      if (blocks === undefined) {
        if (this.waitingBytes <= budget) return;
        this.next++;
        continue;
      }
      this.waiting.delete(this.next);
      this.waitingBytes -= bytesOf(blocks);
      this.next++;
      for (const b of blocks) this.take(b);
    }
  }

  private take(b: PackBlock): void {
    const length = b.data.length;
    if (this.full || length < 1 || length > this.blockMax || this.seen.has(b.hash)) return;
    if (this.dataBytes + length > this.maxBytes || this.entries.length >= MAX_BLOCKS) {
      this.full = true;
      return;
    }
    this.seen.add(b.hash);
    this.entries.push({ hash: b.hash, offset: this.dataBytes, length });
    this.dataBytes += length;
    this.append(b.data);
  }

  private append(data: Buffer): void {
    let at = 0;
    while (at < data.length) {
      if (this.firstLen < this.firstCap) {
        const n = Math.min(data.length - at, this.firstCap - this.firstLen);
        this.first.push(Buffer.from(data.subarray(at, at + n))); // a copy: `data` may share a pool slab
        this.firstLen += n;
        at += n;
        continue;
      }
      this.part ??= Buffer.allocUnsafeSlow(this.partBytes);
      const n = Math.min(data.length - at, this.partBytes - this.partLen);
      data.copy(this.part, this.partLen, at, at + n);
      this.partLen += n;
      at += n;
      if (this.partLen === this.partBytes) this.sendPart();
    }
  }

  /** Uploads the part being filled (starting the upload with the first one). */
  private sendPart(): void {
    const uploads = this.uploads;
    if (!uploads || !this.part) return;
    const data = this.part.subarray(0, this.partLen);
    const n = this.nextPart++;
    this.part = null;
    this.partLen = 0;
    this.upload ??= uploads.start(this.key);
    const sent: Promise<void> = this.upload
      .then((id) => uploads.part(this.key, id, n, data))
      .then(
        (etag) => {
          this.etags[n - 1] = etag;
        },
        (e: unknown) => this.fail(e),
      )
      .finally(() => this.inflight.delete(sent));
    this.inflight.add(sent);
  }

  private fail(e: unknown): void {
    this.error ??= errorMessage(e);
    this.waiting.clear();
    this.first.length = 0;
    this.part = null;
  }

  /** Writes the pack as the one of `snapshot` (HEAD has moved to it). Never throws. */
  async finish(snapshot: string): Promise<PushPackResult> {
    this.drain(-1); // a slot never offered (none after a complete content pass) is left out
    this.closed = true;
    try {
      if (this.error !== null) throw new Error(this.error);
      const start = pushPackDataStart(this.entries.length);
      if (this.upload === null) {
        // Never more than part 1 and one part: one put.
        const pack = Buffer.allocUnsafeSlow(start + this.dataBytes);
        this.fillFirst(pack, snapshot);
        this.part?.copy(pack, start + this.firstLen, 0, this.partLen);
        this.part = null;
        await this.store.put(this.key, pack);
      } else {
        const uploads = this.uploads as Uploads;
        if (this.partLen > 0) this.sendPart(); // the last part may be shorter
        while (this.inflight.size > 0) await Promise.race(this.inflight);
        if (this.error !== null) throw new Error(this.error);
        const id = await this.upload;
        const part1 = Buffer.allocUnsafeSlow(start + this.firstLen);
        this.fillFirst(part1, snapshot);
        this.etags[0] = await uploads.part(this.key, id, 1, part1);
        await uploads.complete(this.key, id, this.etags);
        this.upload = null;
      }
      return { written: true, blocks: this.entries.length, bytes: start + this.dataBytes, late: this.late };
    } catch (e) {
      this.fail(e);
      await this.abort();
      return { written: false, blocks: 0, bytes: 0, late: this.late, error: this.error ?? errorMessage(e) };
    }
  }

  /** Header, index and the data held for part 1, into the start of `buf`. */
  private fillFirst(buf: Buffer, snapshot: string): void {
    writePushPackHead(buf, snapshot, this.entries, this.dataBytes);
    let at = pushPackDataStart(this.entries.length);
    for (const chunk of this.first) at += chunk.copy(buf, at);
    this.first.length = 0;
  }

  /** Drops the pack: no more blocks, parts in flight awaited, the upload aborted (best effort). Never throws. */
  async abort(): Promise<void> {
    this.closed = true;
    this.error ??= 'aborted';
    this.waiting.clear();
    while (this.inflight.size > 0) await Promise.race(this.inflight);
    const upload = this.upload;
    this.upload = null;
    if (upload && this.uploads) {
      const id = await upload.catch(() => null);
      if (id !== null) await this.uploads.abort(this.key, id).catch(() => undefined);
    }
  }
}

function bytesOf(blocks: readonly PackBlock[]): number {
  let n = 0;
  for (const b of blocks) n += b.data.length;
  return n;
}

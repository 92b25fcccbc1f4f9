/**
 * The journal's redo log: an append-only file of committed batches, each written with one pwrite(2),
 * so that a batch is durable against a kill -9 of the daemon (its bytes are in the page cache) without an
 * LMDB commit of its own. The journal copies what the log holds into LMDB in bulk now and then (a
 * checkpoint: one LMDB transaction for many batches, each key written once), then empties the log; at
 * open it applies whatever the log still holds (journal.ts).
 *
 * Record: `u32 length of the payload | u32 crc32 of seq and payload | f64 seq | payload`, little-endian;
 * the payload is MessagePack (msgpackr, the encoder LMDB uses, without shared structures) of a flat array
 * `[table, key, value, …]`, where a removal is `[table + REMOVE, key, 0]` (null is a value). `seq` increases by one per batch over the journal's life; the checkpoint records the
 * last seq it applied in LMDB, so a record the log still holds from before a checkpoint (an emptying lost
 * with the host) is never applied again over newer state. Reading stops at the first record that is torn
 * or does not check: only the last write can be torn (each write starts where the last valid one ends,
 * and a failed write is cut off before the next), so nothing after it was ever replied to.
 */
import { closeSync, constants, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';

const HEADER = 16;
/** Added to the table number of a removal. */
const REMOVE = 16;
/** Self-contained records (no structures kept elsewhere); typed arrays, bigints and Buffers come back as they went in. */
const packr = new Packr({ useRecords: false, moreTypes: true });

/** One write of a batch: the table's index, its key, the value (undefined: remove). */
export interface RedoWrite {
  table: number;
  key: unknown;
  value: unknown;
}

export interface RedoBatch {
  seq: number;
  writes: RedoWrite[];
}

/** Test fault injection: called with the bytes of a record before they are written; may write part and die. */
export type TearHook = (fd: number, record: Buffer, at: number) => void;

export class RedoLog {
  private readonly fd: number;
  private end = 0;
  private broken: Error | undefined;

  /** Opens (creating) the log at `path`; `readAll` first if its batches are needed, then `reset`. */
  constructor(readonly path: string) {
    this.fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
    this.reset();
  }

  /** The batches a log file holds, in order, up to the first torn or damaged record. */
  static readAll(path: string): RedoBatch[] {
    let buf: Buffer;
    try {
      buf = readFileSync(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out: RedoBatch[] = [];
    let at = 0;
    while (at + HEADER <= buf.length) {
      const len = buf.readUInt32LE(at);
      const end = at + HEADER + len;
      if (end > buf.length) break;
      if (crc32(buf.subarray(at + 8, end)) !== buf.readUInt32LE(at + 4)) break;
      const seq = buf.readDoubleLE(at + 8);
      const flat = packr.unpack(buf.subarray(at + HEADER, end)) as unknown[];
      const writes: RedoWrite[] = [];
      for (let i = 0; i + 2 < flat.length; i += 3) {
        const t = flat[i] as number;
        writes.push(t >= REMOVE ? { table: t - REMOVE, key: flat[i + 1], value: undefined } : { table: t, key: flat[i + 1], value: flat[i + 2] });
      }
      out.push({ seq, writes });
      at = end;
    }
    return out;
  }

  /** Bytes the log holds. */
  get bytes(): number {
    return this.end;
  }

  /**
   * Appends one batch with one write. Throws (and leaves the log as it was) if it cannot be written
   * whole; after a failure that could not be cut off, every later append throws.
   */
  append(seq: number, writes: readonly RedoWrite[], tear?: TearHook): void {
    if (this.broken) throw this.broken;
    const flat: unknown[] = new Array(writes.length * 3);
    for (let i = 0; i < writes.length; i++) {
      const w = writes[i] as RedoWrite;
      const gone = w.value === undefined;
      flat[i * 3] = gone ? w.table + REMOVE : w.table;
      flat[i * 3 + 1] = w.key;
      flat[i * 3 + 2] = gone ? 0 : w.value;
    }
    const payload = packr.pack(flat);
    const rec = Buffer.allocUnsafe(HEADER + payload.length);
    rec.writeUInt32LE(payload.length, 0);
    rec.writeDoubleLE(seq, 8);
    payload.copy(rec, HEADER);
    rec.writeUInt32LE(crc32(rec.subarray(8)), 4);
    if (tear) tear(this.fd, rec, this.end);
    let written = 0;
    try {
      written = writeSync(this.fd, rec, 0, rec.length, this.end);
    } catch (e) {
      this.cutBack();
      throw e;
    }
    if (written !== rec.length) {
      this.cutBack();
      throw Object.assign(new Error(`redo log: short write (${written} of ${rec.length} bytes)`), { code: 'ENOSPC' });
    }
    this.end += rec.length;
  }

  /** Empties the log (after its batches reached LMDB). */
  reset(): void {
    ftruncateSync(this.fd, 0);
    this.end = 0;
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Removes a partly written record, so that the next append starts right after the last whole one. */
  private cutBack(): void {
    try {
      ftruncateSync(this.fd, this.end);
    } catch (e) {
      this.broken = new Error(`redo log ${this.path} cannot be cut back after a failed write: ${(e as Error).message}`);
    }
  }
}

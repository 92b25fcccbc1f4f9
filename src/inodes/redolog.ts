/**
 * The journal's redo log: an append-only file of committed batches, each in the page cache as soon as it is
 * appended, so that a batch is durable against a kill -9 of the daemon without an LMDB commit of its own.
 * The file's first MAPPED_BYTES are allocated and mapped shared (util/files-addon.ts `mapFile`): an append
 * is a copy into the mapping, where a pwrite(2) cost a system call per reply that changed anything (on
 * this VM a few microseconds each, docs/benchmarks.md, "2. The write path"). A batch that does not fit in
 * the mapping, or a log on a file system that cannot allocate ahead, is written with one pwrite. The journal copies what the log holds into LMDB in bulk now and then (a
 * checkpoint: one LMDB transaction for many batches, each key written once), then empties the log; at
 * open it applies whatever the log still holds (journal.ts).
 *
 * Record: `u32 length of the payload | u32 crc32 of seq and payload | f64 seq | payload`, little-endian;
 * the payload is MessagePack (msgpackr, the encoder LMDB uses, without shared structures) of a flat array
 * `[table, key, value, …]`, where a removal is `[table + REMOVE, key, 0]` (null is a value). `seq` increases by one per batch over the journal's life; the checkpoint records the
 * last seq it applied in LMDB, so a record the log still holds from before a checkpoint (an emptying lost
 * with the host) is never applied again over newer state. Reading stops at the first record that is torn
 * or does not check: only the last write can be torn (each write starts where the last valid one ends,
 * and a failed write is cut off before the next), so nothing after it was ever replied to. Emptying a
 * mapped log zeroes its first header (the mapping must not be truncated under it), so what follows the
 * newest records can be an older generation's: reading also stops at a record whose seq is not above
 * the one before it.
 */
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import { filesAddon } from '../util/files-addon.js';

const HEADER = 16;
/** Added to the table number of a removal. */
const REMOVE = 16;
/** The part of the log that is mapped: twice the journal's checkpoint threshold (it empties the log there). */
export const MAPPED_BYTES = 8 * 1024 * 1024;
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
  /** The mapped first MAPPED_BYTES of the file; undefined: every append is a pwrite. */
  private readonly map: Buffer | undefined;
  private end = 0;
  private broken: Error | undefined;

  /**
   * Opens (creating) the log at `path`, empty; `readAll` first if its batches are needed. `mapped: false`
   * writes every batch with a pwrite.
   */
  constructor(readonly path: string, opts: { mapped?: boolean } = {}) {
    this.fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
    const m = opts.mapped === false ? -1 : filesAddon().mapFile(this.fd, MAPPED_BYTES);
    this.map = typeof m === 'number' ? undefined : Buffer.from(m);
    this.reset();
  }

  /** Whether appends are copies into a mapping (else pwrites). */
  get mapped(): boolean {
    return this.map !== undefined;
  }

  /** The batches a log file holds, in order, up to the first torn or damaged record. */
  static readAll(path: string): RedoBatch[] {
    let file: LogFile;
    try {
      file = new LogFile(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    try {
      return RedoLog.parse(file);
    } finally {
      file.close();
    }
  }

  private static parse(file: LogFile): RedoBatch[] {
    const out: RedoBatch[] = [];
    let at = 0;
    let last = -Infinity;
    while (file.has(at + HEADER)) {
      const len = file.buf.readUInt32LE(at);
      const end = at + HEADER + len;
      if (len === 0 || !file.has(end)) break;
      const buf = file.buf; // (grown by has())
      if (crc32(buf.subarray(at + 8, end)) !== buf.readUInt32LE(at + 4)) break;
      const seq = buf.readDoubleLE(at + 8);
      if (seq <= last) break; // an older generation's record, after the newest (see the module comment)
      last = seq;
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
    const map = this.map;
    if (map && this.end + rec.length <= map.length) {
      rec.copy(map, this.end);
      this.end += rec.length;
      return;
    }
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
    if (this.map) {
      if (this.end > this.map.length) ftruncateSync(this.fd, this.map.length);
      this.map.fill(0, 0, HEADER);
    } else {
      ftruncateSync(this.fd, 0);
    }
    this.end = 0;
  }

  close(): void {
    closeSync(this.fd);
  }

  /**
   * Removes a partly written record, so that the next append starts right after the last whole one (a
   * mapped log is never cut below its mapping: the part of the record inside it loses its length instead).
   */
  private cutBack(): void {
    try {
      const map = this.map;
      if (map && this.end < map.length) map.fill(0, this.end, Math.min(this.end + HEADER, map.length));
      ftruncateSync(this.fd, map ? Math.max(this.end, map.length) : this.end);
    } catch (e) {
      this.broken = new Error(`redo log ${this.path} cannot be cut back after a failed write: ${(e as Error).message}`);
    }
  }
}

/**
 * A log file read from its start as far as the records go, not further: a mapped log is MAPPED_BYTES long
 * whatever it holds, and most of it is an older generation's records or never written.
 */
class LogFile {
  private readonly fd: number;
  private readonly size: number;
  buf = Buffer.alloc(64 * 1024);
  private filled = 0;
  private eof = false;

  constructor(path: string) {
    this.fd = openSync(path, constants.O_RDONLY);
    this.size = fstatSync(this.fd).size;
  }

  /**
   * Whether the file holds at least `n` bytes; `buf` then holds them. (A length read from an older
   * generation's bytes can be anything: nothing is read for one that passes the end of the file.)
   */
  has(n: number): boolean {
    if (n > this.size) return false;
    while (this.filled < n && !this.eof) {
      if (this.buf.length < n) {
        const grown = Buffer.alloc(Math.max(n, this.buf.length * 2));
        this.buf.copy(grown, 0, 0, this.filled);
        this.buf = grown;
      }
      const got = readSync(this.fd, this.buf, this.filled, this.buf.length - this.filled, this.filled);
      if (got === 0) this.eof = true;
      this.filled += got;
    }
    return this.filled >= n;
  }

  close(): void {
    closeSync(this.fd);
  }
}

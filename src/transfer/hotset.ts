/**
 * The hot-set record of a home (docs/format.md, "Hot set and wake pack"): which trees and blocks the last
 * session read, in first-access order, and which of them its wake pack holds. A mount writes it at seals
 * and at sleep; the next mount of the home, on any host, streams those objects into its cache before the
 * agent asks for them.
 *
 * Both objects are hints, never trusted: every object cut out of the pack is verified by its hash like any
 * other fetch, a record that does not decode is ignored, and a missing one means a cold wake. So deleting
 * or damaging them makes a wake slower, never wrong. They live under the home's own keys (keys.ts), are
 * replaced whole by each writer, and reference nothing a commit or gc relies on (see gc.ts).
 *
 * Encoding, version 1 (binary, little-endian, no padding):
 *   magic "HFHS", version u8 = 1, snapshot 32 bytes (raw id; zeros when none), packBytes u64,
 *   count u32 (≤ MAX_ENTRIES), then per entry: kind u8 (1 block, 2 tree), flags u8 (bit 0: in the pack;
 *   other bits zero), size u32, hash 32 bytes.
 * Packed entries lie in the pack back to back, in record order; packBytes is the sum of their sizes.
 */
import { hashBuffer } from '../hash/blake3.js';
import { mapLimit } from '../util/concurrency.js';
import { FormatError } from '../util/errors.js';

export const HOTSET_VERSION = 1;
/** Entries a record holds at most (about 38 MB). */
export const MAX_ENTRIES = 1_000_000;
const MAGIC = Buffer.from('HFHS');
const HEADER = 4 + 1 + 32 + 8 + 4;
const ENTRY = 1 + 1 + 4 + 32;
/** Largest object a record may name (a tree can exceed a block; 4 GiB - 1 is the field's limit). */
const MAX_SIZE = 0xffff_ffff;

export type HotKind = 'block' | 'meta';

export interface HotEntry {
  kind: HotKind;
  hash: string;
  /** Bytes of the object. */
  size: number;
  /** Held in the wake pack. */
  packed: boolean;
}

export interface HotSetRecord {
  /** The snapshot the session was on when the record was written (null: none yet). */
  snapshot: string | null;
  /** Length of the wake pack this record describes (0: no pack). */
  packBytes: number;
  entries: HotEntry[];
}

/** A packed entry's place in the pack. */
export interface PackSlice {
  entry: HotEntry;
  offset: number;
}

const HEX = /^[0-9a-f]{64}$/;

export function encodeHotSet(r: HotSetRecord): Buffer {
  if (r.entries.length > MAX_ENTRIES) throw new Error(`hot set of ${r.entries.length} entries exceeds ${MAX_ENTRIES}`);
  const packed = r.entries.reduce((n, e) => n + (e.packed ? e.size : 0), 0);
  if (packed !== r.packBytes) throw new Error(`hot set: packBytes ${r.packBytes} is not the sum of the packed sizes (${packed})`);
  const buf = Buffer.alloc(HEADER + ENTRY * r.entries.length);
  MAGIC.copy(buf, 0);
  buf.writeUInt8(HOTSET_VERSION, 4);
  if (r.snapshot !== null) writeHash(buf, 5, r.snapshot);
  buf.writeBigUInt64LE(BigInt(r.packBytes), 37);
  buf.writeUInt32LE(r.entries.length, 45);
  let at = HEADER;
  for (const e of r.entries) {
    if (!Number.isInteger(e.size) || e.size < 0 || e.size > MAX_SIZE) throw new Error(`hot set: bad size ${e.size}`);
    buf.writeUInt8(e.kind === 'block' ? 1 : 2, at);
    buf.writeUInt8(e.packed ? 1 : 0, at + 1);
    buf.writeUInt32LE(e.size, at + 2);
    writeHash(buf, at + 6, e.hash);
    at += ENTRY;
  }
  return buf;
}

function writeHash(buf: Buffer, at: number, hash: string): void {
  if (!HEX.test(hash)) throw new Error(`hot set: not a hash: ${hash}`);
  buf.write(hash, at, 32, 'hex');
}

/** Decodes and validates a record; anything malformed or of another version is a FormatError. */
export function decodeHotSet(buf: Buffer, what = 'hot-set record'): HotSetRecord {
  const bad = (detail: string): never => {
    throw new FormatError(what, detail);
  };
  if (buf.length < HEADER) bad(`${buf.length} bytes is shorter than the header`);
  if (!buf.subarray(0, 4).equals(MAGIC)) bad('wrong magic');
  const version = buf.readUInt8(4);
  if (version !== HOTSET_VERSION) bad(`version ${version} is not supported (this homefs reads version ${HOTSET_VERSION})`);
  const snapRaw = buf.subarray(5, 37);
  const snapshot = snapRaw.every((b) => b === 0) ? null : snapRaw.toString('hex');
  const packBig = buf.readBigUInt64LE(37);
  if (packBig > BigInt(Number.MAX_SAFE_INTEGER)) bad('pack length out of range');
  const packBytes = Number(packBig);
  const count = buf.readUInt32LE(45);
  if (count > MAX_ENTRIES) bad(`${count} entries exceed ${MAX_ENTRIES}`);
  if (buf.length !== HEADER + ENTRY * count) bad(`length ${buf.length} does not match ${count} entries`);
  const entries: HotEntry[] = [];
  let packed = 0;
  for (let i = 0, at = HEADER; i < count; i++, at += ENTRY) {
    const k = buf.readUInt8(at);
    if (k !== 1 && k !== 2) bad(`entry ${i}: unknown kind ${k}`);
    const flags = buf.readUInt8(at + 1);
    if ((flags & ~1) !== 0) bad(`entry ${i}: unknown flags ${flags}`);
    const size = buf.readUInt32LE(at + 2);
    const e: HotEntry = { kind: k === 1 ? 'block' : 'meta', hash: buf.toString('hex', at + 6, at + 38), size, packed: (flags & 1) === 1 };
    if (e.packed) packed += size;
    entries.push(e);
  }
  if (packed !== packBytes) bad(`pack length ${packBytes} is not the sum of the packed sizes (${packed})`);
  return { snapshot, packBytes, entries };
}

/** Where each packed entry lies in the pack, in pack order. */
export function packLayout(r: HotSetRecord): PackSlice[] {
  const out: PackSlice[] = [];
  let offset = 0;
  for (const entry of r.entries) {
    if (!entry.packed) continue;
    out.push({ entry, offset });
    offset += entry.size;
  }
  return out;
}

/**
 * Slices (in pack order, some possibly left out) grouped into contiguous ranges of about `rangeBytes` (an
 * entry is never split, a gap starts a new range), each fetched with one ranged GET. The first range holds
 * about `firstBytes`: a small one arrives in about one round trip, while the larger ones still stream.
 */
export function packRanges(slices: readonly PackSlice[], rangeBytes: number, firstBytes = rangeBytes): PackSlice[][] {
  const out: PackSlice[][] = [];
  let cur: PackSlice[] = [];
  let bytes = 0;
  let end = 0;
  for (const s of slices) {
    if (cur.length > 0 && (bytes + s.entry.size > (out.length === 0 ? firstBytes : rangeBytes) || s.offset !== end)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(s);
    bytes += s.entry.size;
    end = s.offset + s.entry.size;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Where the objects cut out of a pack go (fetchPackSlices). */
export interface SliceSink {
  /** Whether the object is still wanted (checked just before it is verified; default: yes). */
  wants?(entry: HotEntry): boolean;
  /**
   * An object whose bytes matched its hash: a view of the range's buffer, not a copy. A copy per object cost
   * the daemon's thread more than hashing did during a wake (fresh small allocations, and the collections
   * they bring on); a view keeps its range alive while any of the range's objects is held, which bounds the
   * extra memory by the bytes fetched (docs/decisions/0060-claim-before-imports.md).
   */
  good(entry: HotEntry, data: Buffer): void;
  /** An object that did not match its hash, or whose range could not be read (`err`). */
  bad(entry: HotEntry, err?: unknown): void;
  /**
   * With `pause`: a range's bytes arrived (`data` starts at pack offset `at`), before any of its objects is
   * cut out; a sink can serve one of them at once to a reader that cannot wait for its turn.
   */
  arrived?(slices: readonly PackSlice[], data: Buffer, at: number): void;
}

/**
 * Fetches slices of a pack with `get` (a ranged GET of the pack; `base` is added to every slice offset),
 * grouped by packRanges into ranges of about `rangeBytes`, `parallelism` at once; each object is verified
 * by hash before it reaches the sink. Never throws for a failed range: its objects go to `bad`. With
 * `pause` (util/slicer.ts), a range's objects are cut out a time slice at a time, so that a range of
 * thousands of small objects does not hold the event loop (and the FUSE requests waiting on it).
 */
export async function fetchPackSlices(
  get: (offset: number, length: number) => Promise<Buffer>,
  slices: readonly PackSlice[],
  opts: { base?: number; rangeBytes: number; firstRangeBytes?: number; parallelism: number; pause?: () => Promise<void> },
  sink: SliceSink,
): Promise<void> {
  await mapLimit(packRanges(slices, opts.rangeBytes, opts.firstRangeBytes), opts.parallelism, async (range) => {
    const first = range[0];
    const last = range[range.length - 1];
    if (!first || !last) return;
    let data: Buffer;
    try {
      data = await get((opts.base ?? 0) + first.offset, last.offset + last.entry.size - first.offset);
    } catch (e) {
      for (const s of range) sink.bad(s.entry, e);
      return;
    }
    await cutSlices(data, first.offset, range, sink, opts.pause);
  });
}

/**
 * Hands each slice found in `data` (which starts at pack offset `at`) to the sink, verified by hash: at once,
 * or with `pause` before each one (the sink hears first that the range `arrived`).
 */
export async function cutSlices(data: Buffer, at: number, slices: readonly PackSlice[], sink: SliceSink, pause?: () => Promise<void>): Promise<void> {
  if (!pause) {
    for (const s of slices) cutSlice(data, at, s, sink);
    return;
  }
  sink.arrived?.(slices, data, at);
  for (const s of slices) {
    await pause();
    cutSlice(data, at, s, sink);
  }
}

/** Cuts one object out of `data` (which starts at pack offset `at`) into the sink, verified by hash. */
export function cutSlice(data: Buffer, at: number, s: PackSlice, sink: SliceSink): void {
  if (sink.wants && !sink.wants(s.entry)) return;
  const piece = data.subarray(s.offset - at, s.offset - at + s.entry.size);
  if (piece.length === s.entry.size && hashBuffer(piece) === s.entry.hash) sink.good(s.entry, piece);
  else sink.bad(s.entry);
}

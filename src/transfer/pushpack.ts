/**
 * The push pack of a home (docs/format.md, "Push pack"): the small blocks of the snapshot `homefs push`
 * committed last, concatenated in the order `homefs pull` writes files (`pullRank`: depth first, and in
 * each directory the usually re-derivable bulk after the rest), with an index in front. A pull of that
 * snapshot reads them in a few ranged GETs of ~8 MiB instead of one GET per block (pushpack-reader.ts); a
 * mount looks blocks up in its index through `PushPackTable` (home/packreads.ts).
 *
 * Like the namespace pack it is a hint, never trusted: every block cut out of it is verified by its hash
 * before use, a pack that does not decode or names another snapshot is ignored, and a missing one means
 * the pull fetches every block from `blocks/`. It lives under the home's own key (keys.ts, `PUSHPACK`), is
 * replaced whole by each push, and references nothing a commit or gc relies on.
 *
 * Encoding, version 1 (binary, little-endian, no padding):
 *   magic "HFPP", version u8 = 1, snapshot 32 bytes (raw id), count u32 (0..MAX_BLOCKS), dataBytes u64
 *   (≤ MAX_DATA), then per block: hash 32 bytes, offset u64, length u32 (1..MAX_BLOCK); then dataBytes
 *   bytes of data. Offsets are relative to the start of the data, ascending, blocks never overlap and never
 *   reach past dataBytes.
 */
import { hashBuffer } from '../hash/blake3.js';
import { FormatError } from '../util/errors.js';

/**
 * Where an entry (named `name`, at `index` in its tree's name order) goes among its directory's entries
 * in pull order, lowest first: hidden entries (tool caches such as .npm, .cache, .local, .gradle) and
 * node_modules after the others, each group in name order. A pack too small for every small block then
 * holds the home's own files (sources, notes) before the caches that would fill it first in name order.
 */
export function pullRank(name: string, index: number): number {
  return (name.startsWith('.') || name === 'node_modules' ? 2 ** 32 : 0) + index;
}

/** The indexes of `names` (a directory's entries in name order) in pull order (`pullRank`). */
export function pullOrder(names: readonly string[]): number[] {
  return names.map((n, i) => [pullRank(n, i), i] as const).sort((a, b) => a[0] - b[0]).map(([, i]) => i);
}

export const PUSHPACK_VERSION = 1;
const MAGIC = Buffer.from('HFPP');
export const PUSHPACK_HEADER = 4 + 1 + 32 + 4 + 8;
const ENTRY = 32 + 8 + 4;
/** Largest block a pack may hold (the writer's default cap, config.ts `pushPack.blockMax`, is this). */
export const MAX_BLOCK = 256 * 1024;
/** Most data a pack may hold (config.ts `pushPack.maxBytes` is this). */
export const MAX_DATA = 512 * 1024 * 1024;
/** Most blocks a pack may hold (an index of 88 MB; a pack of 1-byte blocks is absurd, but bounded). */
export const MAX_BLOCKS = 2_000_000;
const HEX = /^[0-9a-f]{64}$/;

export interface PushPackEntry {
  hash: string;
  /** Relative to the start of the data. */
  offset: number;
  length: number;
}

export interface PushPackIndex {
  snapshot: string;
  /** Where the data starts in the object: PUSHPACK_HEADER + 44 × count. */
  dataStart: number;
  dataBytes: number;
  entries: PushPackEntry[];
}

/** A block a pack may hold: its hash, its length, and how to get its bytes (null: they cannot be had any more). */
export interface PackCandidate {
  hash: string;
  length: number;
  read(): Buffer | null;
}

/**
 * The pack of `snapshot` holding `candidates` (in order), built in one buffer: the reference the tests
 * and fixtures use (push streams its pack with pushpack-writer.ts, which chooses blocks the same way: each
 * hash once, 1..blockMax bytes, until maxBytes). Each block's bytes are read and hashed; one whose bytes
 * are gone or do not match is left out. Returns the pack with its block count.
 */
export function buildPushPack(snapshot: string, candidates: readonly PackCandidate[]): { pack: Buffer; blocks: number } {
  if (candidates.length > MAX_BLOCKS) throw new Error(`push pack of ${candidates.length} blocks exceeds ${MAX_BLOCKS}`);
  const planned = candidates.reduce((n, c) => n + c.length, 0);
  if (planned > MAX_DATA) throw new Error(`push pack of ${planned} bytes exceeds ${MAX_DATA}`);
  const maxStart = PUSHPACK_HEADER + ENTRY * candidates.length;
  const buf = Buffer.allocUnsafeSlow(maxStart + planned);
  const kept: PushPackEntry[] = [];
  let used = 0;
  for (const c of candidates) {
    if (c.length < 1 || c.length > MAX_BLOCK) throw new Error(`push pack: a block of ${c.length} bytes`);
    const data = c.read();
    if (!data || data.length !== c.length || hashBuffer(data) !== c.hash) continue;
    data.copy(buf, maxStart + used);
    kept.push({ hash: c.hash, offset: used, length: c.length });
    used += c.length;
  }
  const dataStart = PUSHPACK_HEADER + ENTRY * kept.length;
  if (dataStart !== maxStart) buf.copy(buf, dataStart, maxStart, maxStart + used); // (memmove: the ranges overlap)
  writePushPackHead(buf, snapshot, kept, used);
  return { pack: buf.subarray(0, dataStart + used), blocks: kept.length };
}

/** The length of header and index of a pack of `count` blocks (where its data starts). */
export function pushPackDataStart(count: number): number {
  return PUSHPACK_HEADER + ENTRY * count;
}

/**
 * Writes header and index into the first pushPackDataStart(entries.length) bytes of `buf` (the streaming
 * writer, pushpack-writer.ts, builds them last: they name the snapshot, known once HEAD moved).
 */
export function writePushPackHead(buf: Buffer, snapshot: string, entries: readonly PushPackEntry[], dataBytes: number): void {
  if (entries.length > MAX_BLOCKS) throw new Error(`push pack of ${entries.length} blocks exceeds ${MAX_BLOCKS}`);
  if (dataBytes > MAX_DATA) throw new Error(`push pack of ${dataBytes} bytes exceeds ${MAX_DATA}`);
  MAGIC.copy(buf, 0);
  buf.writeUInt8(PUSHPACK_VERSION, 4);
  writeHash(buf, 5, snapshot);
  buf.writeUInt32LE(entries.length, 37);
  buf.writeBigUInt64LE(BigInt(dataBytes), 41);
  let at = PUSHPACK_HEADER;
  for (const e of entries) {
    writeHash(buf, at, e.hash);
    buf.writeBigUInt64LE(BigInt(e.offset), at + 32);
    buf.writeUInt32LE(e.length, at + 40);
    at += ENTRY;
  }
}

function writeHash(buf: Buffer, at: number, hash: string): void {
  if (!HEX.test(hash)) throw new Error(`push pack: not a hash: ${hash}`);
  buf.write(hash, at, 32, 'hex');
}

/**
 * The length of header plus index, from the pack's first PUSHPACK_HEADER bytes (or more); a FormatError for
 * a wrong magic or version, or a count or data length out of range.
 */
export function pushPackIndexLength(head: Buffer, what = 'push pack'): number {
  const bad = (detail: string): never => {
    throw new FormatError(what, detail);
  };
  if (head.length < PUSHPACK_HEADER) bad(`${head.length} bytes is shorter than the header`);
  if (!head.subarray(0, 4).equals(MAGIC)) bad('wrong magic');
  const version = head.readUInt8(4);
  if (version !== PUSHPACK_VERSION) bad(`version ${version} is not supported (this homefs reads version ${PUSHPACK_VERSION})`);
  const count = head.readUInt32LE(37);
  if (count > MAX_BLOCKS) bad(`${count} blocks is out of range (0..${MAX_BLOCKS})`);
  if (head.readBigUInt64LE(41) > BigInt(MAX_DATA)) bad(`data length ${head.readBigUInt64LE(41)} exceeds ${MAX_DATA}`);
  return PUSHPACK_HEADER + ENTRY * count;
}

/** The snapshot a pack holds the blocks of, from its first PUSHPACK_HEADER bytes (or more); a FormatError as pushPackIndexLength. */
export function pushPackSnapshot(head: Buffer, what = 'push pack'): string {
  pushPackIndexLength(head, what);
  return head.toString('hex', 5, 37);
}

/** Decodes header and index (`buf` holds at least pushPackIndexLength bytes); anything malformed is a FormatError. */
export function decodePushPackIndex(buf: Buffer, what = 'push pack'): PushPackIndex {
  const { dataStart, dataBytes, count } = indexHead(buf, what);
  const entries: PushPackEntry[] = [];
  for (let i = 0, at = PUSHPACK_HEADER, end = 0; i < count; i++, at += ENTRY) {
    const offset = checkedEntry(buf, at, i, end, dataBytes, what);
    const length = buf.readUInt32LE(at + 40);
    entries.push({ hash: buf.toString('hex', at, at + 32), offset, length });
    end = offset + length;
  }
  return { snapshot: buf.toString('hex', 5, 37), dataStart, dataBytes, entries };
}

/**
 * The index of a pack as a mount looks blocks up in it (home/packreads.ts): the index bytes themselves,
 * each entry's offset and length in typed arrays, and an open-addressing table on the hashes' first four
 * bytes, built in one pass with no string or object per entry. At 95,000 blocks that takes 5-12 ms, where
 * a hex string and a Map entry per block took 75-125 ms, too long for the mount's event loop in one piece
 * (bench/lib/tools/packtable.ts).
 * Every entry is checked as decodePushPackIndex checks it (a FormatError).
 */
export class PushPackTable {
  readonly count: number;
  readonly dataStart: number;
  readonly dataBytes: number;
  private readonly offsets: Float64Array;
  private readonly lengths: Uint32Array;
  /** Entry index + 1 per slot, 0 for none; slots are the hash's first four bytes masked, probed linearly. */
  private readonly slots: Int32Array;
  private readonly mask: number;

  constructor(private readonly buf: Buffer, what = 'push pack') {
    const { dataStart, dataBytes, count } = indexHead(buf, what);
    this.count = count;
    this.dataStart = dataStart;
    this.dataBytes = dataBytes;
    this.offsets = new Float64Array(count);
    this.lengths = new Uint32Array(count);
    let size = 16;
    while (size < count * 2) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    for (let i = 0, at = PUSHPACK_HEADER, end = 0; i < count; i++, at += ENTRY) {
      const offset = checkedEntry(buf, at, i, end, dataBytes, what);
      this.offsets[i] = offset;
      this.lengths[i] = buf.readUInt32LE(at + 40);
      end = offset + (this.lengths[i] as number);
      let slot = buf.readUInt32BE(at) & this.mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
      this.slots[slot] = i + 1;
    }
  }

  /** The entry holding block `hash` (64 hex digits; the first of them if several do), or -1. */
  find(hash: string): number {
    const key = Number.parseInt(hash.slice(0, 8), 16);
    if (!Number.isInteger(key)) return -1;
    for (let slot = key & this.mask; ; slot = (slot + 1) & this.mask) {
      const i = (this.slots[slot] as number) - 1;
      if (i < 0) return -1;
      const at = PUSHPACK_HEADER + i * ENTRY;
      if (this.buf.readUInt32BE(at) === key && this.buf.toString('hex', at, at + 32) === hash) return i;
    }
  }

  hash(i: number): string {
    const at = PUSHPACK_HEADER + i * ENTRY;
    return this.buf.toString('hex', at, at + 32);
  }

  /** Offset of entry `i`'s block from the start of the pack's data. */
  offset(i: number): number {
    return this.offsets[i] as number;
  }

  length(i: number): number {
    return this.lengths[i] as number;
  }
}

function indexHead(buf: Buffer, what: string): { dataStart: number; dataBytes: number; count: number } {
  const dataStart = pushPackIndexLength(buf, what);
  if (buf.length < dataStart) throw new FormatError(what, `${buf.length} bytes is shorter than the index (${dataStart})`);
  return { dataStart, dataBytes: Number(buf.readBigUInt64LE(41)), count: buf.readUInt32LE(37) };
}

/**
 * The offset of entry `i` (at byte `at` of the index), checked: its length in range, after the block
 * before it (which ended at `end`), inside the data. Plain numbers, not BigInts (a BigInt per entry costs
 * more than two 32-bit reads): a 64-bit offset past 2^53 is out of bounds of any pack (`dataBytes` is a
 * Number too), so the high word is checked before it is used.
 */
function checkedEntry(buf: Buffer, at: number, i: number, end: number, dataBytes: number, what: string): number {
  const high = buf.readUInt32LE(at + 36);
  const offset = high * 2 ** 32 + buf.readUInt32LE(at + 32);
  const length = buf.readUInt32LE(at + 40);
  if (length < 1 || length > MAX_BLOCK) badEntry(what, i, `length ${length} is out of range (1..${MAX_BLOCK})`);
  if (offset < end) badEntry(what, i, `offset ${offset} overlaps the block before it`);
  if (high >= 2 ** 21 || offset + length > dataBytes) badEntry(what, i, `${high >= 2 ** 21 ? buf.readBigUInt64LE(at + 32) : offset}+${length} is out of bounds (${dataBytes} bytes of data)`);
  return offset;
}

function badEntry(what: string, i: number, detail: string): never {
  throw new FormatError(what, `block ${i}: ${detail}`);
}

/** Decodes a whole pack, which must be exactly as long as its header says (a FormatError otherwise). */
export function decodePushPack(buf: Buffer, what = 'push pack'): PushPackIndex {
  const index = decodePushPackIndex(buf, what);
  const want = index.dataStart + index.dataBytes;
  if (buf.length !== want) throw new FormatError(what, `${buf.length} bytes where the header says ${want} (truncated or trailing bytes)`);
  return index;
}

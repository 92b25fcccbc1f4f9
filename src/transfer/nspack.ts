/**
 * The namespace pack of a home (docs/format.md, "Namespace pack"): every tree of one snapshot, breadth-first
 * from its root, concatenated into one object with an index in front, so that a mount on a fresh host gets
 * the whole namespace in a few ranged GETs instead of one GET per directory.
 *
 * Like the hot set it is a hint, never trusted: each tree cut out of it is verified by its hash before the
 * cache takes it, a pack that does not decode (or names another root) is ignored, and a missing one means the
 * mount walks the trees one GET each. It lives under the home's own key (keys.ts, `NSPACK`), is replaced
 * whole by each writer, and references nothing a commit or gc relies on.
 *
 * Encoding, version 1 (binary, little-endian, no padding):
 *   magic "HFNS", version u8 = 1, root 32 bytes (raw hash of the root tree), count u32 (1..MAX_TREES),
 *   dataBytes u64, then per tree: size u32, hash 32 bytes; then the trees back to back in index order
 *   (dataBytes is the sum of their sizes). The first entry is the root.
 */
import { defaults } from '../config.js';
import { nsPackKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { mapLimit } from '../util/concurrency.js';
import { FormatError, NotFoundError } from '../util/errors.js';
import { subtreesOf } from '../format/subtrees.js';
import { cutSlices, fetchPackSlices, type PackSlice, type SliceSink } from './hotset.js';

export const NSPACK_VERSION = 1;
/** Trees a pack holds at most (an index of about 36 MB). */
export const MAX_TREES = 1_000_000;
const MAGIC = Buffer.from('HFNS');
export const NSPACK_HEADER = 4 + 1 + 32 + 4 + 8;
/** Where the root's raw hash lies in the header. */
export const NSPACK_ROOT = 5;
const ENTRY = 4 + 32;
const HEX = /^[0-9a-f]{64}$/;

export interface NsPackIndex {
  root: string;
  /** Where the data part starts: NSPACK_HEADER + 36 × count. */
  dataStart: number;
  /** Each tree's place, offsets relative to `dataStart` (the shape the hot set's range grouping takes). */
  slices: PackSlice[];
}

/**
 * The pack of everything under `root`, trees read through `getTree` (which returns verified bytes; up to
 * `parallelism` at once, a level at a time), breadth-first, each tree once. Returns null when the namespace
 * exceeds `maxBytes` or MAX_TREES: the pack is an optimisation, a home too big for it wakes tree by tree.
 */
export async function buildNsPack(
  root: string,
  getTree: (hash: string) => Promise<Buffer>,
  opts: { maxBytes: number; parallelism: number },
): Promise<Buffer | null> {
  const trees: Array<{ hash: string; data: Buffer }> = [];
  const seen = new Set([root]);
  let level = [root];
  let bytes = 0;
  while (level.length > 0) {
    const got = await mapLimit(level, opts.parallelism, getTree);
    const next: string[] = [];
    level.forEach((hash, i) => {
      const data = got[i] ?? Buffer.alloc(0);
      trees.push({ hash, data });
      bytes += data.length;
      for (const t of subtreesOf(data, hash)) {
        if (!seen.has(t)) {
          seen.add(t);
          next.push(t);
        }
      }
    });
    if (bytes > opts.maxBytes || seen.size > MAX_TREES) return null;
    level = next;
  }
  return encodeNsPack(root, trees);
}

/** Trees kept in memory as a push writes them, up to a byte budget, so that it can pack them without reading them back. */
export class TreeMemo {
  private readonly trees = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number = defaults.nsPack.maxBytes) {}

  add(hash: string, data: Buffer): void {
    if (this.trees.has(hash) || this.bytes + data.length > this.maxBytes) return;
    this.trees.set(hash, data);
    this.bytes += data.length;
  }

  get(hash: string): Buffer | undefined {
    return this.trees.get(hash);
  }
}

/**
 * Whether a store is worth a namespace pack: one over the network, and a directory on this host's disk
 * too (there a tree costs no round trip, but one open and read per directory: a cold `find` over a home
 * of 26,000 directories took half as long from the pack, docs/benchmarks.md). Not a memory store.
 */
export function wantsNsPack(storeUrl: string): boolean {
  return !storeUrl.startsWith('memory:');
}

/**
 * Builds the pack of `root` and stores it as the home's NSPACK (push, seal and sleep call this). Returns
 * the pack's length, or 0 when the namespace was too big for a pack (nothing is written then).
 */
export async function storeNsPack(
  store: Store, org: string, home: string, root: string,
  getTree: (hash: string) => Promise<Buffer>,
  opts: { maxBytes: number; parallelism: number } = defaults.nsPack,
): Promise<number> {
  const pack = await buildNsPack(root, getTree, opts);
  if (!pack) return 0;
  await store.put(nsPackKey(org, home), pack);
  return pack.length;
}

export function encodeNsPack(root: string, trees: ReadonlyArray<{ hash: string; data: Buffer }>): Buffer {
  if (trees.length < 1 || trees.length > MAX_TREES) throw new Error(`namespace pack of ${trees.length} trees`);
  if (trees[0]?.hash !== root) throw new Error('namespace pack: the first tree must be the root');
  const dataBytes = trees.reduce((n, t) => n + t.data.length, 0);
  const head = Buffer.alloc(NSPACK_HEADER + ENTRY * trees.length);
  MAGIC.copy(head, 0);
  head.writeUInt8(NSPACK_VERSION, 4);
  writeHash(head, 5, root);
  head.writeUInt32LE(trees.length, 37);
  head.writeBigUInt64LE(BigInt(dataBytes), 41);
  let at = NSPACK_HEADER;
  for (const t of trees) {
    head.writeUInt32LE(t.data.length, at);
    writeHash(head, at + 4, t.hash);
    at += ENTRY;
  }
  return Buffer.concat([head, ...trees.map((t) => t.data)], head.length + dataBytes);
}

function writeHash(buf: Buffer, at: number, hash: string): void {
  if (!HEX.test(hash)) throw new Error(`namespace pack: not a hash: ${hash}`);
  buf.write(hash, at, 32, 'hex');
}

/**
 * The length of the header plus index, from the pack's first NSPACK_HEADER bytes (or more); a FormatError
 * for a wrong magic or version or an out-of-range count.
 */
export function nsPackIndexLength(head: Buffer, what = 'namespace pack'): number {
  const bad = (detail: string): never => {
    throw new FormatError(what, detail);
  };
  if (head.length < NSPACK_HEADER) bad(`${head.length} bytes is shorter than the header`);
  if (!head.subarray(0, 4).equals(MAGIC)) bad('wrong magic');
  const version = head.readUInt8(4);
  if (version !== NSPACK_VERSION) bad(`version ${version} is not supported (this homefs reads version ${NSPACK_VERSION})`);
  const count = head.readUInt32LE(37);
  if (count < 1 || count > MAX_TREES) bad(`${count} trees is out of range (1..${MAX_TREES})`);
  return NSPACK_HEADER + ENTRY * count;
}

/** Decodes header and index (`buf` holds at least nsPackIndexLength bytes); anything malformed is a FormatError. */
export function decodeNsPackIndex(buf: Buffer, what = 'namespace pack'): NsPackIndex {
  const end = nsPackIndexLength(buf, what);
  if (buf.length < end) throw new FormatError(what, `${buf.length} bytes is shorter than the index (${end})`);
  const root = buf.toString('hex', 5, 37);
  const count = buf.readUInt32LE(37);
  const dataBig = buf.readBigUInt64LE(41);
  const slices: PackSlice[] = [];
  let offset = 0;
  for (let i = 0, at = NSPACK_HEADER; i < count; i++, at += ENTRY) {
    const size = buf.readUInt32LE(at);
    slices.push({ entry: { kind: 'meta', hash: buf.toString('hex', at + 4, at + 36), size, packed: true }, offset });
    offset += size;
  }
  if (BigInt(offset) !== dataBig) throw new FormatError(what, `data length ${dataBig} is not the sum of the tree sizes (${offset})`);
  if (slices[0]?.entry.hash !== root) throw new FormatError(what, 'the first tree is not the root');
  return { root, dataStart: end, slices };
}

/**
 * Gives home `to` a copy of home `from`'s pack if that pack is of `root` (fork: the new home starts on the
 * same root). Best effort: a missing, damaged or other-root pack is not copied, and nothing here throws.
 */
export async function copyNsPack(store: Store, org: string, from: string, to: string, root: string): Promise<boolean> {
  if (!wantsNsPack(store.url)) return false;
  try {
    const pack = await store.get(nsPackKey(org, from));
    if (decodeNsPackIndex(pack).root !== root) return false;
    await store.put(nsPackKey(org, to), pack);
    return true;
  } catch {
    return false;
  }
}

/** Where the trees read out of a stored pack go (readNsPack). */
export interface NsPackSink {
  /** Whether tree `hash` is wanted at all (false: the reader has it already). */
  wants(hash: string): boolean;
  /** A tree whose bytes matched its hash. */
  tree(hash: string, data: Buffer): void;
  /** A tree that did not match its hash, or whose range could not be read (`err`). */
  rejected(hash: string, err?: unknown): void;
  /**
   * With `pause`: a range's bytes arrived (`data` starts at data offset `at`), before its trees are cut out,
   * a time slice at a time. A sink may cut one of them at once for a reader that cannot wait (home/nspack.ts).
   */
  arrived?(slices: readonly PackSlice[], data: Buffer, at: number): void;
  /** A tree the sink already cut out early (`arrived`): the reader skips it. */
  taken?(hash: string): boolean;
}

/**
 * Reads a stored pack through `get` (a ranged GET of its key): the first `rangeBytes` (header, index and
 * the first trees), the rest of the index if it is longer, then the wanted trees not in that first range in
 * ranges of about `rangeBytes`, `rangeParallelism` at once. Every tree is verified by hash before it reaches
 * the sink. Returns the index, or null when there is no pack; a pack that does not decode is a FormatError.
 * The daemon's wake (home/nspack.ts) uses it; so can anything else that wants a home's trees at once.
 */
export async function readNsPack(
  get: (offset: number, length: number) => Promise<Buffer>,
  sink: NsPackSink,
  opts: { rangeBytes: number; rangeParallelism: number; pause?: () => Promise<void> },
  what = 'namespace pack',
): Promise<NsPackIndex | null> {
  let head: Buffer;
  try {
    head = await get(0, opts.rangeBytes);
  } catch (e) {
    if (e instanceof NotFoundError) return null;
    throw e;
  }
  const indexEnd = nsPackIndexLength(head, what);
  if (head.length < indexEnd) head = Buffer.concat([head, await get(head.length, indexEnd - head.length)]);
  const index = decodeNsPackIndex(head, what);
  const slices: SliceSink = {
    wants: (e) => !(sink.taken?.(e.hash) ?? false),
    good: (e, data) => sink.tree(e.hash, data),
    bad: (e, err) => sink.rejected(e.hash, err),
    ...(sink.arrived ? { arrived: sink.arrived.bind(sink) } : {}),
  };
  const wanted = index.slices.filter((s) => sink.wants(s.entry.hash));
  // Trees wholly inside what the first GET returned are cut out of it; the rest come in ranged GETs.
  const data = head.subarray(index.dataStart);
  const inHead = wanted.filter((s) => s.offset + s.entry.size <= data.length);
  await cutSlices(data, 0, inHead, slices, opts.pause);
  const rest = wanted.filter((s) => s.offset + s.entry.size > data.length);
  await fetchPackSlices(get, rest, { base: index.dataStart, rangeBytes: opts.rangeBytes, parallelism: opts.rangeParallelism, ...(opts.pause ? { pause: opts.pause } : {}) }, slices);
  return index;
}

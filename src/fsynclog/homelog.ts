/**
 * A home's fsync log (docs/format.md "Log segments"): what `--fsync store` writes instead of a
 * whole seal, so that an fsync costs one store round trip at any depth.
 *
 * A segment is one create-only object `<org>/homes/<home>/log/<G>/<seq>` under HEAD generation G. It holds
 * a complete pending snapshot relative to HEAD G: the snapshot object and every block and tree that the
 * snapshot references and HEAD G's snapshot does not, inline, so one atomic PUT makes it whole; or (version
 * 2, a chained segment) only those of them that the earlier segments it names in `chain` do not hold. The
 * newest valid segment (with its chain) is the home's state. A tombstone at the same keys
 * (written by a host that wakes or takes over, at the next free sequence number) makes the previous
 * holder's next segment fail, so nothing a fenced holder writes is ever counted.
 *
 * Readers use `liveHead`: HEAD, plus the newest valid segment of HEAD's generation (else of the
 * generations below with HEAD's snapshot, or of a log tail: `pendingSegment`), with an ObjectStore that
 * serves the segment's objects (its chain's included). Segments that are truncated, corrupted, for another
 * home or generation, from a newer format, or whose chain is not whole are rejected with one warning each
 * and skipped.
 */
import { hashBuffer } from '../hash/blake3.js';
import { blockKey, headKey, logKey, logPrefix, logsPrefix, metaKey, decodeGen } from '../store/keys.js';
import type { ObjectInfo, Store } from '../store/store.js';
import { ForwardingStore } from '../store/forwarding.js';
import { FormatError, NotFoundError } from '../util/errors.js';
import { readHead, type HeadRecord } from '../format/heads.js';
import { ObjectStore } from '../format/objects.js';
import type { Snapshot } from '../model/tree.js';

const SEGMENT_MAGIC = Buffer.from('HFSG', 'latin1');
const TOMBSTONE_MAGIC = Buffer.from('HFTB', 'latin1');
/** Version of a whole segment (and of tombstones); a chained segment is version 2. */
export const SEGMENT_VERSION = 1;
const CHAINED_VERSION = 2;
/** Segments a chained segment may rely on (the writer starts a whole one before). */
export const MAX_CHAIN = 64;
/** A segment larger than this is refused (a seal absorbs the log long before: `defaults.logMaxBytes`). */
const MAX_SEGMENT = 1024 * 1024 * 1024;

export interface LogObject {
  kind: 'block' | 'meta';
  hash: string;
  data: Buffer;
}

export interface Segment {
  /** `org/home`. */
  home: string;
  gen: number;
  seq: number;
  /** The state directory that wrote it (journal meta `writer`). */
  writer: string;
  /** Id of the pending snapshot (one of the meta objects). */
  snapshot: string;
  time: string;
  /**
   * Earlier segments of the same log and writer whose objects this one relies on (ascending, version 2);
   * empty for a whole segment. After `newestSegment`, `objects` holds theirs too.
   */
  chain: number[];
  objects: LogObject[];
}

/** A segment's fields as its header stores them: `chain` only when there is one, objects without their bytes. */
interface SegmentHeader extends Pick<Segment, 'home' | 'gen' | 'seq' | 'writer' | 'snapshot' | 'time'> {
  chain?: number[];
  objects: Array<[string, string, number]>;
}

/**
 * `HFSG` | u8 version | u32 header length | header JSON | object bytes | BLAKE3 (32 bytes) of all before.
 * Version 1 for a whole segment, version 2 (the header's `chain` after `time`) for a chained one.
 */
export function encodeSegment(s: Segment): Buffer {
  const header: SegmentHeader = {
    home: s.home, gen: s.gen, seq: s.seq, writer: s.writer, snapshot: s.snapshot, time: s.time,
    ...(s.chain.length > 0 ? { chain: s.chain } : {}),
    objects: s.objects.map((o) => [o.kind, o.hash, o.data.length]),
  };
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const fixed = Buffer.alloc(9);
  SEGMENT_MAGIC.copy(fixed, 0);
  fixed.writeUInt8(s.chain.length > 0 ? CHAINED_VERSION : SEGMENT_VERSION, 4);
  fixed.writeUInt32LE(h.length, 5);
  // One buffer, filled in place and then hashed: a segment carries up to megabytes of file bytes, and a
  // second copy (body, then body + hash) cost a fresh allocation's page faults at every fsync.
  const parts = [fixed, h, ...s.objects.map((o) => o.data)];
  const length = parts.reduce((n, p) => n + p.length, 0);
  const out = Buffer.allocUnsafe(length + 32);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  out.write(hashBuffer(out.subarray(0, length)), length, 'hex');
  return out;
}

/** What a log entry's key says it is. */
export interface EntryKey {
  home: string;
  gen: number;
  seq: number;
}

/** A tombstone's bytes: `HFTB` | u8 version | JSON. */
export function encodeTombstone(k: EntryKey, writer: string): Buffer {
  const fixed = Buffer.alloc(5);
  TOMBSTONE_MAGIC.copy(fixed, 0);
  fixed.writeUInt8(SEGMENT_VERSION, 4);
  return Buffer.concat([fixed, Buffer.from(JSON.stringify({ home: k.home, gen: k.gen, seq: k.seq, writer, time: new Date().toISOString() }), 'utf8')]);
}

export function isTombstone(buf: Buffer): boolean {
  return buf.length >= 5 && buf.subarray(0, 4).equals(TOMBSTONE_MAGIC);
}

const HASH = /^[0-9a-f]{64}$/;

/**
 * The segment stored under the key `k`, verified whole: magic, version, checksum, header fields (which
 * must name the key's home, generation and sequence number), every object's hash. FormatError otherwise.
 */
export function decodeSegment(buf: Buffer, k: EntryKey): Segment {
  const what = `log segment ${k.home} gen ${k.gen} seq ${k.seq}`;
  const bad = (d: string): never => {
    throw new FormatError(what, d);
  };
  if (buf.length < 9 + 32 || !buf.subarray(0, 4).equals(SEGMENT_MAGIC)) bad('not a log segment (bad magic or truncated)');
  const version = buf.readUInt8(4);
  if (version !== SEGMENT_VERSION && version !== CHAINED_VERSION) bad(`written by a newer homefs (segment version ${version}; this homefs reads versions ${SEGMENT_VERSION} and ${CHAINED_VERSION}): upgrade homefs`);
  if (buf.length > MAX_SEGMENT) bad(`${buf.length} bytes, more than ${MAX_SEGMENT}`);
  const body = buf.subarray(0, buf.length - 32);
  if (hashBuffer(body) !== buf.subarray(buf.length - 32).toString('hex')) bad('checksum mismatch (truncated or corrupted)');
  const hlen = buf.readUInt32LE(5);
  if (9 + hlen > body.length) bad('header runs past the end');
  let h: SegmentHeader;
  try {
    h = JSON.parse(body.subarray(9, 9 + hlen).toString('utf8')) as SegmentHeader;
  } catch {
    return bad('header is not JSON');
  }
  if (typeof h !== 'object' || h === null) bad('header is not an object');
  if (h.home !== k.home || h.gen !== k.gen || h.seq !== k.seq) bad(`header names ${String(h.home)} gen ${String(h.gen)} seq ${String(h.seq)}, not its key (from another home or generation)`);
  if (typeof h.writer !== 'string' || typeof h.time !== 'string' || typeof h.snapshot !== 'string' || !HASH.test(h.snapshot)) bad('header fields missing');
  if (!Array.isArray(h.objects)) bad('object list missing');
  const chain = h.chain ?? [];
  const ascending = Array.isArray(chain) && chain.every((q, i) => Number.isInteger(q) && q >= 0 && q < k.seq && (i === 0 || q > (chain[i - 1] as number)));
  if ((version === CHAINED_VERSION) !== (h.chain !== undefined) || !ascending || chain.length > MAX_CHAIN || (h.chain !== undefined && chain.length === 0)) bad('chain invalid (version 2 names 1 to 64 earlier segments, ascending)');
  const objects: LogObject[] = [];
  let off = 9 + hlen;
  for (const o of h.objects) {
    const [kind, hash, len] = Array.isArray(o) ? o : [];
    if ((kind !== 'block' && kind !== 'meta') || typeof hash !== 'string' || !HASH.test(hash) || !Number.isInteger(len) || (len as number) < 0) bad('object list entry invalid');
    const end = off + (len as number);
    if (end > body.length) bad('objects run past the end');
    const data = body.subarray(off, end);
    if (hashBuffer(data) !== hash) bad(`object ${String(hash).slice(0, 12)} does not match its hash`);
    objects.push({ kind: kind as LogObject['kind'], hash: hash as string, data });
    off = end;
  }
  if (off !== body.length) bad('bytes after the last object');
  if (!objects.some((o) => o.kind === 'meta' && o.hash === h.snapshot)) bad('its snapshot is not among its objects');
  return { home: h.home, gen: h.gen, seq: h.seq, writer: h.writer, snapshot: h.snapshot, time: h.time, chain, objects };
}

/** An entry of a log as listed: a segment or a tombstone (told apart by reading it, unless its size already tells). */
export interface LogEntry {
  seq: number;
  size: number;
}

/**
 * The entries present in the log of generation `gen`, newest first. `listed`: that log's listing, made
 * earlier by the caller (the claim's, home/claim.ts); a listing that failed is made again.
 */
export async function listLog(store: Store, org: string, home: string, gen: number, listed?: Promise<readonly ObjectInfo[]>): Promise<LogEntry[]> {
  const prefix = logPrefix(org, home, gen);
  const out: LogEntry[] = [];
  const infos = (await listed?.catch(() => undefined)) ?? store.list(prefix);
  for await (const o of infos as AsyncIterable<ObjectInfo> | Iterable<ObjectInfo>) {
    const tail = o.key.slice(prefix.length);
    if (/^[0-9]{13}$/.test(tail)) out.push({ seq: decodeGen(tail), size: o.size });
  }
  return out.sort((a, b) => b.seq - a.seq);
}

/** Creates `key` with `data`; false when another writer holds the key (a lost reply's own write counts as written). */
export async function createEntry(store: Store, key: string, data: Buffer): Promise<boolean> {
  if (await store.putIfAbsent(key, data)) return true;
  const existing = await store.get(key).catch((e: unknown) => {
    if (e instanceof NotFoundError) return Buffer.alloc(0);
    throw e;
  });
  return existing.equals(data);
}

/**
 * Claims the log of generation `gen` for `writer`: a tombstone at the next free sequence number, so that
 * any other holder's next segment fails. Returns the entries below it, newest first, and the
 * tombstone's sequence number.
 */
export async function claimLog(store: Store, org: string, home: string, gen: number, writer: string): Promise<{ seqs: LogEntry[]; tombstone: number }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const seqs = await listLog(store, org, home, gen);
    const next = (seqs[0]?.seq ?? -1) + 1;
    if (await createEntry(store, logKey(org, home, gen, next), encodeTombstone({ home: `${org}/${home}`, gen, seq: next }, writer))) return { seqs, tombstone: next };
  }
  throw new Error(`cannot claim the log of ${org}/${home}: another writer keeps appending to it`);
}

/**
 * claimLog's first attempt, returned as soon as the listing is in: the entries, newest first, and the
 * tombstone's write still in flight (`tombstone`: its sequence number, or null when another writer took
 * that number first). Entries below a tombstone never change (each is created once, at the number after
 * the newest its writer saw), so a caller reads them while the tombstone is written; if it lost the race,
 * the caller claims again with claimLog and reads again. A listing made before the call (`listed`) is as
 * good: an entry created since makes the tombstone's create fail, which is that same lost race.
 */
export async function claimLogAhead(
  store: Store, org: string, home: string, gen: number, writer: string, listed?: Promise<readonly ObjectInfo[]>,
): Promise<{ seqs: LogEntry[]; tombstone: Promise<number | null> }> {
  const seqs = await listLog(store, org, home, gen, listed);
  const next = (seqs[0]?.seq ?? -1) + 1;
  const tombstone = createEntry(store, logKey(org, home, gen, next), encodeTombstone({ home: `${org}/${home}`, gen, seq: next }, writer)).then((ok) => (ok ? next : null));
  tombstone.catch(() => undefined); // (awaited by the caller)
  return { seqs, tombstone };
}

/** The log entry `seq` of generation `gen`: null if absent or a tombstone; FormatError if it is not a valid segment. */
async function readSegment(store: Store, org: string, home: string, gen: number, seq: number): Promise<Segment | null> {
  let buf: Buffer;
  try {
    buf = await store.get(logKey(org, home, gen, seq));
  } catch (e) {
    if (e instanceof NotFoundError) return null;
    throw e;
  }
  return isTombstone(buf) ? null : decodeSegment(buf, { home: `${org}/${home}`, gen, seq });
}

/** A chained segment with the objects of its chain added (fetched at once); FormatError if a link is gone or not its writer's. */
async function withChain(store: Store, org: string, home: string, s: Segment): Promise<Segment> {
  if (s.chain.length === 0) return s;
  const links = await Promise.all(s.chain.map((q) => readSegment(store, org, home, s.gen, q)));
  const objects = new Map<string, LogObject>();
  for (const [i, link] of links.entries()) {
    if (!link || link.writer !== s.writer) throw new FormatError(`log segment ${s.home} gen ${s.gen} seq ${s.seq}`, `it relies on segment ${String(s.chain[i])}, which is ${link ? 'another writer\'s' : 'missing'}`);
    for (const o of link.objects) objects.set(`${o.kind}/${o.hash}`, o);
  }
  for (const o of s.objects) objects.set(`${o.kind}/${o.hash}`, o);
  return { ...s, objects: [...objects.values()] };
}

/**
 * The newest valid segment among `seqs` (newest first) of generation `gen`, with its chain's objects, or
 * null. Tombstones are skipped; a rejected segment (or one whose chain is not whole) is reported through
 * `warn` and skipped.
 */
export async function newestSegment(store: Store, org: string, home: string, gen: number, entries: readonly LogEntry[], warn: (msg: string) => void): Promise<Segment | null> {
  // Every wake leaves a tombstone, so a home woken often without a seal has a run of them on top of its
  // log: the small entries of a run are read at once (a window at a time), then judged newest first, as
  // if read one by one; an entry of TOMBSTONE_MAX bytes or more is a segment and is read alone.
  for (let i = 0; i < entries.length;) {
    const small = (e: LogEntry | undefined): boolean => e !== undefined && e.size < TOMBSTONE_MAX;
    let end = i + 1;
    if (small(entries[i])) while (end < entries.length && end - i < LOG_READ_WINDOW && small(entries[end])) end++;
    const reads = entries.slice(i, end).map((e) => readSegment(store, org, home, gen, e.seq));
    for (const r of reads) r.catch(() => undefined); // (each is awaited below, in order, until one decides)
    for (const read of reads) {
      try {
        const s = await read;
        if (s) return await withChain(store, org, home, s);
      } catch (e) {
        if (!(e instanceof FormatError)) throw e;
        warn(`${e.message}; ignoring it (the home is read without it)`);
      }
    }
    i = end;
  }
  return null;
}

/** How many small log entries (tombstones, most likely) `newestSegment` reads at once. */
const LOG_READ_WINDOW = 16;

/** The keys of a segment's objects in the org, with their bytes. */
export function segmentObjects(org: string, s: Segment): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  for (const o of s.objects) m.set(o.kind === 'block' ? blockKey(org, o.hash) : metaKey(org, o.hash), o.data);
  return m;
}

/** A read view of a store with a segment's objects added (writes go to the store itself). */
export class OverlayStore extends ForwardingStore {
  constructor(inner: Store, private readonly extra: Map<string, Buffer>) {
    super(inner);
  }
  override async has(keys: readonly string[]): Promise<Set<string>> {
    const found = await this.inner.has(keys.filter((k) => !this.extra.has(k)));
    for (const k of keys) if (this.extra.has(k)) found.add(k);
    return found;
  }
  override get(key: string): Promise<Buffer> {
    const b = this.extra.get(key);
    return b ? Promise.resolve(b) : this.inner.get(key);
  }
  override getRange(key: string, offset: number, length: number): Promise<Buffer> {
    const b = this.extra.get(key);
    return b ? Promise.resolve(b.subarray(offset, offset + length)) : this.inner.getRange(key, offset, length);
  }
}

export interface LiveHead {
  /** HEAD as stored, null for a home without one. */
  head: HeadRecord | null;
  /** The newest valid segment of HEAD's generation (everything fsync'd since), or null. */
  segment: Segment | null;
  /** The home's current snapshot: the segment's, else HEAD's. */
  snapshot: string | null;
  /** Reads objects of the store and of the segment. */
  objects: ObjectStore;
}

/** How many generations `pendingSegment` looks back through while HEAD's snapshot stays the same. */
const RUN_DEPTH = 16;

/** How `pendingSegment` gets a log's sequence numbers (newest first) before it reads them: a reader lists, a wake claims. */
export type LogLister = (gen: number) => Promise<readonly LogEntry[]>;

/** Whether generation `gen` of the home exists and holds `snapshot`. */
async function sameHead(store: Store, org: string, home: string, gen: number, snapshot: string): Promise<boolean> {
  const rec = await store.get(headKey(org, home, gen)).catch((e: unknown) => {
    if (e instanceof NotFoundError) return null;
    throw e;
  });
  return rec !== null && rec.toString('latin1') === snapshot;
}

/**
 * What was fsync'd since HEAD (format.md "Log segments"). HEAD's snapshot S may sit on a *run* of generations
 * that all hold S: a claimant advances HEAD to the same snapshot before it claims and replays the log (its
 * fence, base.ts), and an older homefs's --takeover does the same. Nothing absorbed the logs of such a run
 * (an absorbing seal or replay changes the snapshot), so from generation `from` down through the run (up to
 * 16): the newest valid segment of that generation's log; at the generation S's seal created (`logTail.gen +
 * 1`), the newest valid one of its log tail (`logTail.seq` on: written during that seal, after it captured, so
 * newer than S). Options: `list` gives each log's sequence numbers (a wake claims each log before it reads
 * it); `from` below HEAD's generation: the generations above it are a claimant's own fence (same snapshot,
 * empty logs), and generation `from` is known to hold S; `prefetch` reads S at once, in parallel with the
 * first log (a wake reads it anyway), instead of only once a log of the run holds no segment.
 */
export async function pendingSegment(
  store: Store, org: string, home: string, head: HeadRecord, warn: (msg: string) => void,
  opts: { list?: LogLister; from?: number; prefetch?: boolean } = {},
): Promise<Segment | null> {
  const list = opts.list ?? ((gen: number) => listLog(store, org, home, gen));
  const from = opts.from ?? head.gen;
  let snapshot: Promise<Snapshot> | null = null;
  const snap = (): Promise<Snapshot> => (snapshot ??= new ObjectStore(store, org).getSnapshot(head.snapshot));
  if (opts.prefetch) snap().catch(() => undefined); // (awaited below, if needed)
  for (let gen = from; gen >= 0 && gen >= head.gen - RUN_DEPTH; gen--) {
    if (gen < from && !(await sameHead(store, org, home, gen, head.snapshot))) return null;
    const seqs = await list(gen);
    const s = seqs.length > 0 ? await newestSegment(store, org, home, gen, seqs, warn) : null;
    if (s) return s;
    const t = (await snap()).logTail;
    if (t && t.gen + 1 === gen) {
      const after = (await list(t.gen)).filter((e) => e.seq >= t.seq);
      return after.length > 0 ? newestSegment(store, org, home, t.gen, after, warn) : null;
    }
  }
  return null;
}

/** What every reader of a home sees: HEAD plus what was fsync'd since (the newest valid segment). */
export async function liveHead(objects: ObjectStore, home: string, warn: (msg: string) => void = (m) => process.stderr.write(`homefs: warning: ${m}\n`)): Promise<LiveHead> {
  const head = await readHead(objects.store, objects.org, home);
  if (!head) return { head, segment: null, snapshot: null, objects };
  const segment = await pendingSegment(objects.store, objects.org, home, head, warn);
  if (!segment) return { head, segment, snapshot: head.snapshot, objects };
  return { head, segment, snapshot: segment.snapshot, objects: new ObjectStore(new OverlayStore(objects.store, segmentObjects(objects.org, segment)), objects.org) };
}

/** Tombstones are smaller than this; anything smaller is read to tell. */
const TOMBSTONE_MAX = 1024;

/**
 * How long a tombstone fences at least. A holder writes a segment only within the lease TTL of a look that
 * showed the lease still its own (`Lease.confirmed`), and that segment lands within the store's retry
 * deadline; a tombstone is created after the taker claimed the lease. So a tombstone older than TTL + retry
 * deadline can no longer meet a segment of the holder it fenced; a day leaves room for clock skew.
 */
export const TOMBSTONE_KEEP_MS = 24 * 3600_000;

/**
 * Deletes the segments of generations below `gen` (absorbed by HEAD `gen`, or fenced), except `keep`: the
 * log tail of HEAD `gen` (its segments from `keep.seq` on). Tombstones go too once no reader looks at their
 * log (generations below `gen - 1`: readers read HEAD's log and its tail's) and they are older than
 * `TOMBSTONE_KEEP_MS` (by the store's clock, against `nowMs`); younger ones stay to fence a paused holder.
 */
export async function dropOldLogs(
  store: Store, org: string, home: string, gen: number, keep: { gen: number; seq: number } | null = null, nowMs: number = Date.now(),
): Promise<number> {
  const prefix = logsPrefix(org, home);
  let n = 0;
  for await (const o of store.list(prefix)) {
    const [g = '', q = ''] = o.key.slice(prefix.length).split('/');
    if (!/^[0-9]{13}$/.test(g) || decodeGen(g) >= gen) continue;
    if (keep && decodeGen(g) === keep.gen && /^[0-9]{13}$/.test(q) && decodeGen(q) >= keep.seq) continue;
    if (o.size < TOMBSTONE_MAX) {
      const b = await store.get(o.key).catch(() => null);
      if (b === null) continue;
      if (isTombstone(b) && (decodeGen(g) >= gen - 1 || nowMs - o.mtimeMs < TOMBSTONE_KEEP_MS)) continue;
    }
    await store.delete(o.key);
    n++;
  }
  return n;
}

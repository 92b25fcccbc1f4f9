/**
 * Sealing: turns what changed in a mounted home's journal into a new snapshot and advances HEAD.
 *
 * This layer sits above both the live inode layer (inodes/: journal and file content) and the snapshot
 * format layer (format/: objects, commit) with the fsync log (fsynclog/); neither of those imports it. From inodes it uses only the
 * change set (`Journal.beginSeal`, `changedSeq`, `setSealedTree`, `sealCommitted`) and the per-file
 * capture (`Content.sealFile`).
 *
 * Walks from the root only into changed directories, so the cost is proportional to what changed, not to
 * the size of the home. Only dirty files are read, and of large files only their dirty 4 MiB blocks;
 * blocks the store already has are not uploaded. Every tree is computed locally (a tree's hash needs only
 * its entries), so blocks, trees and the snapshot go up in parallel as soon as each is known, and HEAD is
 * written last, once all have landed (commitSnapshot): two round trips at any depth, not one per level.
 * Each file is captured under its content lock, so at one instant, and recorded as sealed only once its
 * blocks have landed and only if unchanged since (the lock is not held meanwhile); anything changed while
 * the seal runs stays in the change set for the next one.
 * Every entry records the inode number the mount serves for it, unless it is a counter number
 * (model/inos.ts): the next host serves the same ones.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { blockRanges, hashBuffer } from '../hash/blake3.js';
import type { Content } from '../inodes/content.js';
import type { SealBlock, StoredBlocks } from '../inodes/filestate.js';
import type { Journal } from '../inodes/journal.js';
import { ROOT_INO, type Inode } from '../inodes/types.js';
import { treeEntry } from '../model/entry.js';
import type { SnapshotStats, TreeEntry } from '../model/tree.js';
import { commitSnapshot } from '../format/commit.js';
import type { Excludes } from '../format/excludes.js';
import { reverifyReused, type EpochState, type GcFence } from '../format/gcfence.js';
import { TagCheck } from './tags.js';
import { readAndHash, type BlockBytes } from './blockread.js';
import type { Slabs } from '../util/slabs.js';
import type { OmissionWalk, Omissions } from './omission.js';
import { ObjectStore, ReuseLog, SMALL_OBJECT } from '../format/objects.js';
import { createEntry, encodeSegment, type LogObject } from '../fsynclog/homelog.js';
import { logKey } from '../store/keys.js';
import type { ObjectInfo, Store } from '../store/store.js';
import { mapLimit, Semaphore } from '../util/concurrency.js';
import { NotFoundError, UserError } from '../util/errors.js';

export interface SealDeps {
  journal: Journal;
  content: Content;
  objects: ObjectStore;
  excludes: Excludes;
  home: string;
  host: string;
  /** Files sealed concurrently. */
  parallelism: number;
  /** Block writes allowed in flight at this moment (a seal nobody waits for yields to the foreground); default: `parallelism`. */
  pace?: () => number;
  /** Hashes a block off the event loop; returns the bytes again (the input may have been transferred). */
  hash?: (data: Buffer) => Promise<{ hash: string; data: Buffer }>;
  /** Reused buffers for the large blocks read (seal/blockread.ts); none: a new buffer per block. */
  slabs?: Slabs;
  /** The upload of this block that began before the seal (preseal.ts, writebehind.ts), while it is in flight. */
  uploading?: (hash: string) => Promise<unknown> | undefined;
  /** Whether write-behind stored this block after a look that saw gc epoch `epoch` settled (writebehind.ts). */
  storedUnder?: (hash: string, epoch: number | null) => boolean;
  /** The org's gc fence and this home's last look at it (a look older than `FENCE_REUSE_MS` is renewed). */
  fence: { gc: GcFence; observed: EpochState | null };
  /**
   * A seal only: log segments of its base generation from this sequence number on may be written while it
   * runs (recorded as the snapshot's `logTail`); `walked` is called with the seal's dedupe record once every
   * file is captured (the earliest a segment written during the seal may start its own capture).
   */
  tail?: { seq: number; walked: (reuse: ReuseLog) => void };
  /** A seal only: called once everything but HEAD has landed; HEAD is written once it resolves (it rejects: the seal fails, HEAD unchanged). */
  beforeHead?: () => Promise<void>;
  /** Log segments only: the trees earlier segments of this mount computed, reused while unchanged (`SegmentTrees`). */
  segmentTrees?: SegmentTrees;
  /** Which names a segment may leave out, and what every landed segment and seal held (omission.ts). */
  omissions?: Omissions;
}

/**
 * The directory trees log segments computed, so that the next segment walks only what changed since the
 * previous one (its cost follows the tail, not everything changed since the last seal). An entry is reused
 * when nothing at or below its directory changed since it was computed (`Journal.version`), the segment
 * that computed it landed and is in the new segment's chain (so the tree, and every object below it that
 * is not in HEAD's snapshot, is in the chain's segments), and, if its subtree relied on blocks write-behind
 * stored, their gc epoch is still the accepted one (the new segment then confirms it, as for its own).
 */
export class SegmentTrees {
  private readonly trees = new Map<number, { version: number; hash: string; gen: number; seq: number; epoch: number | null | undefined }>();

  get(ino: number, version: number, gen: number, chain: readonly number[], tags: TagCheck): string | undefined {
    const m = this.trees.get(ino);
    if (!m || m.version !== version || m.gen !== gen || !chain.includes(m.seq)) return undefined;
    if (m.epoch !== undefined) {
      if (!tags.accepts(m.epoch)) return undefined;
      tags.used = true;
    }
    return m.hash;
  }

  set(ino: number, entry: { version: number; hash: string; gen: number; seq: number; epoch: number | null | undefined }): void {
    this.trees.set(ino, entry);
  }

  /** After a seal: a new generation's log starts (entries of older ones never match; this frees them). */
  clear(): void {
    this.trees.clear();
  }
}

/** A previous seal's last look at the gc epoch serves as the next seal's first look for this long. */
const FENCE_REUSE_MS = 30_000;

/** A paced seal looks at its pace again this often while it holds a block back. */
const PACE_MS = 20;

/** Tree writes in flight at once (small objects; blocks are bounded by `parallelism`, their bytes wait in memory). */
const META_WRITES = 64;

/** Where a block this seal deduplicated against (did not upload) came from, to upload it again if a gc took it. */
interface ReusedBlock {
  ino: number;
  offset: number;
  length: number;
}

export interface SealResult {
  snapshot: string;
  gen: number;
  filesHashed: number;
  bytesHashed: number;
  blocksNew: number;
  bytesUploaded: number;
  durationMs: number;
}

interface Tally {
  filesHashed: number;
  bytesHashed: number;
  blocksNew: number;
  bytesUploaded: number;
  stats: SnapshotStats;
  reused: Map<string, ReusedBlock>;
}

/** Seals everything changed. Returns null when nothing changed since the last seal. */
export async function seal(deps: SealDeps, reason: string): Promise<SealResult | null> {
  const started = Date.now();
  deps.content.refreshAll(); // files open through passthrough: what the kernel wrote since last looked at
  const floor = deps.journal.beginSeal();
  const base = deps.journal.base();
  if (deps.journal.changedCount === 0 && base.snapshot !== null) return null;
  const last = deps.fence.observed;
  const since = last && last.done && deps.fence.gc.opts.monotonic() - last.atMs < FENCE_REUSE_MS ? last : await deps.fence.gc.observe();
  deps.fence.observed = since; // (a segment written meanwhile confirms its tags against this look)
  const reuse = new ReuseLog();
  const d: SealDeps = { ...deps, objects: deps.objects.tracking(reuse) };
  const tally: Tally = { filesHashed: 0, bytesHashed: 0, blocksNew: 0, bytesUploaded: 0, stats: { files: 0, dirs: 0, bytes: 0 }, reused: new Map() };
  const w = new Writes(Math.max(2, d.parallelism * 2), d.pace);
  // Blocks write-behind stored under this seal's first look count as its dedupe hits (the fence covers them).
  const tags = new TagCheck(deps.fence.gc, since, reuse);
  // The seal at sleep keeps no local copy of small files held inline: their bytes are in the store now,
  // and this mount is about to end (writing thousands of upper files would be most of its cost).
  const omit = deps.omissions?.begin(null, 0);
  const root = await sealDir(d, ROOT_INO, '', tally, { memo: new Map(), w, record: true, tags, keepInline: reason !== 'sleep', omit });
  const tail = deps.tail && base.gen !== null ? { gen: base.gen, seq: deps.tail.seq } : null;
  deps.tail?.walked(reuse);
  const r = d.journal.get(ROOT_INO);
  const prevStats = d.journal.getMeta<SnapshotStats>('stats');
  const reverify = reverifyReused(d.objects, (gone) => reupload(d, gone, tally.reused));
  // Every tree is known: its blocks, trees and the snapshot go up together, HEAD after all have landed.
  const landed = w.all().then(() => {
    for (const [ino, hash] of w.trees) d.journal.setSealedTree(ino, hash);
  });
  const { snapshot, gen, observed } = await commitSnapshot(d.objects, d.home, base.gen, {
    root, parent: base.snapshot, host: d.host, stats: { ...mergeStats(prevStats, tally.stats), bytes: d.content.usedBytes }, reason,
    ...(r ? { rootAttrs: { mode: r.mode & 0o7777, uid: r.uid, gid: r.gid, mtimeNs: r.mtimeNs } } : {}),
    ...(tail ? { features: [...HOME_FEATURES, 'log-tail'], logTail: tail } : { features: [...HOME_FEATURES] }),
  }, { fence: { gc: d.fence.gc, since, reverify }, pending: landed.then(() => deps.beforeHead?.()) });
  deps.fence.observed = observed;
  d.journal.sealCommitted({ snapshot, gen }, floor);
  if (omit) deps.omissions?.sealed(omit, (ino) => d.journal.get(ino) !== undefined);
  return { snapshot, gen, filesHashed: tally.filesHashed, bytesHashed: tally.bytesHashed, blocksNew: tally.blocksNew, bytesUploaded: tally.bytesUploaded, durationMs: Date.now() - started };
}

/** Where a log segment goes: HEAD generation, sequence number, and the state directory writing it. */
export interface LogTarget {
  gen: number;
  seq: number;
  writer: string;
  /** Earlier segments of this writer that landed, and the store keys of their objects: this one leaves those out. */
  chain?: { seqs: number[]; keys: ReadonlySet<string> };
  /**
   * The inodes fsync'd for this segment, and the bytes it may carry for fresh names (omission.ts): others
   * beyond that are left out. Absent: nothing is left out.
   */
  fsynced?: { inodes: ReadonlySet<number>; freshBytes: number };
}

export interface LogResult {
  snapshot: string;
  gen: number;
  seq: number;
  /** Size of the segment written. */
  bytes: number;
  durationMs: number;
  /** Of which the segment's PUT. */
  putMs: number;
  /** Store keys of the objects the segment holds. */
  keys: string[];
  /** Entries it left out (omission.ts): 0 for a segment that holds the whole home. */
  omitted: number;
}

/** The log entry this holder was to create exists with other bytes: another host claimed the log (takeover). */
export class LogFencedError extends UserError {
  constructor(home: string) {
    super(`another host took ${home} over: this mount's fsync is not in the store and this mount seals nothing more; its changes stay in its state directory`);
    this.name = 'LogFencedError';
  }
}

/** A segment written during a seal would rely on blocks that seal deduplicated (not yet covered by its gc fence): wait for the seal instead. */
export class LogUnsafeError extends Error {
  constructor() {
    super('the running seal deduplicated blocks this segment would rely on');
    this.name = 'LogUnsafeError';
  }
}

/** What an fsync would put in one segment is more than a segment may hold: seal instead. */
export class LogFullError extends Error {
  constructor(maxBytes: number) {
    super(`more than ${maxBytes} bytes changed since the last seal: too much for one log segment`);
    this.name = 'LogFullError';
  }
}

/**
 * A Store that keeps what is written in memory, up to `maxBytes` (counting those `held` too): the objects
 * of one log segment, but for those earlier segments of its chain hold (`held`, by store key).
 */
class Collected implements Store {
  readonly url = 'memory:segment';
  readonly objects = new Map<string, LogObject>();
  private readonly seen = new Set<string>();
  private bytes = 0;
  constructor(private readonly maxBytes: number, private readonly held: ReadonlySet<string> = new Set()) {}
  async has(): Promise<Set<string>> {
    return new Set();
  }
  async get(key: string): Promise<Buffer> {
    throw new NotFoundError(key);
  }
  async getRange(key: string): Promise<Buffer> {
    throw new NotFoundError(key);
  }
  async put(key: string, data: Buffer): Promise<void> {
    if (!this.seen.has(key)) this.bytes += data.length;
    this.seen.add(key);
    if (this.bytes > this.maxBytes) throw new LogFullError(this.maxBytes);
    if (this.held.has(key)) return;
    const parts = key.split('/');
    const kind = parts[1] === 'blocks' ? 'block' : 'meta';
    this.objects.set(key, { kind, hash: parts[3] ?? '', data });
  }
  async putIfAbsent(): Promise<boolean> {
    throw new Error('a log segment writes no HEAD');
  }
  async *list(): AsyncIterable<ObjectInfo> {
    // nothing to list
  }
  async delete(): Promise<void> {
    throw new Error('a log segment deletes nothing');
  }
  async close(): Promise<void> {
    // nothing to release
  }
}

/**
 * An fsync's commit to the home's log (fsynclog/homelog.ts): the same walk as a seal, but every object the
 * pending snapshot needs beyond HEAD's goes inline into one create-only segment, so it costs one round trip.
 * Nothing is recorded in the journal (the next seal captures everything again, and absorbs the log); nothing
 * is deduplicated against the store, so the segment relies only on HEAD's snapshot, which gc keeps, and on
 * the earlier segments of `target.chain` (whose objects it leaves out).
 * Returns null when nothing changed since the last seal. Throws LogFencedError if another host claimed the log,
 * LogFullError (before writing anything) if the segment would hold more than `maxBytes` of objects,
 * LogUnsafeError (before writing anything) if `mayWrite`, asked once the segment is complete, says no.
 * `captured` is called once the segment's content is fixed, before its PUT.
 */
export async function sealToLog(
  deps: SealDeps, target: LogTarget, reason: string, maxBytes: number, mayWrite: () => boolean = () => true, captured: () => void = () => undefined,
  reliesOnTags: () => boolean = () => false,
): Promise<LogResult | null> {
  const started = Date.now();
  deps.content.refreshAll();
  const base = deps.journal.base();
  if (deps.journal.changedCount === 0) return null;
  if (base.snapshot === null || base.gen !== target.gen) throw new Error(`log: the journal is based on generation ${String(base.gen)}, not ${target.gen}`);
  const chain = [...(target.chain?.seqs ?? [])]; // (as it is now: segments that land later are not relied on)
  const collected = new Collected(maxBytes, target.chain?.keys);
  const d: SealDeps = { ...deps, objects: new ObjectStore(collected, deps.objects.org) };
  const tally: Tally = { filesHashed: 0, bytesHashed: 0, blocksNew: 0, bytesUploaded: 0, stats: { files: 0, dirs: 0, bytes: 0 }, reused: new Map() };
  const w = new Writes(Math.max(2, d.parallelism * 2));
  // Blocks write-behind stored are referenced, not carried inline, when the mount's last look at the gc fence
  // saw their epoch settled; a look made while the segment is captured must then see it unchanged (before the PUT).
  const tags = new TagCheck(deps.fence.gc, deps.fence.observed, new ReuseLog());
  const segment = { gen: target.gen, seq: target.seq, chain };
  const omit = deps.omissions?.begin(target.fsynced?.inodes ?? null, target.fsynced?.freshBytes ?? 0);
  const root = await sealDir(d, ROOT_INO, '', tally, { memo: new Map(), w, record: false, tags, segment, omit });
  await w.all();
  const r = d.journal.get(ROOT_INO);
  const prevStats = d.journal.getMeta<SnapshotStats>('stats');
  const time = new Date().toISOString();
  const home = `${deps.objects.org}/${d.home}`;
  const snapshot = await d.objects.putSnapshot({
    root, parent: base.snapshot, home, time, host: d.host, stats: { ...mergeStats(prevStats, tally.stats), bytes: d.content.usedBytes }, reason,
    ...(r ? { rootAttrs: { mode: r.mode & 0o7777, uid: r.uid, gid: r.gid, mtimeNs: r.mtimeNs } } : {}), features: [...HOME_FEATURES],
  });
  if (!mayWrite()) throw new LogUnsafeError();
  if (tags.used || reliesOnTags()) {
    const now = await tags.confirm();
    if (!now) throw new LogUnsafeError();
    deps.fence.observed = now;
  }
  const seg = encodeSegment({ home, gen: target.gen, seq: target.seq, writer: target.writer, snapshot, time, chain, objects: [...collected.objects.values()] });
  captured();
  const put = Date.now();
  if (!(await createEntry(deps.objects.store, logKey(deps.objects.org, d.home, target.gen, target.seq), seg))) throw new LogFencedError(home);
  if (omit) deps.omissions?.landed(omit);
  return {
    snapshot, gen: target.gen, seq: target.seq, bytes: seg.length, durationMs: Date.now() - started, putMs: Date.now() - put,
    keys: [...collected.objects.keys()], omitted: omit?.omitted ?? 0,
  };
}

/** What every snapshot of a mounted home requires of its readers: they must know its log. */
const HOME_FEATURES = ['log', 'log-chain'] as const;

/** File and directory counts are approximate for partially loaded homes (bytes come from the exact count the content layer keeps). */
function mergeStats(prev: SnapshotStats | undefined, seen: SnapshotStats): SnapshotStats {
  return prev ? { files: Math.max(prev.files, seen.files), dirs: Math.max(prev.dirs, seen.dirs), bytes: Math.max(prev.bytes, seen.bytes) } : seen;
}

/**
 * The store writes of one seal, started as soon as each object is known and awaited together before HEAD.
 * At most `limit` run at once (block bytes stay in memory until their write lands).
 */
class Writes {
  private readonly blockSlots: Semaphore;
  private readonly metaSlots = new Semaphore(META_WRITES);
  private readonly inflight: Array<Promise<unknown>> = [];
  private blocks = 0;
  /** Directories whose new tree is being written: recorded in the journal once everything has landed. */
  readonly trees: Array<[number, string]> = [];

  constructor(blockLimit: number, private readonly pace?: () => number) {
    this.blockSlots = new Semaphore(blockLimit);
  }

  /** Waits for a free slot (and, when paced, for the pace to allow one more block), then starts `write`; returns (wrapped, so as not to wait for it) its promise. */
  async start(kind: 'block' | 'meta', write: () => Promise<unknown>): Promise<{ landed: Promise<unknown> }> {
    const block = kind === 'block';
    const release = await (block ? this.blockSlots : this.metaSlots).acquire();
    if (block) {
      while (this.pace && this.blocks > 0 && this.blocks >= this.pace()) await delay(PACE_MS);
      this.blocks++;
    }
    const p = write().finally(() => {
      if (block) this.blocks--;
      release();
    });
    p.catch(() => undefined); // observed by all()
    this.inflight.push(p);
    return { landed: p };
  }

  /** Tracks a promise that the seal must see settle (a file's capture with its uploads) before HEAD. */
  track(p: Promise<unknown>): void {
    p.catch(() => undefined); // observed by all()
    this.inflight.push(p);
  }

  /** Every write started or tracked so far (including those started while waiting); rejects with the first failure. */
  async all(): Promise<void> {
    for (let i = 0; i < this.inflight.length; i++) await this.inflight[i];
  }
}

interface Walk {
  /** A hard-linked file's inode is captured once: its block list, known when its bytes are hashed. */
  memo: Map<number, Promise<{ blocks: string[]; size: number; node?: Inode }>>;
  w: Writes;
  /** False for a log segment: files stay dirty and trees are not recorded (the next seal captures them again). */
  record: boolean;
  /** Which blocks write-behind stored may be relied on, and the record of those that were. */
  tags: TagCheck;
  /** A seal: an inline file sealed keeps its bytes locally, in a new upper file (else it becomes clean). Default true. */
  keepInline?: boolean;
  /** A log segment: which one, and the earlier segments it relies on (for `SegmentTrees`). */
  segment?: { gen: number; seq: number; chain: readonly number[] };
  /** What the walk may leave out, and the record of what it held (omission.ts). */
  omit?: OmissionWalk;
}

async function sealDir(d: SealDeps, ino: number, path: string, t: Tally, walk: Walk): Promise<string> {
  const dir = d.journal.get(ino);
  if (!dir) throw new Error(`seal: directory inode ${ino} vanished`);
  if (dir.tree && (!dir.loaded || d.journal.changedSeq(ino) === undefined)) return dir.tree;
  const seg = walk.segment;
  const trees = seg ? d.segmentTrees : undefined;
  const version = d.journal.version(ino); // (read before the walk below: a change meanwhile makes the entry stale)
  if (seg && trees) {
    const known = trees.get(ino, version, seg.gen, seg.chain, walk.tags);
    if (known) return known;
  }
  const tagsBefore = walk.tags.count;
  const omittedBefore = walk.omit?.omitted ?? 0;
  const hash = await walkDir(d, ino, path, t, walk);
  // A tree that left names out is walked again by the next segment (write-behind may have stored them since).
  if (seg && trees && (walk.omit?.omitted ?? 0) === omittedBefore) trees.set(ino, { version, hash, gen: seg.gen, seq: seg.seq, epoch: walk.tags.count > tagsBefore ? walk.tags.epoch : undefined });
  return hash;
}

async function walkDir(d: SealDeps, ino: number, path: string, t: Tally, walk: Walk): Promise<string> {
  t.stats.dirs++;
  const kids: Array<[string, Inode]> = [];
  for (const [name, childIno] of d.journal.children(ino)) {
    const child = d.journal.get(childIno);
    if (!child) continue;
    const childPath = path ? `${path}/${name}` : name;
    if (d.excludes.excluded(childPath, child.kind === 'dir')) continue;
    kids.push([name, child]);
  }
  const om = walk.omit;
  const all = await mapLimit(kids, d.parallelism, async ([name, child]): Promise<TreeEntry | null> => {
    const childPath = path ? `${path}/${name}` : name;
    const omittable = om?.mayOmit(ino, name, child) ?? false;
    if (omittable && om?.leavesOut(child)) return null;
    const e = await entryFor(d, name, child, childPath, t, walk);
    return omittable && om?.isEmptied(child.ino) ? null : e;
  });
  const entries: TreeEntry[] = [];
  const held: Array<{ name: string; ino: number }> = [];
  all.forEach((e, i) => {
    if (!e) return;
    entries.push(e);
    const kid = kids[i];
    if (kid) held.push({ name: kid[0], ino: kid[1].ino });
  });
  om?.walked(ino, held, all.length - entries.length);
  sortByName(entries);
  // The tree's hash is computed here; its write goes up with everything else, not one level per round trip.
  const staged = d.objects.stageTree({ entries });
  await walk.w.start('meta', staged.write);
  if (walk.record) walk.w.trees.push([ino, staged.hash]);
  return staged.hash;
}

/** Sorts tree entries by the bytes of their names (each name encoded once, not once per comparison). */
function sortByName(entries: TreeEntry[]): void {
  const keyed = entries.map((e) => ({ e, k: Buffer.from(e.name) }));
  keyed.sort((a, b) => Buffer.compare(a.k, b.k));
  keyed.forEach((x, i) => (entries[i] = x.e));
}

async function entryFor(d: SealDeps, name: string, node: Inode, path: string, t: Tally, walk: Walk): Promise<TreeEntry> {
  if (node.kind === 'dir') return treeEntry(name, node, { tree: await sealDir(d, node.ino, path, t, walk), nlink: node.nlink, ino: node.ino });
  if (node.kind !== 'file') return treeEntry(name, node, { ...linkOf(node), ino: node.ino });
  t.stats.files++;
  let p = walk.memo.get(node.ino);
  if (!p) {
    p = sealFile(d, node.ino, t, walk);
    walk.memo.set(node.ino, p);
  }
  const { blocks, size, node: captured } = await p;
  // The capture may have waited for writes queued before it: take the times they left (not those of later writes).
  const fresh = captured ?? d.journal.get(node.ino) ?? node;
  t.stats.bytes += size;
  return treeEntry(name, { ...fresh, size }, { blocks, ...linkOf(fresh), ino: fresh.ino });
}

/** A hard-linked inode's link identity (kept from its snapshot, or assigned by `link`). */
function linkOf(node: Inode): { link?: number; nlink?: number } {
  return node.nlink > 1 && node.linkId !== undefined ? { link: node.linkId, nlink: node.nlink } : {};
}

/**
 * New block list of a file: its changed blocks hashed from its upper file, their uploads started (if new).
 * Resolves as soon as the block list is known; the file is recorded as sealed once its uploads have landed,
 * which the seal waits for (through `w`) before HEAD.
 */
function sealFile(d: SealDeps, ino: number, t: Tally, walk: Walk): Promise<{ blocks: string[]; size: number; node?: Inode }> {
  const { w, record, tags } = walk;
  const uploads: Array<Promise<unknown>> = [];
  const store = async (block: SealBlock, bytes: BlockBytes, known?: string): Promise<string> => {
    let data: Buffer | undefined;
    let hash: string;
    let release = (): void => undefined;
    if (known !== undefined) {
      hash = known; // hashed early, while the file was written (preseal.ts): read again only if it must go up
    } else {
      ({ hash, data, release } = await readAndHash(d.slabs, block.length, bytes, d.hash ?? (async (b) => ({ hash: hashBuffer(b), data: b }))));
      t.bytesHashed += block.length;
    }
    const started = w.start('block', async () => {
      // An early upload of this block lands first; the block then counts as found (deduplicated).
      await d.uploading?.(hash)?.catch(() => undefined);
      if (tags.take(hash, (e) => d.storedUnder?.(hash, e) ?? false)) {
        t.reused.set(hash, { ino, offset: block.offset, length: block.length });
        return;
      }
      // Small blocks are written again rather than asked about (one round trip instead of two).
      const upload = block.length <= SMALL_OBJECT || (await d.objects.missingBlocks([hash])).size > 0;
      if (upload) {
        if (!data) {
          // An early hash whose block must go up after all: the bytes read now are checked against it (a
          // mismatch fails the seal; the file stays dirty and its next seal hashes everything afresh).
          data = await bytes();
          const check = d.hash ? await d.hash(data) : { hash: hashBuffer(data), data };
          data = check.data;
          if (check.hash !== hash) throw new Error(`seal: block ${block.index} of inode ${ino} no longer has its early hash`);
        }
        await d.objects.putBlock(hash, data);
        t.blocksNew++;
        t.bytesUploaded += block.length;
      } else {
        t.reused.set(hash, { ino, offset: block.offset, length: block.length });
      }
    });
    // The block's buffer is given back once its write settles (or could not start).
    started.then(({ landed }) => landed.finally(release), release).catch(() => undefined);
    const { landed } = await started;
    uploads.push(landed);
    return hash;
  };
  return new Promise((resolve, reject) => {
    const done = d.content.sealFile(ino, store, {
      captured: resolve,
      record,
      keepLocal: walk.keepInline ?? true,
      useStored: (s) => tags.accepts(s.epoch),
      landed: async () => {
        await Promise.all(uploads);
      },
    });
    w.track(done);
    done.then((r) => {
      if (r.fromStore) reliedOnStored(t, tags, ino, r.fromStore);
      else if (r.captured) t.filesHashed++;
      resolve(r);
    }, reject);
  });
}

/** A file captured as the blocks write-behind stored: each counts as a dedupe hit of this commit. */
function reliedOnStored(t: Tally, tags: TagCheck, ino: number, s: StoredBlocks): void {
  const ranges = blockRanges(s.size);
  s.blocks.forEach((hash, i) => {
    const [offset, length] = ranges[i] ?? [0, 0];
    tags.rely(hash);
    t.reused.set(hash, { ino, offset, length });
  });
}

/**
 * A gc that overlapped this seal deleted blocks it deduplicated against: upload them again from the upper
 * files. A file rewritten there since cannot give the old bytes back: its block is marked dirty again and
 * the seal fails with HEAD unchanged, so the next seal hashes it afresh.
 */
async function reupload(d: SealDeps, gone: string[], reused: Map<string, ReusedBlock>): Promise<void> {
  let lost = 0;
  for (const hash of gone) {
    const at = reused.get(hash);
    if (!at) throw new Error(`seal: block ${hash.slice(0, 12)} is gone but was not deduplicated by this seal`);
    const restored = await d.content.restoreBlock(at.ino, at.offset, at.length, async (data) => {
      if (data.length !== at.length || hashBuffer(data) !== hash) return false;
      await d.objects.putBlock(hash, data);
      return true;
    });
    if (!restored) lost++;
  }
  if (lost > 0) throw new Error(`seal: a concurrent gc deleted ${lost} blocks this seal deduplicated against and their files changed since; HEAD is unchanged and they are sealed again next time`);
}

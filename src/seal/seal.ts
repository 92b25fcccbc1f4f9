/**
 * Sealing: turns what changed in a mounted home's journal into a new snapshot and advances HEAD.
 *
 * This layer sits above both the live inode layer (inodes/: journal and file content) and the snapshot
 * format layer (snapshot/: objects, commit); neither of those imports it. From inodes it uses only the
 * change set (`Journal.beginSeal`, `changedSeq`, `setSealedTree`, `sealCommitted`) and the per-file
 * capture (`Content.sealFile`).
 *
 * Walks from the root only into changed directories, so the cost is proportional to what changed, not to
 * the size of the home. Only dirty files are read, and of large files only their dirty 4 MiB blocks;
 * blocks the store already has are not uploaded. Objects are written bottom-up (blocks → trees → snapshot
 * → HEAD, the last two by commitSnapshot). Each file is captured under its content lock, so at one
 * instant; anything changed while the seal runs stays in the change set for the next one.
 */
import { hashBuffer } from '../hash/blake3.js';
import type { Content } from '../inodes/content.js';
import type { Journal } from '../inodes/journal.js';
import { ROOT_INO, type Inode } from '../inodes/types.js';
import { treeEntry } from '../model/entry.js';
import type { SnapshotStats, TreeEntry } from '../model/tree.js';
import { commitSnapshot } from '../snapshot/commit.js';
import type { Excludes } from '../snapshot/excludes.js';
import { reverifyReused, type EpochState, type GcFence } from '../snapshot/gcfence.js';
import { ReuseLog, SMALL_OBJECT, type ObjectStore } from '../snapshot/objects.js';
import { mapLimit } from '../util/concurrency.js';

export interface SealDeps {
  journal: Journal;
  content: Content;
  objects: ObjectStore;
  excludes: Excludes;
  home: string;
  host: string;
  /** Files sealed concurrently. */
  parallelism: number;
  /** Hashes a block off the event loop; returns the bytes again (the input may have been transferred). */
  hash?: (data: Buffer) => Promise<{ hash: string; data: Buffer }>;
  /** The org's gc fence and this home's last look at it (a look older than `FENCE_REUSE_MS` is renewed). */
  fence: { gc: GcFence; observed: EpochState | null };
}

/** A previous seal's last look at the gc epoch serves as the next seal's first look for this long. */
const FENCE_REUSE_MS = 30_000;

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
  const floor = deps.journal.beginSeal();
  const base = deps.journal.base();
  if (deps.journal.changedCount === 0 && base.snapshot !== null) return null;
  const last = deps.fence.observed;
  const since = last && last.done && deps.fence.gc.opts.monotonic() - last.atMs < FENCE_REUSE_MS ? last : await deps.fence.gc.observe();
  const d: SealDeps = { ...deps, objects: deps.objects.tracking(new ReuseLog()) };
  const tally: Tally = { filesHashed: 0, bytesHashed: 0, blocksNew: 0, bytesUploaded: 0, stats: { files: 0, dirs: 0, bytes: 0 }, reused: new Map() };
  const memo: Memo = new Map();
  const root = await sealDir(d, ROOT_INO, '', tally, memo);
  const r = d.journal.get(ROOT_INO);
  const prevStats = d.journal.getMeta<SnapshotStats>('stats');
  const reverify = reverifyReused(d.objects, (gone) => reupload(d, gone, tally.reused));
  const { snapshot, gen, observed } = await commitSnapshot(d.objects, d.home, base.gen, {
    root, parent: base.snapshot, host: d.host, stats: { ...mergeStats(prevStats, tally.stats), bytes: d.content.usedBytes }, reason,
    ...(r ? { rootAttrs: { mode: r.mode & 0o7777, uid: r.uid, gid: r.gid, mtimeNs: r.mtimeNs } } : {}),
  }, { fence: { gc: d.fence.gc, since, reverify } });
  deps.fence.observed = observed;
  d.journal.sealCommitted({ snapshot, gen }, floor);
  return { snapshot, gen, filesHashed: tally.filesHashed, bytesHashed: tally.bytesHashed, blocksNew: tally.blocksNew, bytesUploaded: tally.bytesUploaded, durationMs: Date.now() - started };
}

/** File and directory counts are approximate for partially loaded homes (bytes come from the exact count the content layer keeps). */
function mergeStats(prev: SnapshotStats | undefined, seen: SnapshotStats): SnapshotStats {
  return prev ? { files: Math.max(prev.files, seen.files), dirs: Math.max(prev.dirs, seen.dirs), bytes: Math.max(prev.bytes, seen.bytes) } : seen;
}

type Memo = Map<number, Promise<{ blocks: string[]; size: number }>>;

async function sealDir(d: SealDeps, ino: number, path: string, t: Tally, memo: Memo): Promise<string> {
  const dir = d.journal.get(ino);
  if (!dir) throw new Error(`seal: directory inode ${ino} vanished`);
  if (dir.tree && (!dir.loaded || d.journal.changedSeq(ino) === undefined)) return dir.tree;
  t.stats.dirs++;
  const kids: Array<[string, Inode]> = [];
  for (const [name, childIno] of d.journal.children(ino)) {
    const child = d.journal.get(childIno);
    if (!child) continue;
    const childPath = path ? `${path}/${name}` : name;
    if (d.excludes.excluded(childPath, child.kind === 'dir')) continue;
    kids.push([name, child]);
  }
  const entries = await mapLimit(kids, d.parallelism, async ([name, child]) => {
    const childPath = path ? `${path}/${name}` : name;
    return entryFor(d, name, child, childPath, t, memo);
  });
  entries.sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
  const hash = await d.objects.putTree({ entries });
  d.journal.setSealedTree(ino, hash);
  return hash;
}

async function entryFor(d: SealDeps, name: string, node: Inode, path: string, t: Tally, memo: Memo): Promise<TreeEntry> {
  if (node.kind === 'dir') return treeEntry(name, node, { tree: await sealDir(d, node.ino, path, t, memo), nlink: node.nlink });
  if (node.kind !== 'file') return treeEntry(name, node, linkOf(node));
  t.stats.files++;
  let p = memo.get(node.ino);
  if (!p) {
    p = sealFile(d, node.ino, t);
    memo.set(node.ino, p);
  }
  const { blocks, size } = await p;
  // The capture may have waited for writes queued before it: take the times they left.
  const fresh = d.journal.get(node.ino) ?? node;
  t.stats.bytes += size;
  return treeEntry(name, { ...fresh, size }, { blocks, ...linkOf(fresh) });
}

/** A hard-linked inode's link identity (kept from its snapshot, or assigned by `link`). */
function linkOf(node: Inode): { link?: number; nlink?: number } {
  return node.nlink > 1 && node.linkId !== undefined ? { link: node.linkId, nlink: node.nlink } : {};
}

/** New block list of a file: its changed blocks hashed (and uploaded if new) from its upper file. */
async function sealFile(d: SealDeps, ino: number, t: Tally): Promise<{ blocks: string[]; size: number }> {
  const r = await d.content.sealFile(ino, async (block, bytes) => {
    let data = bytes;
    let hash: string;
    if (d.hash) ({ hash, data } = await d.hash(data));
    else hash = hashBuffer(data);
    t.bytesHashed += block.length;
    // Small blocks are written again rather than asked about (one round trip instead of two).
    const upload = data.length <= SMALL_OBJECT || (await d.objects.missingBlocks([hash])).size > 0;
    if (upload) {
      await d.objects.putBlock(hash, data);
      t.blocksNew++;
      t.bytesUploaded += block.length;
    } else {
      t.reused.set(hash, { ino, offset: block.offset, length: block.length });
    }
    return hash;
  });
  if (r.captured) t.filesHashed++;
  return { blocks: r.blocks, size: r.size };
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

/**
 * Sealing: turns the dirty part of a mounted home's journal into a new snapshot and advances HEAD.
 *
 * Walks from the root only into dirty directories (the journal's dirty set), so the cost is proportional
 * to what changed, not to the size of the home. Only dirty files are read, and of large files only their
 * dirty 4 MiB blocks; blocks the store already has are not uploaded. Objects are written bottom-up
 * (blocks → trees → snapshot → HEAD). Each file is read under its content lock, so it is captured at one
 * instant; anything changed while the seal runs stays dirty for the next one.
 */
import { blockRanges, SINGLE_BLOCK_MAX, hashBuffer } from '../hash/blake3.js';
import type { Content } from '../inodes/content.js';
import type { Journal } from '../inodes/journal.js';
import { ROOT_INO, type Inode } from '../inodes/types.js';
import type { UpperFiles } from '../inodes/upper.js';
import { mapLimit } from '../util/concurrency.js';
import type { Excludes } from './excludes.js';
import { commitSnapshot } from './commit.js';
import { reverifyReused, type EpochState, type GcFence } from './gcfence.js';
import { ReuseLog, SMALL_OBJECT, type ObjectStore } from './objects.js';
import type { SnapshotStats, TreeEntry } from '../model/tree.js';

export interface SealDeps {
  journal: Journal;
  content: Content;
  upper: UpperFiles;
  objects: ObjectStore;
  excludes: Excludes;
  org: string;
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

/** Seals everything dirty. Returns null when nothing changed since the last seal. */
export async function seal(deps: SealDeps, reason: string): Promise<SealResult | null> {
  const started = Date.now();
  const floor = deps.journal.currentSeq;
  deps.journal.sealFloor = floor;
  const base = deps.journal.base();
  if (deps.journal.dirtyCount === 0 && base.snapshot !== null) return null;
  const last = deps.fence.observed;
  const since = last && last.done && deps.fence.gc.opts.monotonic() - last.atMs < FENCE_REUSE_MS ? last : await deps.fence.gc.observe();
  const d: SealDeps = { ...deps, objects: deps.objects.tracking(new ReuseLog()) };
  const tally: Tally = { filesHashed: 0, bytesHashed: 0, blocksNew: 0, bytesUploaded: 0, stats: { files: 0, dirs: 0, bytes: 0 }, reused: new Map() };
  const memo = new Map<number, Promise<string[]>>();
  const root = await sealDir(d, ROOT_INO, '', tally, memo);
  const r = d.journal.get(ROOT_INO);
  const prevStats = d.journal.getMeta<SnapshotStats>('stats');
  const reverify = reverifyReused(d.objects, (gone) => reupload(d, gone, tally.reused));
  const { snapshot: snapshotId, gen, observed } = await commitSnapshot(d.objects, d.home, base.gen, {
    root, parent: base.snapshot, host: d.host, stats: { ...mergeStats(prevStats, tally.stats), bytes: d.content.usedBytes }, reason,
    ...(r ? { rootAttrs: { mode: r.mode & 0o7777, uid: r.uid, gid: r.gid, mtimeNs: r.mtimeNs } } : {}),
  }, { fence: { gc: d.fence.gc, since, reverify } });
  deps.fence.observed = observed;
  d.journal.txn(() => {
    d.journal.setBase({ snapshot: snapshotId, gen });
    d.journal.clearDirty(floor);
  });
  return { snapshot: snapshotId, gen, filesHashed: tally.filesHashed, bytesHashed: tally.bytesHashed, blocksNew: tally.blocksNew, bytesUploaded: tally.bytesUploaded, durationMs: Date.now() - started };
}

/** File and directory counts are approximate for partially loaded homes (bytes come from the exact count the content layer keeps). */
function mergeStats(prev: SnapshotStats | undefined, seen: SnapshotStats): SnapshotStats {
  return prev ? { files: Math.max(prev.files, seen.files), dirs: Math.max(prev.dirs, seen.dirs), bytes: Math.max(prev.bytes, seen.bytes) } : seen;
}

async function sealDir(d: SealDeps, ino: number, path: string, t: Tally, memo: Map<number, Promise<string[]>>): Promise<string> {
  const dir = d.journal.get(ino);
  if (!dir) throw new Error(`seal: directory inode ${ino} vanished`);
  if (dir.tree && (!dir.loaded || d.journal.dirtySeq(ino) === undefined)) return dir.tree;
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
  d.journal.update(ino, { tree: hash });
  return hash;
}

async function entryFor(d: SealDeps, name: string, node: Inode, path: string, t: Tally, memo: Map<number, Promise<string[]>>): Promise<TreeEntry> {
  const e: TreeEntry = {
    name, kind: node.kind, mode: node.mode & 0o7777, uid: node.uid, gid: node.gid, size: node.kind === 'file' || node.kind === 'symlink' ? node.size : 0,
    mtimeNs: node.mtimeNs, ctimeNs: node.ctimeNs,
  };
  if (node.xattrs && node.xattrs.length > 0) e.xattrs = node.xattrs;
  if (node.kind === 'symlink') e.target = node.target ?? '';
  if (node.kind === 'chardev' || node.kind === 'blockdev') e.rdev = node.rdev ?? 0;
  if (node.kind === 'dir') {
    e.tree = await sealDir(d, node.ino, path, t, memo);
    e.nlink = Math.max(2, node.nlink);
  }
  if (node.kind === 'file') {
    t.stats.files++;
    let p = memo.get(node.ino);
    if (!p) {
      p = sealFile(d, node.ino, t);
      memo.set(node.ino, p);
    }
    e.blocks = await p;
    const fresh = d.journal.get(node.ino) ?? node;
    e.size = fresh.sealedSize ?? fresh.size;
    e.mtimeNs = fresh.mtimeNs;
    e.ctimeNs = fresh.ctimeNs;
    t.stats.bytes += e.size;
    if (fresh.nlink > 1 && fresh.linkId !== undefined) {
      e.link = fresh.linkId;
      e.nlink = fresh.nlink;
    }
  }
  return e;
}

/** New block list of a file: dirty blocks hashed (and uploaded if new) from the upper file. */
function sealFile(d: SealDeps, ino: number, t: Tally): Promise<string[]> {
  return d.content.withLock(ino, async () => {
    const node = d.journal.get(ino);
    if (!node) throw new Error(`seal: file inode ${ino} vanished`);
    if (node.dirty === undefined || node.local === undefined) return node.blocks ?? [];
    const old = node.blocks ?? [];
    const oldLarge = (node.sealedSize ?? 0) > SINGLE_BLOCK_MAX;
    const ranges = blockRanges(node.size);
    const out: string[] = [];
    for (let i = 0; i < ranges.length; i++) {
      const [off, len] = ranges[i] as [number, number];
      // Invariant (inodes/content.ts): every dirty block is local and any size change dirties the blocks it
      // touches, so a clean block of an unchanged large layout is exactly the sealed one.
      const reuse = oldLarge && node.size > SINGLE_BLOCK_MAX && node.dirty !== 'all' && !node.dirty.includes(i) && i < old.length;
      if (reuse) {
        out.push(old[i] as string);
        continue;
      }
      let data = await d.upper.read(ino, off, len);
      let hash: string;
      if (d.hash) ({ hash, data } = await d.hash(data));
      else hash = hashBuffer(data);
      t.bytesHashed += len;
      // Small blocks are written again rather than asked about (one round trip instead of two).
      const upload = data.length <= SMALL_OBJECT || (await d.objects.missingBlocks([hash])).size > 0;
      if (upload) {
        await d.objects.putBlock(hash, data);
        t.blocksNew++;
        t.bytesUploaded += len;
      } else {
        t.reused.set(hash, { ino, offset: off, length: len });
      }
      out.push(hash);
    }
    t.filesHashed++;
    d.journal.update(ino, { blocks: out, sealedSize: node.size, dirty: undefined });
    return out;
  });
}

/**
 * A gc that overlapped this seal deleted blocks it deduplicated against: upload them again from the upper
 * files. A file rewritten since cannot give the old bytes back: it is marked wholly dirty and the seal fails
 * with HEAD unchanged, so the next seal hashes it afresh.
 */
async function reupload(d: SealDeps, gone: string[], reused: Map<string, ReusedBlock>): Promise<void> {
  let lost = 0;
  for (const hash of gone) {
    const at = reused.get(hash);
    if (!at) throw new Error(`seal: block ${hash.slice(0, 12)} is gone but was not deduplicated by this seal`);
    await d.content.withLock(at.ino, async () => {
      const data = d.journal.get(at.ino)?.local !== undefined ? await d.upper.read(at.ino, at.offset, at.length).catch(() => null) : null;
      if (data && data.length === at.length && hashBuffer(data) === hash) {
        await d.objects.putBlock(hash, data);
        return;
      }
      lost++;
      d.journal.txn(() => {
        d.journal.update(at.ino, { dirty: 'all' });
        d.journal.markDirty(at.ino);
      });
    });
  }
  if (lost > 0) throw new Error(`seal: a concurrent gc deleted ${lost} blocks this seal deduplicated against and their files changed since; HEAD is unchanged and they are sealed again next time`);
}

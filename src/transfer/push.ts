/**
 * Push: snapshot a plain directory into the store (the first sync of a grown home, or a backup).
 *
 * Four passes, each bounded: scan (readdir + lstat of a few directories at a time, depth first, excludes
 * applied, names validated), xattrs (one batched helper process), content (stream-hash every distinct file
 * inode block by block into buffers reused within a byte budget (util/slabs.ts), blocks of 256 KiB and
 * more on worker threads (hash/pool.ts), smaller files read whole with synchronous calls, and
 * upload only the blocks the org lacks: up to 1 MiB with one create-only PUT, larger ones after an
 * existence check), then trees bottom-up (each as soon as its subdirectories'), the snapshot, and HEAD
 * advanced from the generation the push started from. Objects are always written before anything that
 * references them, so a crash or a lost HEAD race leaves the previous HEAD intact and the new objects as
 * collectable orphans.
 * On a store over the network, push also writes the home's push pack (pushpack.ts: the small blocks in
 * pull order), streamed while the files are read from the blocks the content pass reads and hashes anyway
 * (pushpack-writer.ts), completed once HEAD moved, and the namespace pack (nspack.ts) after HEAD moved;
 * both are hints: a failure to write them leaves the push committed (a failed push aborts the pack).
 *
 * A file the parent snapshot (HEAD) holds at the same path with the same size, mtime and ctime is not read
 * again: its block list is reused (`rehash` turns this off). Everything else is hashed.
 *
 * Hard links (same dev:ino inside the tree) share one `link` id, assigned in depth-first name order so the
 * same tree always encodes the same way. Every entry on the pushed directory's device records the inode
 * number a mount serves for it (model/inos.ts, `pushedIno`): st_ino's low 32 bits, as git's index keeps
 * them, so `git status` on a woken home finds its index clean without reading the files. A file that
 * changes while it is hashed is re-read (up to 3 times).
 * Sockets are skipped (they mean nothing on another host) and counted in `skipped`.
 *
 * What cannot be read (permission denied) does not stop the push, as in restic: an unreadable file is left
 * out, an unreadable directory is kept empty, and each is named in `unreadable`; the snapshot is committed
 * and the caller reports it as incomplete.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type BigIntStats } from 'node:fs';
import { lstat, open, readdir, readlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { defaults } from '../config.js';
import { BLOCK_SIZE, blockRanges, hashBuffer, SINGLE_BLOCK_MAX } from '../hash/blake3.js';
import { HashPool } from '../hash/pool.js';
import { overNetwork, type Store } from '../store/store.js';
import { mapLimit, Semaphore } from '../util/concurrency.js';
import { Slabs } from '../util/slabs.js';
import { UserError } from '../util/errors.js';
import { pushPackKey } from '../store/keys.js';
import { PushPackWriter, type PackBlock, type PackWriterOptions, type PushPackResult } from './pushpack-writer.js';
import { pullOrder } from './pushpack.js';
import { treeEntry } from '../model/entry.js';
import { pushedIno } from '../model/inos.js';
import { compareNames, nameProblem } from '../format/codec.js';
import { Excludes } from '../format/excludes.js';
import { commitSnapshot } from '../format/commit.js';
import { GcFence, reverifyReused, type EpochState, type FenceOptions } from '../format/gcfence.js';
import { readHead, type HeadRecord } from '../format/heads.js';
import { storeNsPack, TreeMemo, wantsNsPack } from './nspack.js';
import { ObjectStore, ReuseLog } from '../format/objects.js';
import { OsHelper } from './oshelper.js';
import type { EntryKind, TreeEntry } from '../model/tree.js';

export interface PushProgress {
  phase: 'scan' | 'content' | 'trees' | 'done';
  /** Entries found while scanning; files hashed (or reused) afterwards. */
  files: number;
  filesTotal: number;
  bytesHashed: number;
  bytesTotal: number;
  bytesUploaded: number;
  blocksNew: number;
}

/** A path push could not read: a file is left out of the snapshot, a directory (`dir`) kept empty. */
export interface Unreadable {
  path: string;
  reason: string;
  dir: boolean;
}

export interface PushOptions {
  /** Exclude patterns (config.ts `excludePatterns()`); none when absent. */
  excludes?: readonly string[];
  /** Files hashed and uploaded at once (default: config.ts `defaults.push.parallelism`). */
  parallelism?: number;
  /** Read and store xattrs (default true; needs python3). */
  xattrs?: boolean;
  /**
   * Hash every file even when the parent snapshot has it with the same size, mtime and ctime (default
   * false: such files reuse the parent's block list, as restic and git do; ctime cannot be set back by
   * a user, so a rewritten file is always noticed).
   */
  rehash?: boolean;
  /** The HEAD this push starts from; read from the store when undefined. */
  fromHead?: HeadRecord | null;
  host?: string;
  reason?: string;
  onProgress?: (p: PushProgress) => void;
  /** gc fence timing (format/gcfence.ts); tests shorten it. */
  fence?: Partial<FenceOptions>;
  /** Test hook: runs after every object is written, before HEAD (to interleave a gc deterministically). */
  beforeCommit?: () => Promise<void>;
  /** Write the home's push pack (default: on stores over the network; pushpack.ts, pushpack-writer.ts). */
  pushPack?: boolean;
  /** The pack writer's part size, parts in flight and reorder budget (tests make them small). */
  packWriter?: Partial<PackWriterOptions>;
}

export type { PushPackResult } from './pushpack-writer.js';

export interface PushResult {
  snapshot: string;
  gen: number;
  parent: string | null;
  files: number;
  dirs: number;
  bytes: number;
  blocks: number;
  blocksNew: number;
  bytesHashed: number;
  bytesUploaded: number;
  /** Files whose blocks were taken from the parent snapshot without reading them. */
  filesReused: number;
  excluded: number;
  skipped: number;
  /** Files deleted between the scan and their reading: left out of the snapshot. */
  vanished: number;
  /** Paths (relative to the pushed directory) that could not be read, sorted, with the reason. */
  unreadable: Unreadable[];
  /** null: this store gets no push pack. */
  pushPack: PushPackResult | null;
  seconds: number;
}

/**
 * What push keeps of an entry's lstat: a BigIntStats holds 18 BigInts (about 600 bytes), and push holds one
 * per entry of the home from the scan to the trees. Times, device and inode number stay exact (BigInt).
 */
interface PushStat {
  dev: bigint;
  ino: bigint;
  mode: number;
  uid: number;
  gid: number;
  rdev: number;
  nlink: number;
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

function pushStat(st: BigIntStats): PushStat {
  return {
    dev: st.dev, ino: st.ino, mode: Number(st.mode), uid: Number(st.uid), gid: Number(st.gid), rdev: Number(st.rdev),
    nlink: Number(st.nlink), size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs,
  };
}

interface Node {
  name: string;
  rel: string;
  kind: EntryKind;
  st: PushStat;
  depth: number;
  children?: Node[];
  target?: string;
  xattrs?: Array<[string, Buffer]>;
  size: number;
  blocks?: string[];
  tree?: string;
  link?: number;
  /** Hard links: how many names of this inode the tree holds (its nlink inside the home). */
  linkCount?: number;
  /** Left out of the snapshot: deleted between the scan and reading it, or unreadable (a file). */
  vanished?: boolean;
  /** Could not be read: a file is left out (vanished too), a directory is kept without its entries. */
  unreadable?: boolean;
  /** Its blocks for the push pack (up to `pushPack.blockMax`), as read and hashed; handed to the pack writer. */
  pack?: PackBlock[];
}

/** Permission errors: what this user cannot read is skipped and named, not fatal. */
function unreadableReason(e: unknown): string | null {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EACCES') return 'permission denied';
  if (code === 'EPERM') return 'operation not permitted';
  return null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function kindOf(st: BigIntStats): EntryKind | null {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFIFO()) return 'fifo';
  if (st.isCharacterDevice()) return 'chardev';
  if (st.isBlockDevice()) return 'blockdev';
  return null; // sockets
}

class Pusher {
  /** The buffers files are read into, reused, within push's budget for blocks in memory (util/slabs.ts). */
  private readonly slabs = new Slabs(defaults.push.blockBytes);
  private readonly excludes: Excludes;
  private readonly uploads = new Map<string, Promise<void>>();
  private readonly progress: PushProgress = { phase: 'scan', files: 0, filesTotal: 0, bytesHashed: 0, bytesTotal: 0, bytesUploaded: 0, blocksNew: 0 };
  excluded = 0;
  skipped = 0;
  reused = 0;
  /** Blocks up to this size are kept for the push pack (0: no pack). */
  packMax = 0;
  readonly unreadable: Unreadable[] = [];
  private readonly parentDirs = new Map<string, Promise<Map<string, TreeEntry> | null>>();

  constructor(
    private readonly objects: ObjectStore,
    private readonly opts: PushOptions,
    private readonly parentRoot: string | null,
    private readonly pool: HashPool,
    /** The pushed directory's device: only its entries' inode numbers are recorded (another file system's may repeat). */
    private readonly rootDev: bigint,
    /** The pushed directory, absolute. */
    private readonly rootAbs: string,
  ) {
    this.excludes = new Excludes(opts.excludes ?? []);
  }

  /** The parent snapshot's entries of directory `rel` ('' is the root), or null if it had no such directory. */
  private parentDir(rel: string): Promise<Map<string, TreeEntry> | null> {
    let p = this.parentDirs.get(rel);
    if (!p) {
      p = (async () => {
        let hash: string | undefined;
        if (rel === '') {
          hash = this.parentRoot ?? undefined;
        } else {
          const slash = rel.lastIndexOf('/');
          const up = await this.parentDir(slash >= 0 ? rel.slice(0, slash) : '');
          const e = up?.get(rel.slice(slash + 1));
          hash = e?.kind === 'dir' ? e.tree : undefined;
        }
        if (hash === undefined) return null;
        return new Map((await this.objects.getTree(hash)).entries.map((e) => [e.name, e]));
      })();
      this.parentDirs.set(rel, p);
    }
    return p;
  }

  /** Takes the parent's block list when the file is unchanged by size, mtime and ctime. */
  private async reuse(node: Node): Promise<boolean> {
    if (this.parentRoot === null || this.opts.rehash) return false;
    const slash = node.rel.lastIndexOf('/');
    const pe = (await this.parentDir(slash >= 0 ? node.rel.slice(0, slash) : ''))?.get(node.name);
    if (!pe || pe.kind !== 'file' || pe.size !== node.st.size || pe.mtimeNs !== node.st.mtimeNs || pe.ctimeNs !== node.st.ctimeNs) return false;
    node.size = pe.size;
    node.blocks = pe.blocks ?? [];
    this.reused++;
    return true;
  }

  /** The absolute path of `node` (derived, not kept: push holds one node per entry of the home). */
  abs(node: Node): string {
    if (node.rel === '') return this.rootAbs;
    return this.rootAbs.endsWith('/') ? this.rootAbs + node.rel : `${this.rootAbs}/${node.rel}`; // '/' itself pushed
  }

  /**
   * Lists the whole tree under `root`: `scanDirs` directories at once, each with at most `scanPerDir`
   * lstat/readlink calls in flight, taken depth first. What waits is a stack of directories, not a promise
   * per entry, so the scan's memory is its tree and what is in flight.
   */
  async scan(root: Node): Promise<void> {
    const stack: Node[] = [root];
    let busy = 0;
    let failure: { e: unknown } | null = null;
    let idle: Array<() => void> = [];
    const wakeAll = (): void => {
      const waiting = idle;
      idle = [];
      for (const w of waiting) w();
    };
    const worker = async (): Promise<void> => {
      for (;;) {
        const dir = failure ? undefined : stack.pop();
        if (!dir) {
          if (busy === 0) return wakeAll();
          await new Promise<void>((resolve) => idle.push(resolve));
          continue;
        }
        busy++;
        try {
          await this.list(dir);
          for (const c of dir.children ?? []) if (c.kind === 'dir') stack.push(c);
        } catch (e) {
          failure ??= { e };
        } finally {
          busy--;
          wakeAll();
        }
      }
    };
    await Promise.all(Array.from({ length: defaults.push.scanDirs }, worker));
    if (failure) throw (failure as { e: unknown }).e;
  }

  /** Lists one directory into `dir.children` (sorted by name), with excludes applied and names validated. */
  private async list(dir: Node): Promise<void> {
    const dirAbs = this.abs(dir);
    let raw: Buffer[];
    try {
      raw = await readdir(dirAbs, { encoding: 'buffer' });
    } catch (e) {
      const reason = unreadableReason(e);
      if (dir.depth === 0) throw reason ? new UserError(`cannot push ${dirAbs}: ${reason}`) : e;
      dir.children = [];
      if (reason) this.skipUnreadable(dir, reason);
      else if ((e as NodeJS.ErrnoException).code === 'ENOENT') dir.vanished = true; // deleted since its parent was listed
      else throw e;
      return;
    }
    const found = await mapLimit(raw, defaults.push.scanPerDir, (b) => this.child(dir, dirAbs, b));
    const children = found.filter((n): n is Node => n !== null);
    children.sort((a, b) => compareNames(a.name, b.name));
    dir.children = children;
    this.progress.files += children.length;
    this.emit();
  }

  /** The node of directory entry `b` of `dir`, or null when it is gone, unreadable, a socket or excluded. */
  private async child(dir: Node, dirAbs: string, b: Buffer): Promise<Node | null> {
    let name: string;
    try {
      name = utf8.decode(b);
    } catch {
      throw new UserError(`cannot push ${join(dirAbs, b.toString('latin1'))}: its name is not valid UTF-8`);
    }
    const rel = dir.rel ? `${dir.rel}/${name}` : name;
    const problem = nameProblem(name);
    if (problem) throw new UserError(`cannot push ${rel}: ${problem}`);
    const abs = dirAbs.endsWith('/') ? dirAbs + name : `${dirAbs}/${name}`;
    let st: BigIntStats;
    try {
      st = await lstat(abs, { bigint: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null; // deleted since the listing
      const reason = unreadableReason(e);
      if (!reason) throw e;
      this.unreadable.push({ path: rel, reason, dir: false });
      return null;
    }
    const kind = kindOf(st);
    if (kind === null) {
      this.skipped++;
      return null;
    }
    if (this.excludes.excluded(rel, kind === 'dir')) {
      this.excluded++;
      return null;
    }
    const node: Node = { name, rel, kind, st: pushStat(st), depth: dir.depth + 1, size: 0 };
    if (kind === 'symlink') {
      try {
        node.target = await readlink(abs);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        const reason = unreadableReason(e);
        if (!reason) throw e;
        this.unreadable.push({ path: rel, reason, dir: false });
        return null;
      }
      node.size = Buffer.byteLength(node.target, 'utf8');
    }
    return node;
  }

  private async ensureBlock(hash: string, data: Buffer): Promise<void> {
    let p = this.uploads.get(hash);
    if (!p) {
      p = (async () => {
        // Up to createOnlyMax: one create-if-absent instead of an existence check and a write (one round
        // trip; a hit is recorded as reused, for the gc fence). Larger: ask first, not to send it for nothing.
        if (data.length <= defaults.push.createOnlyMax) {
          if (!(await this.objects.putBlockIfAbsent(hash, data))) return;
        } else {
          if ((await this.objects.missingBlocks([hash])).size === 0) return;
          await this.objects.putBlock(hash, data);
        }
        this.progress.blocksNew++;
        this.progress.bytesUploaded += data.length;
      })();
      this.uploads.set(hash, p);
      // Once stored, one shared settled promise stands for it (a push sees about one block per file).
      void p.then(() => this.uploads.set(hash, STORED), () => undefined);
    }
    await p;
  }

  /**
   * Reads, hashes (large blocks on the HashPool) and uploads one file, block by block (at most one block
   * of it in memory). Returns false if the file changed while it was read (size, mtime or ctime moved).
   */
  private async readFile(node: Node): Promise<boolean> {
    if (node.st.size <= defaults.push.syncReadMax) {
      const slab = await this.slabs.take(defaults.push.syncReadMax);
      try {
        const small = readSmall(node, this.abs(node), slab.buf);
        if (small === false) return false;
        if (small !== null) {
          const hash = hashBuffer(small.data);
          this.progress.bytesHashed += small.data.length;
          if (small.data.length > 0) await this.ensureBlock(hash, small.data);
          node.st = pushStat(small.st);
          node.size = small.data.length;
          node.blocks = small.data.length > 0 ? [hash] : [];
          if (small.data.length > 0 && small.data.length <= this.packMax) node.pack = [{ hash, data: Buffer.from(small.data) }];
          return true;
        }
      } finally {
        slab.release();
      }
    }
    const fh = await open(this.abs(node), READ_FLAGS);
    try {
      const before = await fh.stat({ bigint: true });
      if (!before.isFile()) throw new UserError(`cannot push ${node.rel}: it stopped being a regular file while pushing`);
      const size = Number(before.size);
      const blocks: string[] = [];
      const pack: PackBlock[] = [];
      for (const [offset, length] of blockRanges(size)) {
        const slab = await this.slabs.take(length);
        try {
          const buf = slab.buf;
          let got = 0;
          while (got < length) {
            const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
            if (bytesRead === 0) return false; // shrank
            got += bytesRead;
          }
          const { hash, data } = await this.pool.hash(buf);
          this.progress.bytesHashed += data.length;
          await this.ensureBlock(hash, data);
          blocks.push(hash);
          if (data.length <= this.packMax) pack.push({ hash, data: Buffer.from(data) });
        } finally {
          slab.release();
        }
      }
      const after = await fh.stat({ bigint: true });
      if (after.size !== before.size || after.mtimeNs !== before.mtimeNs || after.ctimeNs !== before.ctimeNs) return false;
      node.st = pushStat(after);
      node.size = size;
      node.blocks = blocks;
      if (pack.length > 0) node.pack = pack;
      return true;
    } finally {
      await fh.close();
    }
  }

  /** Records `node` as unreadable: a file is left out of the snapshot, a directory kept empty. */
  skipUnreadable(node: Node, reason: string): void {
    node.unreadable = true;
    if (node.kind !== 'dir') node.vanished = true;
    this.unreadable.push({ path: node.rel, reason, dir: node.kind === 'dir' });
  }

  /** Starts a phase of the progress report; `totals` (content) restarts the file counter at 0 of them. */
  startPhase(phase: PushProgress['phase'], totals?: { files: number; bytes: number }): void {
    this.progress.phase = phase;
    if (totals) Object.assign(this.progress, { files: 0, filesTotal: totals.files, bytesTotal: totals.bytes });
    this.emit();
  }

  /** The content phase is over: its reusable buffers are let go before the trees are encoded. */
  contentDone(): void {
    this.slabs.dropFree();
  }

  /** One file of the content phase is done (hashed, reused, or left out). */
  fileDone(): void {
    this.progress.files++;
    this.emit();
  }

  get blocksNew(): number {
    return this.progress.blocksNew;
  }

  get bytesHashed(): number {
    return this.progress.bytesHashed;
  }

  get bytesUploaded(): number {
    return this.progress.bytesUploaded;
  }

  /** Hashes and uploads one file unless HEAD has it unchanged; re-reads it if it changed meanwhile. */
  async content(node: Node): Promise<void> {
    if (await this.reuse(node)) {
      if (this.packMax > 0) node.pack = readPackBlocks(node, this.abs(node), this.packMax);
      return;
    }
    for (let attempt = 0; attempt < defaults.push.readAttempts; attempt++) if (await this.readFile(node)) return;
    throw new UserError(`cannot push ${node.rel}: it keeps changing while it is read; stop the writer and retry`);
  }

  entry(n: Node): TreeEntry {
    const attrs = { kind: n.kind, mode: n.st.mode, uid: n.st.uid, gid: n.st.gid, size: n.size, mtimeNs: n.st.mtimeNs, ctimeNs: n.st.ctimeNs, xattrs: n.xattrs, target: n.target, rdev: n.st.rdev };
    const ino = n.st.dev === this.rootDev ? pushedIno(n.st.ino) : undefined;
    if (n.kind === 'dir') return treeEntry(n.name, attrs, { tree: n.tree, nlink: 2 + (n.children ?? []).filter((c) => c.kind === 'dir' && !c.vanished).length, ino });
    return treeEntry(n.name, attrs, { blocks: n.blocks, link: n.link, nlink: n.link !== undefined ? n.linkCount : undefined, ino });
  }

  emit(): void {
    this.opts.onProgress?.({ ...this.progress });
  }
}

/** Every node below `root`, in pull order (pushpack.ts `pullOrder`: the push pack's and the content pass's). */
function flatten(root: Node): Node[] {
  const out: Node[] = [];
  const visit = (n: Node): void => {
    const kids = n.children ?? [];
    for (const i of pullOrder(kids.map((c) => c.name))) {
      const c = kids[i] as Node;
      out.push(c);
      if (c.kind === 'dir') visit(c);
    }
  };
  visit(root);
  return out;
}

/** O_NONBLOCK: a FIFO swapped in since the scan must not block the open (fstat then rejects it). */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * A small file read whole with synchronous calls (open, fstat, read, fstat, close: each a few µs, where the
 * promise API pays a thread-pool round trip for each). False if it changed while read; null if it has
 * grown past `syncReadMax` since the scan (the caller reads it block by block). The bytes are read into
 * `into` (at least syncReadMax long): `data` is a view of it.
 */
function readSmall(node: Node, abs: string, into: Buffer): { st: BigIntStats; data: Buffer } | false | null {
  const fd = openSync(abs, READ_FLAGS);
  try {
    const before = fstatSync(fd, { bigint: true });
    if (!before.isFile()) throw new UserError(`cannot push ${node.rel}: it stopped being a regular file while pushing`);
    if (before.size > BigInt(defaults.push.syncReadMax)) return null;
    const data = into.subarray(0, Number(before.size));
    for (let got = 0; got < data.length; ) {
      const n = readSync(fd, data, got, data.length - got, got);
      if (n === 0) return false; // shrank
      got += n;
    }
    const after = fstatSync(fd, { bigint: true });
    if (after.size !== before.size || after.mtimeNs !== before.mtimeNs || after.ctimeNs !== before.ctimeNs) return false;
    return { st: after, data };
  } finally {
    closeSync(fd);
  }
}

/**
 * The push pack's blocks of a file push did not read (its block list was taken from the parent snapshot):
 * the small ones, read from the file and verified by hash (a block that does not match, because the file
 * changed since, is left out of the pack).
 */
function readPackBlocks(node: Node, abs: string, packMax: number): PackBlock[] {
  const out: PackBlock[] = [];
  blockRanges(node.size).forEach(([offset, length], i) => {
    const hash = node.blocks?.[i];
    if (hash === undefined || length > packMax) return;
    const data = readRange(abs, offset, length);
    if (data && hashBuffer(data) === hash) out.push({ hash, data });
  });
  return out;
}

/** Whether a file of `size` bytes has a block of at most `packMax` bytes (the whole file, or a large file's tail). */
function packsBlocksOf(size: number, packMax: number): boolean {
  if (size <= SINGLE_BLOCK_MAX) return size >= 1 && size <= packMax;
  const tail = size % BLOCK_SIZE;
  return tail >= 1 && tail <= packMax;
}

/** `length` bytes of file `abs` at `offset` (synchronous: a few µs each from the page cache), or null when they cannot be read. */
function readRange(abs: string, offset: number, length: number): Buffer | null {
  let fd: number;
  try {
    fd = openSync(abs, READ_FLAGS);
  } catch {
    return null;
  }
  try {
    const data = Buffer.allocUnsafe(length);
    for (let got = 0; got < length; ) {
      const n = readSync(fd, data, got, length - got, offset + got);
      if (n === 0) return null;
      got += n;
    }
    return data;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** What `Pusher.uploads` holds for a block already stored. */
const STORED: Promise<void> = Promise.resolve();


/** Snapshots directory `dir` as a new HEAD of `org/home`. Throws HeadConflictError if HEAD moved meanwhile. */
export async function pushDirectory(dir: string, store: Store, org: string, home: string, opts: PushOptions = {}): Promise<PushResult> {
  const t0 = performance.now();
  const objects = new ObjectStore(store, org).tracking(new ReuseLog());
  const memo = wantsNsPack(store.url) ? new TreeMemo() : null;
  objects.memo = memo;
  const abs = resolve(dir);
  let rootSt: BigIntStats;
  try {
    rootSt = await lstat(abs, { bigint: true });
  } catch {
    throw new UserError(`cannot push ${dir}: no such directory`);
  }
  if (!rootSt.isDirectory()) throw new UserError(`cannot push ${dir}: not a directory`);
  const head = opts.fromHead !== undefined ? opts.fromHead : await readHead(store, org, home);
  const fence = new GcFence(store, org, opts.fence);
  const since = await fence.observe(); // before any dedupe check (format/gcfence.ts)

  const parentRoot = head && !opts.rehash ? (await objects.getSnapshot(head.snapshot)).root : null;
  const root: Node = { name: '', rel: '', kind: 'dir', st: pushStat(rootSt), depth: 0, size: 0 };
  const pool = new HashPool();
  try {
    const p = new Pusher(objects, opts, parentRoot, pool, rootSt.dev, abs);
    return await pushWith({ p, root, store, objects, org, home, head, opts, t0, fence, since });
  } finally {
    await pool.close();
  }
}

interface PushContext {
  p: Pusher;
  root: Node;
  store: Store;
  objects: ObjectStore;
  org: string;
  home: string;
  head: HeadRecord | null;
  opts: PushOptions;
  t0: number;
  fence: GcFence;
  since: EpochState;
}

async function pushWith({ p, root, store, objects, org, home, head, opts, t0, fence, since }: PushContext): Promise<PushResult> {
  p.emit();
  await p.scan(root);
  const nodes = flatten(root);

  if (opts.xattrs !== false) {
    const helper = OsHelper.start();
    try {
      const xs = await helper.getXattrs(nodes.map((n) => p.abs(n)));
      nodes.forEach((n, i) => {
        const x = xs[i];
        if (x && x.length > 0) n.xattrs = x;
      });
    } finally {
      await helper.close();
    }
  }

  // Hard links: entries of one inode (seen at least twice in this tree) share a link id, in walk order.
  const inodeKey = (n: Node): string => `${n.st.dev}:${n.st.ino}`;
  const seen = new Map<string, number>();
  for (const n of nodes) if (n.kind !== 'dir' && n.st.nlink > 1) seen.set(inodeKey(n), (seen.get(inodeKey(n)) ?? 0) + 1);
  const linkIds = new Map<string, number>();
  for (const n of nodes) {
    const k = inodeKey(n);
    if (n.kind === 'dir' || (seen.get(k) ?? 0) < 2) continue;
    if (!linkIds.has(k)) linkIds.set(k, linkIds.size + 1);
    n.link = linkIds.get(k);
    n.linkCount = seen.get(k);
  }

  const byInode = new Map<string, Node[]>();
  for (const n of nodes) {
    if (n.kind !== 'file') continue;
    const group = byInode.get(inodeKey(n));
    if (group) group.push(n);
    else byInode.set(inodeKey(n), [n]);
  }
  const groups = [...byInode.values()];
  // The push pack goes up while the files are read, from the blocks push reads anyway (pushpack-writer.ts);
  // groups are in pull order (each inode at its first name, depth first), so a group's index is its slot.
  // (The push pack serves stores over the network only: on local disk pull reads the blocks as fast.)
  const pack = (opts.pushPack ?? overNetwork(store.url)) ? new PushPackWriter(store, pushPackKey(org, home), groups.length, { ...defaults.pushPack, ...opts.packWriter }) : null;
  p.packMax = pack ? defaults.pushPack.blockMax : 0;
  try {
    return await pushContent({ p, root, store, objects, org, home, head, opts, t0, fence, since }, nodes, groups, pack);
  } catch (e) {
    await pack?.abort();
    throw e;
  }
}

/** The content pass, the trees, the commit and the hints (pushWith's second half). */
async function pushContent({ p, root, store, objects, org, home, head, opts, t0, fence, since }: PushContext, nodes: Node[], groups: Node[][], pack: PushPackWriter | null): Promise<PushResult> {
  const rootSt = root.st;
  p.startPhase('content', { files: groups.length, bytes: groups.reduce((s, g) => s + (g[0] as Node).st.size, 0) });
  // A file with no block the pack takes (by its size at the scan) is handed over now: the pack never waits for it.
  const packs = (g: Node[]): boolean => pack !== null && packsBlocksOf((g[0] as Node).st.size, p.packMax);
  if (pack) groups.forEach((g, slot) => void (packs(g) ? undefined : pack.offer(slot, [])));
  await mapLimit(groups, opts.parallelism ?? defaults.push.parallelism, async (group, slot) => {
    // A file deleted since the scan (a live home) is left out; a hard link's other names may remain.
    // One this user cannot read is left out and named (its other names are the same inode: unreadable too).
    let source: Node | undefined;
    for (const n of group) {
      try {
        await p.content(n);
        source = n;
        break;
      } catch (e) {
        const reason = unreadableReason(e);
        if (reason) {
          for (const other of group) p.skipUnreadable(other, reason);
          break;
        }
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        n.vanished = true;
      }
    }
    for (const other of group) {
      if (other === source || other.vanished) continue;
      if (!source) {
        other.vanished = true;
        continue;
      }
      other.st = source.st;
      other.size = source.size;
      other.blocks = source.blocks;
    }
    const blocks = source?.pack ?? [];
    if (source) delete source.pack;
    if (pack && packs(group)) await pack.offer(slot, blocks);
    p.fileDone();
  });

  p.contentDone();
  p.startPhase('trees');
  const dirs = [root, ...nodes.filter((n) => n.kind === 'dir')];
  // Each tree goes up as soon as its subdirectories' trees have (not one depth at a time: a deep home
  // would pay one round trip per level on top of the slowest write of each level).
  const treeSlots = new Semaphore(defaults.push.treeParallelism);
  const writeTree = async (d: Node): Promise<void> => {
    await Promise.all((d.children ?? []).filter((c) => c.kind === 'dir').map(writeTree));
    const release = await treeSlots.acquire();
    try {
      d.tree = await objects.putTree({ entries: (d.children ?? []).filter((c) => !c.vanished).map((c) => p.entry(c)) });
    } finally {
      release();
    }
  };
  await writeTree(root);

  const kept = groups.map((g) => g.find((n) => !n.vanished)).filter((n): n is Node => n !== undefined);
  const stats = {
    files: nodes.filter((n) => n.kind !== 'dir' && !n.vanished).length,
    dirs: dirs.filter((d) => !d.vanished).length - 1,
    bytes: kept.reduce((s, n) => s + n.size, 0),
  };
  await opts.beforeCommit?.();
  const gone = async (hashes: string[]): Promise<void> => {
    throw new UserError(`a gc of org ${org} ran during this push and deleted ${hashes.length} blocks it deduplicated against; HEAD is unchanged: run the push again (it uploads them)`);
  };
  const { snapshot, gen } = await commitSnapshot(objects, home, head?.gen ?? null, {
    root: root.tree as string,
    parent: head?.snapshot ?? null,
    stats,
    rootAttrs: { mode: rootSt.mode & 0o7777, uid: rootSt.uid, gid: rootSt.gid, mtimeNs: rootSt.mtimeNs },
    reason: opts.reason ?? 'push',
    ...(opts.host !== undefined ? { host: opts.host } : {}),
  }, { fence: { gc: fence, since, reverify: reverifyReused(objects, gone) } });
  // The namespace pack, from the trees this push wrote, and the push pack (hints: a failure leaves the push as it is).
  const memo = objects.memo;
  const [, pushPack] = await Promise.all([
    memo instanceof TreeMemo ? storeNsPack(store, org, home, root.tree as string, async (h) => memo.get(h) ?? objects.getTreeData(h)).catch(() => 0) : 0,
    pack ? pack.finish(snapshot) : null,
  ]);
  p.startPhase('done');
  return {
    snapshot,
    gen,
    parent: head?.snapshot ?? null,
    files: stats.files,
    dirs: stats.dirs,
    bytes: stats.bytes,
    blocks: kept.reduce((s, n) => s + (n.blocks?.length ?? 0), 0),
    blocksNew: p.blocksNew,
    bytesHashed: p.bytesHashed,
    bytesUploaded: p.bytesUploaded,
    filesReused: p.reused,
    excluded: p.excluded,
    skipped: p.skipped,
    vanished: nodes.filter((n) => n.vanished && !n.unreadable).length,
    unreadable: p.unreadable.sort((a, b) => compareNames(a.path, b.path)),
    pushPack,
    seconds: (performance.now() - t0) / 1000,
  };
}

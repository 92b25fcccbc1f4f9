/**
 * Prefetch of a git work tree on the first lookup of its `.git/index` (the agent resuming on a fresh host). git
 * re-reads and hashes each tracked file whose stat data differs from what its index recorded, one at a
 * time, in index order: over a store one network hop away, one round trip per file. Homes serve the inode
 * numbers their trees record (model/inos.ts), so for a home pushed or sealed by this version nothing
 * differs; an index written elsewhere (a home sealed before trees recorded inode numbers, a copied repo)
 * does. When the mount first sees the index looked up, this reads it (git index versions 2 and 3; others
 * are left alone), resolves its paths through the view, and hands the blocks of the small, clean, uncached
 * files that git will read (`gitWillRead`) to the cache's prefetch queue in index order, within a byte
 * budget, so git finds them cached or in flight. The other small tracked files (within what is left of the
 * budget) wait for the first cold read of one of them (`coldRead`): a reader going through the work tree
 * (grep -r, a build) then finds them cached or in flight instead of fetching them one read at a time, and a
 * stat-only `git status` alone fetches nothing more (measured: docs/decisions/0052-portable-inode-numbers.md).
 *
 * Only a hint: an index that cannot be read or parsed, or a path that does not resolve, just prefetches
 * less. Each git directory is handled once per mount.
 */
import type { Inode } from '../inodes/types.js';
import type { HomeView } from '../inodes/view.js';

export interface GitIndexOptions {
  /** Files larger than this are not prefetched, and the index itself is not read beyond 64 MiB. */
  maxFileBytes: number;
  /** Bytes prefetched per work tree (0: off). */
  budgetBytes: number;
}

const MAX_INDEX_BYTES = 64 * 1024 * 1024;

/** One entry of a git index: its path and the stat data git compares (32-bit fields, as git keeps them). */
export interface GitIndexEntry {
  path: string;
  ctimeSec: number;
  mtimeSec: number;
  ino: number;
  mode: number;
  uid: number;
  gid: number;
  size: number;
}

/** The entries of a git index of version 2 or 3 (SHA-1), in index order; null for anything else. */
export function gitIndexEntries(buf: Buffer): GitIndexEntry[] | null {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC') return null;
  const version = buf.readUInt32BE(4);
  if (version !== 2 && version !== 3) return null;
  const count = buf.readUInt32BE(8);
  const out: GitIndexEntry[] = [];
  let at = 12;
  for (let i = 0; i < count; i++) {
    if (at + 62 > buf.length) return null;
    const flags = buf.readUInt16BE(at + 60);
    const extended = version === 3 && (flags & 0x4000) !== 0;
    const nameAt = at + 62 + (extended ? 2 : 0);
    const end = buf.indexOf(0, nameAt);
    if (end < 0) return null;
    out.push({
      path: buf.toString('utf8', nameAt, end), ctimeSec: buf.readUInt32BE(at), mtimeSec: buf.readUInt32BE(at + 8),
      ino: buf.readUInt32BE(at + 20), mode: buf.readUInt32BE(at + 24), uid: buf.readUInt32BE(at + 28), gid: buf.readUInt32BE(at + 32),
      size: buf.readUInt32BE(at + 36),
    });
    at += (nameAt - at + (end - nameAt) + 8) & ~7; // entries are NUL-padded to a multiple of 8 bytes
  }
  return out;
}

const NS = 1_000_000_000n;
const low32 = (n: number | bigint): number => Number(BigInt(n) & 0xffffffffn);

/**
 * Whether `git status` reads file `node` to check index entry `e` (git's `ie_match_stat` with its defaults:
 * trustctime on, st_dev not compared, seconds only): its stat data differs, or the entry is racily clean
 * (modified in the same second as the index was written, or later: `indexMtimeSec`).
 */
export function gitWillRead(e: GitIndexEntry, node: Inode, indexMtimeSec: number): boolean {
  const sec = (ns: bigint): number => low32(ns / NS);
  if (e.mtimeSec !== sec(node.mtimeNs) || e.ctimeSec !== sec(node.ctimeNs)) return true;
  if (e.ino !== low32(node.ino) || e.size !== low32(node.size) || e.uid !== node.uid || e.gid !== node.gid) return true;
  if ((e.mode & 0o170000) !== 0o100000 || (e.mode & 0o100) !== (node.mode & 0o100)) return true;
  return indexMtimeSec <= e.mtimeSec;
}

export class GitIndexPrefetch {
  private readonly seen = new Set<number>();
  /** Work trees whose clean tracked files wait for a first cold read of one of them: their inodes, their blocks. */
  private readonly armed: Array<{ inos: Set<number>; hashes: string[] }> = [];

  constructor(
    private readonly view: HomeView,
    private readonly blocks: {
      get(hash: string): Promise<Buffer>;
      has(hash: string): boolean;
      prefetch(hashes: readonly string[]): void;
    },
    private readonly opts: GitIndexOptions,
  ) {}

  /** The view looked up `name` in directory `parent`: starts the prefetch on a first `.git/index`. */
  lookedUp(parent: number, name: string, node: Inode): void {
    if (name !== 'index' || node.kind !== 'file' || this.opts.budgetBytes <= 0 || this.seen.has(parent)) return;
    const work = this.view.journal.get(parent)?.parents[0];
    if (work === undefined || this.view.journal.child(work, '.git') !== parent) return;
    this.seen.add(parent);
    this.run(work, node).catch(() => undefined);
  }

  private async run(work: number, index: Inode): Promise<void> {
    const c = index.content;
    if (c?.state !== 'clean' || c.sealed.size > MAX_INDEX_BYTES) return;
    const parts = await Promise.all(c.sealed.blocks.map((h) => this.blocks.get(h)));
    const entries = gitIndexEntries(Buffer.concat(parts).subarray(0, c.sealed.size));
    if (!entries) return;
    const indexMtimeSec = Number(index.mtimeNs / NS);
    const dirs = new Map<string, number>([['', work]]);
    const want: string[] = [];
    const later: Array<[string, number, number]> = [];
    let bytes = 0;
    for (const e of entries) {
      const p = e.path;
      const slash = p.lastIndexOf('/');
      const dir = await this.resolveDir(dirs, slash < 0 ? '' : p.slice(0, slash));
      if (dir === undefined) continue;
      const f = this.child(dir, p.slice(slash + 1));
      const fc = f?.kind === 'file' ? f.content : undefined;
      const hash = fc?.state === 'clean' && fc.sealed.blocks.length === 1 ? fc.sealed.blocks[0] : undefined;
      if (!f || !fc || hash === undefined || fc.sealed.size > this.opts.maxFileBytes || this.blocks.has(hash)) continue;
      if (!gitWillRead(e, f, indexMtimeSec)) {
        later.push([hash, fc.sealed.size, f.ino]);
        continue;
      }
      if (bytes + fc.sealed.size > this.opts.budgetBytes) break;
      bytes += fc.sealed.size;
      want.push(hash);
      if (want.length >= 256) this.blocks.prefetch(want.splice(0)); // start while the rest resolves
    }
    if (want.length > 0) this.blocks.prefetch(want);
    // Within what is left of the budget, the files git will not read: the likely reads of the work tree's
    // next reader (grep -r, a build), fetched many at a time once one of them is read cold.
    const rest: { inos: Set<number>; hashes: string[] } = { inos: new Set(), hashes: [] };
    for (const [hash, size, ino] of later) {
      if (bytes + size > this.opts.budgetBytes) break;
      bytes += size;
      rest.hashes.push(hash);
      rest.inos.add(ino);
    }
    if (rest.hashes.length > 0) this.armed.push(rest);
  }

  /** A small file was read cold: if it is a clean tracked file of an armed work tree, prefetch that tree's others. */
  coldRead(ino: number): void {
    const at = this.armed.findIndex((a) => a.inos.has(ino));
    if (at < 0) return;
    const [a] = this.armed.splice(at, 1);
    if (a) this.blocks.prefetch(a.hashes);
  }

  private child(dir: number, name: string): Inode | undefined {
    try {
      return this.view.lookup(dir, name);
    } catch {
      return undefined;
    }
  }

  /** The inode of work-tree directory `rel` (loading directories on the way), or undefined. */
  private async resolveDir(dirs: Map<string, number>, rel: string): Promise<number | undefined> {
    const known = dirs.get(rel);
    if (known !== undefined) return known < 0 ? undefined : known;
    const slash = rel.lastIndexOf('/');
    const parent = await this.resolveDir(dirs, slash < 0 ? '' : rel.slice(0, slash));
    let ino: number | undefined;
    if (parent !== undefined) {
      await this.view.ensureLoaded(parent);
      const d = this.child(parent, rel.slice(slash + 1));
      if (d?.kind === 'dir') {
        await this.view.ensureLoaded(d.ino);
        ino = d.ino;
      }
    }
    dirs.set(rel, ino ?? -1);
    return ino;
  }
}

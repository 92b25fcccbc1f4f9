/**
 * Prefetch of a directory's small files on the first cold read in it. Readers such as
 * `grep -r`, `tar c`, `git status` and npm go through a directory one file at a time; over a store one
 * network hop away each cold file would cost its own round trip, one after another. When a second file
 * of at most `maxFileBytes` is read cold in one directory (one cold read is what a reader of scattered
 * files does too; two say the directory is being gone through), the other files of that directory that
 * are as small and stored only in the store are prefetched, in name order starting after the file read
 * (the order those readers use), up to `budgetBytes`. Each directory is prefetched once per mount: later
 * cold reads in it find their blocks cached or in flight.
 *
 * Recursive readers go through sibling directories one after another, so the same rule moves up one
 * level: once two subdirectories of one directory were prefetched so, the small files of that directory's
 * whole subtree are prefetched (depth first in name order, the order `grep -r` and `tar c` read them, up
 * to `subtreeBudgetBytes`; trees come from the cache, where the namespace walk put them). It moves up one
 * level only: a subtree prefetch does not count towards its parent's, or two of them would pull the whole
 * home (a first version did: `git status` in a fresh clone then pulled its node_modules too).
 */
import type { Tree } from '../model/tree.js';
import type { BlockReader } from './content.js';
import type { Journal } from './journal.js';

export interface NeighbourOptions {
  maxFileBytes: number;
  budgetBytes: number;
  /** Bytes prefetched for one subtree (0: never move up from a directory to its subtree). */
  subtreeBudgetBytes: number;
}

/** Trees visited at most by one subtree prefetch. */
const MAX_SUBTREE_DIRS = 4096;

/** Directories remembered as done before the set is cleared (bounds memory on huge homes). */
const MAX_REMEMBERED = 65_536;

export class NeighbourPrefetch {
  /** Directories with one cold read so far, and directories prefetched already. */
  private readonly once = new Set<number>();
  private readonly done = new Set<number>();
  /** Per directory: how many of its subdirectories were prefetched (2 moves the prefetch up to it). */
  private readonly children = new Map<number, number>();

  constructor(
    private readonly journal: Journal,
    private readonly blocks: Pick<BlockReader, 'prefetch' | 'size'>,
    private readonly trees: { getTree(hash: string): Promise<Tree> },
    private readonly opts: NeighbourOptions,
  ) {}

  /** Whether a cold read of a file of `size` bytes is one that triggers the prefetch. */
  wants(size: number): boolean {
    return this.opts.budgetBytes > 0 && size <= this.opts.maxFileBytes;
  }

  /** File `ino` (small) was just read cold: on the second such read in its directory, prefetch the rest. */
  coldRead(ino: number): void {
    const parent = this.journal.get(ino)?.parents[0];
    if (parent === undefined || this.done.has(parent)) return;
    if (!this.once.has(parent)) {
      if (this.once.size >= MAX_REMEMBERED) this.once.clear();
      this.once.add(parent);
      return;
    }
    this.once.delete(parent);
    if (this.done.size >= MAX_REMEMBERED) this.done.clear();
    this.done.add(parent);
    const names = [...this.journal.children(parent)].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const at = names.findIndex(([, child]) => child === ino);
    const ordered = at < 0 ? names : [...names.slice(at + 1), ...names.slice(0, at)];
    const want: string[] = [];
    let bytes = 0;
    for (const [, child] of ordered) {
      const node = this.journal.get(child);
      const c = node?.kind === 'file' ? node.content : undefined;
      if (!c || c.state !== 'clean' || c.sealed.size === 0 || c.sealed.size > this.opts.maxFileBytes) continue;
      const hash = c.sealed.blocks[0];
      if (hash === undefined || c.sealed.blocks.length !== 1 || this.blocks.size(hash) !== undefined) continue;
      if (bytes + c.sealed.size > this.opts.budgetBytes) break;
      bytes += c.sealed.size;
      want.push(hash);
    }
    if (want.length > 0) this.blocks.prefetch(want);
    this.prefetched(parent);
  }

  /** Directory `dir` was prefetched: the second such child of a directory moves up to it. */
  private prefetched(dir: number): void {
    const up = this.journal.get(dir)?.parents[0];
    if (up === undefined || this.opts.subtreeBudgetBytes <= 0 || this.done.has(up)) return;
    const n = (this.children.get(up) ?? 0) + 1;
    if (this.children.size >= MAX_REMEMBERED) this.children.clear();
    this.children.set(up, n);
    if (n < 2) return;
    this.children.delete(up);
    this.done.add(up);
    this.subtree(up).catch(() => undefined); // a tree that cannot be fetched is the reader's error to see, not ours
  }

  /** Prefetches the small uncached files under directory `ino`, depth first in name order, within budget. */
  private async subtree(ino: number): Promise<void> {
    let bytes = 0;
    let dirs = 0;
    const want: string[] = [];
    const take = (size: number, blocks: readonly string[] | undefined): boolean => {
      const hash = blocks?.[0];
      if (size === 0 || size > this.opts.maxFileBytes || blocks?.length !== 1 || hash === undefined || this.blocks.size(hash) !== undefined) return true;
      if (bytes + size > this.opts.subtreeBudgetBytes) return false;
      bytes += size;
      want.push(hash);
      return true;
    };
    const visitTree = async (hash: string): Promise<boolean> => {
      if (++dirs > MAX_SUBTREE_DIRS) return false;
      const t = await this.trees.getTree(hash);
      for (const e of t.entries) {
        if (e.kind === 'file' && !take(e.size, e.blocks)) return false;
        if (e.kind === 'dir' && e.tree && !(await visitTree(e.tree))) return false;
      }
      return true;
    };
    const visitDir = async (dir: number): Promise<boolean> => {
      if (++dirs > MAX_SUBTREE_DIRS) return false;
      const names = [...this.journal.children(dir)].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      for (const [, child] of names) {
        const node = this.journal.get(child);
        if (!node) continue;
        const c = node.kind === 'file' ? node.content : undefined;
        if (c?.state === 'clean' && !take(c.sealed.size, c.sealed.blocks)) return false;
        if (node.kind !== 'dir' || this.done.has(child)) continue;
        const more = node.loaded ? await visitDir(child) : node.tree ? await visitTree(node.tree) : true;
        if (!more) return false;
      }
      return true;
    };
    try {
      await visitDir(ino);
    } finally {
      if (want.length > 0) this.blocks.prefetch(want);
    }
  }
}

/**
 * Prefetch of a directory's small files on the first cold read in it (issue 11 item 4). Readers such as
 * `grep -r`, `tar c`, `git status` and npm go through a directory one file at a time; over a store one
 * network hop away each cold file would cost its own round trip, one after another. When a second file
 * of at most `maxFileBytes` is read cold in one directory (one cold read is what a reader of scattered
 * files does too; two say the directory is being gone through), the other files of that directory that
 * are as small and stored only in the store are prefetched, in name order starting after the file read
 * (the order those readers use), up to `budgetBytes`. Each directory is prefetched once per mount: later
 * cold reads in it find their blocks cached or in flight.
 */
import type { BlockReader } from './content.js';
import type { Journal } from './journal.js';

export interface NeighbourOptions {
  maxFileBytes: number;
  budgetBytes: number;
}

/** Directories remembered as done before the set is cleared (bounds memory on huge homes). */
const MAX_REMEMBERED = 65_536;

export class NeighbourPrefetch {
  /** Directories with one cold read so far, and directories prefetched already. */
  private readonly once = new Set<number>();
  private readonly done = new Set<number>();

  constructor(
    private readonly journal: Journal,
    private readonly blocks: Pick<BlockReader, 'prefetch' | 'size'>,
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
  }
}

/**
 * Small files go into the kernel's page cache at their first open for reading, before the open is
 * answered (FUSE_NOTIFY_STORE): the reader's `read` then finds the pages and sends no READ, which saves a
 * round trip per file of `grep -r`, `cat` or `tar c` (docs/decisions/0091-page-cache-at-open.md).
 *
 * Only what needs no wait: bytes inline in the file's record, or its one sealed block in memory or in the
 * kernel's caches (Content.readAtOnce); a file whose block must be fetched is opened as before and read on
 * demand. Only for an open that keeps the page cache (a cached open with keep_cache, not O_DIRECT) and is
 * the inode's only open handle: the store locks each page it fills, and a read of the inode that is still
 * unanswered would hold one while the daemon, writing the store, could not answer it. An inode is preloaded
 * once (the kernel keeps the pages until it evicts them; a later read after an eviction asks as before).
 */
import { constants } from 'node:fs';
import type { Session } from '../fuse/types.js';
import type { Content } from '../inodes/content.js';

/** Files up to this size are preloaded: the kernel's first readahead window. */
export const PRELOAD_MAX = 128 * 1024;
/** Inodes remembered as preloaded; past this, the memory starts over (a second preload costs a copy, nothing else). */
const REMEMBERED_MAX = 65_536;
const O_ACCMODE = 3;

export class PagePreloads {
  /** Files preloaded and their bytes, for `homefs status`. */
  readonly stats = { files: 0, bytes: 0 };
  private readonly done = new Set<number>();

  constructor(
    private readonly session: () => Session | undefined,
    private readonly content: Content,
    private readonly openCount: (ino: number) => number,
  ) {}

  /**
   * Called with an open of `ino` (open flags `flags`) registered and not answered yet, which will keep the
   * kernel's page cache of the file: preloads it when it is the inode's only open, for reading only.
   */
  atOpen(ino: number, flags: number): void {
    if ((flags & O_ACCMODE) !== 0 || (flags & constants.O_DIRECT) !== 0 || this.done.has(ino) || this.openCount(ino) !== 1) return;
    const data = this.content.readAtOnce(ino, PRELOAD_MAX);
    if (!data) return;
    if (this.done.size >= REMEMBERED_MAX) this.done.clear();
    this.done.add(ino);
    if (this.session()?.notifyStore(ino, 0, data) !== 0) return;
    this.stats.files++;
    this.stats.bytes += data.length;
  }
}

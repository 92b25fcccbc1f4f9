/**
 * FUSE passthrough of open files (native/src/passthrough.c): a file whose bytes are all in its upper
 * file is opened on that file as its backing file, and the kernel then reads, writes and maps it
 * without asking the daemon. This module keeps the kernel's rules for it (fs/fuse/iomode.c, 6.18):
 *
 * - An inode's opens are all passthrough, on one backing file, or all cached: a passthrough open beside
 *   a cached one fails (EIO), and so does the reverse. So a new open follows the opens the inode has;
 *   only an inode with none may change mode.
 * - One backing id per inode, registered at its first passthrough open and dropped at its last release
 *   (a second registration of the same file would be refused while the first is in use).
 * - The kernel refuses FOPEN_KEEP_CACHE on a passthrough open, and passthrough writes bypass the FUSE
 *   inode's page cache: the first cached open after passthrough ones drops that cache (keepCache false).
 *
 * What the open and close of a passthrough writer do to the file's content is content.ts's
 * (`openLive`, `closeLive`); which opens may be passthrough is the adapter's choice.
 */
import type { Logger } from 'pino';
import type { Session } from '../fuse/types.js';
import type { UpperFiles } from '../inodes/upper.js';

/** Inodes remembered as opened through passthrough; past this, no cached open keeps the page cache. */
const BYPASSED_MAX = 65_536;

interface Handle {
  ino: number;
  passthrough: boolean;
  writer: boolean;
}

export class PassthroughOpens {
  /** Passthrough was granted at FUSE INIT (and this mount allows it). */
  enabled = false;
  private readonly backing = new Map<number, { id: number; opens: number }>();
  private readonly cachedOpens = new Map<number, number>();
  private readonly handles = new Map<number, Handle>();
  /** Per inode, the open being decided (opens of one inode are decided in turn). */
  private readonly deciding = new Map<number, Promise<void>>();
  /** Inodes opened through passthrough since their last cached open (past BYPASSED_MAX: all of them). */
  private readonly bypassed = new Set<number>();
  private bypassedAll = false;
  /** Counters for status: passthrough opens, cached opens, backing registrations the kernel refused. */
  readonly stats = { passthrough: 0, cached: 0, refused: 0 };
  private lastRefusal = '';

  constructor(
    private readonly session: () => Session | undefined,
    private readonly upper: UpperFiles,
    private readonly log: Logger,
  ) {}

  /**
   * Decides how the new open of `ino` is served, and counts it: passthrough when the inode's opens are
   * (on their backing id), cached when they are, and for an inode with none, passthrough if `eligible()`
   * and `prepare()` (a writer's copy-up, content.ts `openLive`) and the registration of its upper file
   * succeed (`undo` reverses `prepare` when the registration does not). Opens of one inode are decided one at a time, so each sees the others counted. A passthrough
   * decision also runs `prepare` (a writer joining); if it throws, nothing stays counted.
   */
  open(ino: number, eligible: () => boolean, prepare: () => Promise<void>, undo: () => Promise<void>): Promise<{ backingId?: number; keepCache: boolean }> {
    const prev = this.deciding.get(ino) ?? Promise.resolve();
    const step = prev.then(() => this.decide(ino, eligible, prepare, undo));
    const tail = step.then(() => undefined, () => undefined);
    this.deciding.set(ino, tail);
    void tail.then(() => {
      if (this.deciding.get(ino) === tail) this.deciding.delete(ino);
    });
    return step;
  }

  private async decide(ino: number, eligible: () => boolean, prepare: () => Promise<void>, undo: () => Promise<void>): Promise<{ backingId?: number; keepCache: boolean }> {
    const b = this.backing.get(ino);
    if (b) {
      b.opens++; // (counted before the wait: a release meanwhile cannot drop the id)
      try {
        await prepare();
      } catch (e) {
        this.drop(ino);
        throw e;
      }
      this.stats.passthrough++;
      return { backingId: b.id, keepCache: false };
    }
    if (this.enabled && !this.cachedOpens.has(ino) && eligible()) {
      await prepare();
      const id = await this.register(ino);
      if (id !== undefined) {
        this.backing.set(ino, { id, opens: 1 });
        if (!this.bypassedAll) this.bypassed.add(ino);
        if (this.bypassed.size > BYPASSED_MAX) {
          this.bypassed.clear();
          this.bypassedAll = true;
        }
        this.stats.passthrough++;
        return { backingId: id, keepCache: false };
      }
      await undo();
    }
    this.stats.cached++;
    this.cachedOpens.set(ino, (this.cachedOpens.get(ino) ?? 0) + 1);
    return { keepCache: !this.bypassed.delete(ino) && !this.bypassedAll };
  }

  /** Registers the upper file of `ino` as a backing file: its id, or undefined when the kernel refuses it. */
  private async register(ino: number): Promise<number | undefined> {
    const fd = await this.upper.openFd(ino);
    const s = this.session();
    if (!s) return undefined;
    const id = s.backingOpen(fd);
    if (id > 0) return id;
    this.stats.refused++;
    const why = `errno ${-id}`;
    if (why !== this.lastRefusal) this.log.warn({ ino, errno: -id }, 'the kernel refused a passthrough backing file; such files are served by the daemon');
    this.lastRefusal = why;
    return undefined;
  }

  /** Records open handle `fh` of `ino` as decided by `open` (passthrough: it had a backing id). */
  opened(fh: number, ino: number, passthrough: boolean, writer: boolean): void {
    this.handles.set(fh, { ino, passthrough, writer });
  }

  /** One passthrough open of `ino` fewer; the last drops the backing id. */
  private drop(ino: number): void {
    const b = this.backing.get(ino);
    if (b && --b.opens <= 0) {
      this.backing.delete(ino);
      this.session()?.backingClose(b.id);
    }
  }

  /** Handle `fh` was released: what it was. The inode's last passthrough release drops its backing id. */
  released(fh: number): Handle | undefined {
    const h = this.handles.get(fh);
    if (!h) return undefined;
    this.handles.delete(fh);
    if (!h.passthrough) {
      const n = (this.cachedOpens.get(h.ino) ?? 1) - 1;
      if (n > 0) this.cachedOpens.set(h.ino, n);
      else this.cachedOpens.delete(h.ino);
      return h;
    }
    this.drop(h.ino);
    return h;
  }
}

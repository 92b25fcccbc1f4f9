/**
 * Files open for writing through FUSE passthrough (fs/passthrough.ts). The kernel writes, truncates by
 * mmap and extends their upper files itself, without a request: this module is how the daemon still
 * knows what they hold.
 *
 * - Each such file counts its passthrough writers; while it has one it is "live", and it stays dirty
 *   (content.ts never records a live file as sealed or stored: a write may land right after a capture).
 * - The daemon reads a live file's size and times back from its upper file (`changedSince`: one fstat),
 *   whenever anything reads its record (HomeView.get), before every seal and log segment, on the
 *   protection tick, and at its last close. A fingerprint of what was last taken in (size, mtime, ctime
 *   in nanoseconds) tells whether the upper file changed since.
 * - The set of live files is journaled (meta key `liveFiles`, in the transaction that makes a file live
 *   or not). A daemon killed with files open leaves the set behind: the next mount of the same state
 *   takes each file's size and times from its upper file before it serves anything (`Content.recoverLive`).
 */
import type { Journal } from './journal.js';
import type { UpperFiles, UpperStat } from './upper.js';

const LIVE_KEY = 'liveFiles';

/** What a look at an upper file saw (size, mtime and ctime to the nanosecond). */
export type Fingerprint = UpperStat;

interface Live {
  writers: number;
  seen: Fingerprint | undefined;
  /** What the last seal captured of the file while it was live, and the upper file as it was then. */
  sealed?: { at: Fingerprint; content: unknown; blocks: string[]; size: number };
}

export class LiveFiles {
  private readonly files = new Map<number, Live>();

  constructor(
    private readonly journal: Journal,
    private readonly upper: UpperFiles,
  ) {}

  get size(): number {
    return this.files.size;
  }

  has(ino: number): boolean {
    return this.files.size > 0 && this.files.has(ino);
  }

  inodes(): number[] {
    return [...this.files.keys()];
  }

  /** Files a daemon left live when it ended without closing them (killed): their records may be stale. */
  leftOver(): number[] {
    return this.journal.getMeta<number[]>(LIVE_KEY) ?? [];
  }

  /** Forgets what `leftOver` listed (call once each was taken in, in the same transaction). */
  clearLeftOver(): void {
    if (this.journal.getMeta<number[]>(LIVE_KEY) !== undefined) this.journal.setMeta(LIVE_KEY, this.inodes());
  }

  /** One more passthrough writer; true when the file just became live (journal it in the caller's transaction). */
  add(ino: number): boolean {
    const l = this.files.get(ino);
    if (l) {
      l.writers++;
      return false;
    }
    this.files.set(ino, { writers: 1, seen: undefined });
    this.journal.setMeta(LIVE_KEY, this.inodes());
    return true;
  }

  /** One writer fewer; true when that was the last (the file is no longer live). */
  remove(ino: number): boolean {
    const l = this.files.get(ino);
    if (!l) return false;
    if (--l.writers > 0) return false;
    this.files.delete(ino);
    this.journal.setMeta(LIVE_KEY, this.inodes());
    return true;
  }

  /** The upper file's fingerprint now (undefined: it is gone), for `sealedAs` and `unchangedSince`. */
  now(ino: number): Fingerprint | undefined {
    return this.upper.statNow(ino);
  }

  /**
   * A seal captured live file `ino` as `blocks` from its state object `content`, and the upper file was
   * `at` before and after the capture. Its last close records it sealed if nothing changed since.
   */
  sealedAs(ino: number, at: Fingerprint, content: unknown, blocks: string[], size: number): void {
    const l = this.files.get(ino);
    if (l) l.sealed = { at, content, blocks, size };
  }

  /** What a seal captured of `ino` while live, if the upper file is still exactly as it was then. */
  sealedUnchanged(ino: number): { content: unknown; blocks: string[]; size: number } | undefined {
    const s = this.files.get(ino)?.sealed;
    return s && same(s.at, this.now(ino)) ? s : undefined;
  }

  /** Takes the upper file as it is now as seen (after the daemon changed it or the record itself). */
  mark(ino: number): void {
    const l = this.files.get(ino);
    if (l) l.seen = this.upper.statNow(ino);
  }

  /**
   * The upper file's state when it changed since it was last seen (then it counts as seen), else
   * undefined; `mtimeChanged`: its mtime moved (a write landed), so the record's mtime (which a setattr
   * may have set since) gives way to it.
   */
  changedSince(ino: number): { st: UpperStat; mtimeChanged: boolean } | undefined {
    const l = this.files.get(ino);
    if (!l) return undefined;
    const st = this.upper.statNow(ino);
    if (!st || same(l.seen, st)) return undefined;
    const mtimeChanged = l.seen === undefined || l.seen.mtimeS !== st.mtimeS || l.seen.mtimeNsec !== st.mtimeNsec;
    l.seen = st;
    return { st, mtimeChanged };
  }
}

/** Two looks at an upper file saw the same bytes (size, mtime and ctime to the nanosecond). */
export function same(a: Fingerprint | undefined, b: Fingerprint | undefined): boolean {
  return a !== undefined && b !== undefined && a.size === b.size && a.mtimeS === b.mtimeS && a.mtimeNsec === b.mtimeNsec &&
    a.ctimeS === b.ctimeS && a.ctimeNsec === b.ctimeNsec;
}

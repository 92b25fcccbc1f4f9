/**
 * Replies held until the journal batch they depend on has committed. The journal commits its queued
 * changes once per event-loop turn (inodes/journal.ts); a reply sent while changes are queued would tell
 * the kernel about a change that a kill -9 could still lose. So every reply issued while the journal has
 * queued changes waits, in order, for the next commit; replies issued while nothing is queued go out at
 * once. If a commit fails, the replies it held become EIO (the changes did not reach the disk).
 *
 * Directory replies must report how many entries they packed, and notifications must not wait behind an
 * unanswered request of the same inode (the kernel would wait for us): both commit the batch first.
 *
 * Replies that name an inode (entries, and getxattr's "no such attribute") also tell the binding, as they
 * go out, that the inode has no xattrs when that is so (noxattrs.ts).
 */
import type { Attr, FuseCaps, Ctx, DirEntry, DirPlusEntry, Entry, OpenReply, Req, Session, StatFs } from '../fuse/types.js';
import type { Journal } from '../inodes/journal.js';
import { E } from '../inodes/errors.js';
import { NoXattrMarks } from './noxattrs.js';

interface Held {
  req: Req;
  send: () => void;
}

export class CommittedReplies implements Session {
  private held: Held[] = [];
  private readonly marks: NoXattrMarks;

  constructor(private readonly inner: Session, private readonly journal: Journal) {
    journal.onCommit((err) => this.release(err));
    this.marks = new NoXattrMarks(inner, journal);
  }

  get mountpoint(): string {
    return this.inner.mountpoint;
  }

  private release(err: unknown): void {
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    for (const h of held) {
      if (err === undefined) h.send();
      else this.inner.err(h.req, E.EIO);
    }
  }

  /** Sends now when nothing is queued (and nothing held before it), else after the next commit. */
  private reply(req: Req, send: () => void): void {
    if (this.held.length === 0 && !this.journal.pending) return send();
    this.held.push({ req, send });
    this.journal.commitSoon(); // the queued changes may be deferred ones (Journal.deferred)
  }

  /** Commits what is queued, which sends every held reply. */
  private settle(): void {
    if (this.journal.pending) this.journal.commit();
  }

  ctx(req: Req): Ctx { return this.inner.ctx(req); }
  err(req: Req, errno: number): void { this.reply(req, () => this.inner.err(req, errno)); }
  none(req: Req): void { this.reply(req, () => this.inner.none(req)); }
  entry(req: Req, e: Entry): void {
    this.reply(req, () => {
      this.marks.sent(e.ino);
      this.inner.entry(req, e);
    });
  }
  create(req: Req, e: Entry, o: OpenReply): void {
    this.reply(req, () => {
      this.marks.sent(e.ino);
      this.inner.create(req, e, o);
    });
  }
  /** getxattr of a name `ino` does not have: ENODATA. */
  noSuchXattr(req: Req, ino: number): void {
    this.reply(req, () => {
      this.marks.sent(ino);
      this.inner.err(req, E.ENODATA);
    });
  }
  attr(req: Req, a: Attr, timeout: number): void { this.reply(req, () => this.inner.attr(req, a, timeout)); }
  readlink(req: Req, target: string): void { this.reply(req, () => this.inner.readlink(req, target)); }
  open(req: Req, o: OpenReply): void { this.reply(req, () => this.inner.open(req, o)); }
  write(req: Req, count: number): void { this.reply(req, () => this.inner.write(req, count)); }
  buf(req: Req, data: Uint8Array): void { this.reply(req, () => this.inner.buf(req, data)); }
  xattrSize(req: Req, size: number): void { this.reply(req, () => this.inner.xattrSize(req, size)); }
  lseek(req: Req, off: number): void { this.reply(req, () => this.inner.lseek(req, off)); }
  statfs(req: Req, s: StatFs): void { this.reply(req, () => this.inner.statfs(req, s)); }

  dir(req: Req, size: number, entries: DirEntry[]): number {
    this.settle();
    return this.inner.dir(req, size, entries);
  }

  dirPlus(req: Req, size: number, entries: DirPlusEntry[]): number {
    this.settle();
    const packed = this.inner.dirPlus(req, size, entries);
    for (let i = 0; i < packed; i++) this.marks.sent((entries[i] as DirPlusEntry).entry.ino);
    return packed;
  }

  invalInode(ino: number, off: number, len: number): number {
    this.settle();
    return this.inner.invalInode(ino, off, len);
  }

  notifyStore(ino: number, off: number, data: Uint8Array): number {
    this.settle();
    return this.inner.notifyStore(ino, off, data);
  }

  invalEntry(parent: number, name: string): number {
    this.settle();
    return this.inner.invalEntry(parent, name);
  }

  markNoXattrs(ino: number): void { this.inner.markNoXattrs(ino); }
  backingOpen(fd: number): number { return this.inner.backingOpen(fd); }
  backingClose(id: number): number { return this.inner.backingClose(id); }
  caps(): FuseCaps { return this.inner.caps(); }
  revokeNoXattrs(ino: number): void { this.inner.revokeNoXattrs(ino); }

  unmount(): void { this.inner.unmount(); }
  onUnmounted(cb: (reason: string) => void): void { this.inner.onUnmounted(cb); }
}

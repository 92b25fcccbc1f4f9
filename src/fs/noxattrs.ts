/**
 * Which inodes the FUSE binding answers getxattr and listxattr for by itself (native/src/noxattr.c): those
 * known to have no extended attributes. The kernel asks for security.capability before every write and
 * for POSIX ACLs on every create; almost every file has no xattrs, and each such request cost a call into
 * JS that answered ENODATA.
 *
 * Invariant: a marked inode has no xattrs, both in memory (what a handler would answer) and on disk (what
 * a kill -9 leaves). A mark is made only while nothing is queued in the journal, so that memory and disk
 * agree, and only as a reply naming the inode goes out (CommittedReplies sends after the commit). The
 * journal calls back synchronously whenever an inode may gain xattrs (a record with xattrs written, an
 * inode removed, whose number could come back), and the mark is revoked before that change is visible to
 * any request. Losing a mark is always safe: the request then goes to JS.
 */
import type { Session } from '../fuse/types.js';
import type { Journal } from '../inodes/journal.js';

/** The part of a session the marks use. */
export type MarkingSession = Pick<Session, 'markNoXattrs' | 'revokeNoXattrs'>;

export class NoXattrMarks {
  constructor(private readonly session: MarkingSession, private readonly journal: Journal) {
    journal.onXattrsMayExist((ino) => session.revokeNoXattrs(ino));
  }

  /** A reply naming `ino` is being sent: marks it when its committed record has no xattrs. */
  sent(ino: number): void {
    if (ino === 0 || this.journal.pending) return;
    const node = this.journal.get(ino);
    if (node && (node.xattrs === undefined || node.xattrs.length === 0)) this.session.markNoXattrs(ino);
  }
}

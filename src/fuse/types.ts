/**
 * Types of the homefs FUSE binding (native/, libfuse3 low-level API on Node's main loop).
 *
 * The binding hands every kernel request to a synchronous handler in `Ops` together with an opaque `Req`.
 * The handler must answer that request exactly once, either before it returns or later (after async work),
 * through one of the `Reply` methods on the session. Errors cross this boundary only as positive errno
 * numbers (`reply.err(req, errno)`); `err(req, 0)` is the success reply of ops that carry no data.
 * Inode numbers and file handles are JS numbers (exact up to 2^53); times are seconds + nanoseconds.
 */

export interface Ctx { uid: number; gid: number; pid: number; umask: number }

/** What getattr and entry replies carry; times in seconds + nanoseconds. */
export interface Attr {
  ino: number; mode: number; nlink: number; uid: number; gid: number; rdev: number; size: number;
  blocks: number; blksize: number;
  atimeSec: number; atimeNsec: number; mtimeSec: number; mtimeNsec: number; ctimeSec: number; ctimeNsec: number;
}

/** ino 0 + entryTimeout > 0 in `Reply.entry` = a cached negative lookup (the kernel remembers ENOENT). */
export interface Entry { ino: number; generation: number; attr: Attr; attrTimeout: number; entryTimeout: number }

/** Only present keys are to be changed. */
export interface SetAttr {
  mode?: number; uid?: number; gid?: number; size?: number;
  atime?: { sec: number; nsec: number } | 'now'; mtime?: { sec: number; nsec: number } | 'now';
  ctime?: { sec: number; nsec: number };
  /**
   * With `handleKillpriv` (FUSE_HANDLE_KILLPRIV_V2): after the change, clear setuid/setgid by the kernel's
   * rule (fs/setid.ts). The kernel asks for it on every chown of a non-directory (root's too, and chown -1 -1),
   * and on a truncate by a caller without CAP_FSETID; it no longer sends the cleared mode itself.
   */
  killSuidgid?: boolean;
}

/**
 * keepCache: keep the page cache (for opendir: the cached listing) from earlier opens; noFlush: the kernel
 * sends no flush on close() (saves a round trip for read-only opens); cacheDir (opendir only): the kernel
 * may cache this directory's listing and serve later readdirs itself.
 */
export interface OpenReply {
  fh: number; keepCache?: boolean; directIo?: boolean; nonSeekable?: boolean; noFlush?: boolean; cacheDir?: boolean;
  /** FUSE passthrough: the id of the file's backing file (Session.backingOpen); keepCache is then ignored. */
  backingId?: number;
}

/** `off` = the cookie of the NEXT entry (what the kernel passes back as `offset` to continue after this one). */
export interface DirEntry { name: string; ino: number; mode: number; off: number }
export interface DirPlusEntry { name: string; entry: Entry; off: number }

export interface StatFs {
  bsize: number; frsize: number; blocks: number; bfree: number; bavail: number;
  files: number; ffree: number; favail: number; namemax: number;
}

/** Opaque request handle; each request must be answered exactly once. */
export type Req = object;

/** Reply methods on the session object; all synchronous, they return nothing (except `dir`/`dirPlus`). */
export interface Reply {
  ctx(req: Req): Ctx;
  /** Positive errno; 0 = success for ops with no data (unlink, rmdir, rename, flush, release, fsync, setxattr…). */
  err(req: Req, errno: number): void;
  entry(req: Req, e: Entry): void;
  create(req: Req, e: Entry, o: OpenReply): void;
  attr(req: Req, a: Attr, timeout: number): void;
  readlink(req: Req, target: string): void;
  open(req: Req, o: OpenReply): void;
  write(req: Req, count: number): void;
  /** read replies, getxattr/listxattr values. The bytes are copied before it returns. */
  buf(req: Req, data: Uint8Array): void;
  /** getxattr/listxattr when the caller asked with size 0. */
  xattrSize(req: Req, size: number): void;
  statfs(req: Req, s: StatFs): void;
  lseek(req: Req, off: number): void;
  /** forget-type ops (and interrupt-free requests that need no reply). */
  none(req: Req): void;
  /**
   * readdir/readdirplus: packs entries in order until `size` is full; returns how many were packed.
   * For readdirplus, the kernel takes a lookup reference ONLY for packed entries (the caller counts them).
   * Packing zero entries is the end-of-directory reply.
   */
  dir(req: Req, size: number, entries: DirEntry[]): number;
  dirPlus(req: Req, size: number, entries: DirPlusEntry[]): number;
}

/**
 * Every handler is synchronous and must eventually call exactly one reply for req. Ops missing from the
 * object (undefined at mount time) are answered by libfuse: ENOSYS, except open (success, fh 0),
 * release/releasedir (success), statfs (a default) and forget (nothing). Without `opendir` the binding makes
 * opendir zero-message where the kernel supports it (no opendir or releasedir requests at all, listings kept in
 * the kernel's cache until the directory changes), else answers it with fh 0 and the same cache flags: readdir
 * then always gets fh 0, so its cookies alone must say where a listing continues. Defining `readdirplus` turns the
 * kernel's readdirplus on (with readdirplus_auto the kernel picks readdir or readdirplus per call, so both
 * must list the same entries with the same cookies); leave it undefined to get plain readdir only. A handler that throws gets its request answered with EIO and the exception is then
 * re-raised as an uncaught exception (the process's exit hooks unmount). `open` never sees O_TRUNC: the
 * kernel sends setattr({ size: 0 }) instead (atomic_o_trunc is off).
 */
export interface Ops {
  init?(): void; destroy?(): void;
  /**
   * After each request the binding served while it waited awake for the next (native/src/session.c
   * `on_prepare`), once the handlers' promise jobs ran: do now what waits for the end of the loop's turn
   * (the journal's commit, which replies wait for), so the wait can go on without a turn of the loop.
   */
  turnEnd?(): void;
  lookup(req: Req, parent: number, name: string): void;
  /** Batch forget is delivered as several forget calls. No reply. */
  forget(ino: number, nlookup: number): void;
  getattr(req: Req, ino: number, fh: number | undefined): void;
  setattr(req: Req, ino: number, set: SetAttr, fh: number | undefined): void;
  readlink(req: Req, ino: number): void;
  mknod(req: Req, parent: number, name: string, mode: number, rdev: number): void;
  mkdir(req: Req, parent: number, name: string, mode: number): void;
  unlink(req: Req, parent: number, name: string): void;
  rmdir(req: Req, parent: number, name: string): void;
  symlink(req: Req, target: string, parent: number, name: string): void;
  /** flags: RENAME_NOREPLACE (1), RENAME_EXCHANGE (2). */
  rename(req: Req, parent: number, name: string, newParent: number, newName: string, flags: number): void;
  link(req: Req, ino: number, newParent: number, newName: string): void;
  /** killSuidgid: an O_TRUNC open by a caller without CAP_FSETID (see SetAttr.killSuidgid). */
  open(req: Req, ino: number, flags: number, killSuidgid?: boolean): void;
  read(req: Req, ino: number, size: number, offset: number, fh: number): void;
  /**
   * data is valid until this request is answered: it is a view of the binding's receive buffer, which
   * goes back to its pool with the reply (native/src/wbuf.c). Copy whatever is kept beyond the reply; never
   * transfer data.buffer to a worker.
   */
  write(req: Req, ino: number, data: Buffer, offset: number, fh: number, flags: number, killSuidgid?: boolean): void;
  flush(req: Req, ino: number, fh: number): void;
  release(req: Req, ino: number, fh: number, flags: number): void;
  fsync(req: Req, ino: number, datasync: boolean, fh: number): void;
  opendir?(req: Req, ino: number, flags: number): void;
  readdir(req: Req, ino: number, size: number, offset: number, fh: number): void;
  /** Reply with dirPlus; the kernel takes a lookup reference for each packed entry except "." and "..". */
  readdirplus(req: Req, ino: number, size: number, offset: number, fh: number): void;
  releasedir?(req: Req, ino: number, fh: number): void;
  fsyncdir(req: Req, ino: number, datasync: boolean, fh: number): void;
  statfs(req: Req, ino: number): void;
  /** flags: XATTR_CREATE (1), XATTR_REPLACE (2). */
  setxattr(req: Req, ino: number, name: string, value: Buffer, flags: number): void;
  getxattr(req: Req, ino: number, name: string, size: number): void;
  listxattr(req: Req, ino: number, size: number): void;
  removexattr(req: Req, ino: number, name: string): void;
  access(req: Req, ino: number, mask: number): void;
  create(req: Req, parent: number, name: string, mode: number, flags: number): void;
  fallocate(req: Req, ino: number, mode: number, offset: number, length: number, fh: number): void;
  /** whence: SEEK_SET 0, SEEK_CUR 1, SEEK_END 2, SEEK_DATA 3, SEEK_HOLE 4. */
  lseek(req: Req, ino: number, off: number, whence: number, fh: number): void;
  copyFileRange(req: Req, inoIn: number, offIn: number, fhIn: number, inoOut: number, offOut: number, fhOut: number, len: number, flags: number): void;
  /** The kernel interrupted req (it must still be answered, e.g. with EINTR). */
  interrupt?(req: Req): void;
}

export interface MountOptions {
  fsname?: string; subtype?: string; allowOther?: boolean; defaultPermissions?: boolean; readOnly?: boolean;
  autoUnmount?: boolean; maxWrite?: number; writebackCache?: boolean; debug?: boolean;
  /**
   * Default 0: after a loop turn that answered requests, wait up to this many microseconds awake (polling
   * the loop's fds, yielding the CPU) for the next one before the loop sleeps (native/src/session.c).
   */
  spinUs?: number;
  /**
   * Default false: grant the kernel FUSE_HANDLE_KILLPRIV_V2 when it offers it. The handlers then clear
   * setuid/setgid themselves where `killSuidgid` says so (setattr, open, write), and the kernel stops asking
   * for security.capability before every write(2) and for the attributes before every chown.
   */
  handleKillpriv?: boolean;
  /**
   * Default 0: while a request was answered in the last this many microseconds, threads under SCHED_IDLE
   * keep the other CPUs from halting, so that waking the caller on its CPU is cheap (native/src/idlepoll.c).
   */
  idlePollUs?: number;
  /**
   * Default true: SIGINT/SIGTERM/SIGHUP/SIGQUIT unmount every session, then re-raise the signal if nobody
   * else listens for it. false: only the 'exit' hook and the addon's atexit() unmount; the application's
   * own signal handlers must call unmount() (autoUnmount still covers SIGKILL).
   */
  handleSignals?: boolean;
  /**
   * Default false: ask for FUSE passthrough (kernel 6.9+, CAP_SYS_ADMIN). Where the kernel grants it, the
   * writeback cache is off for the whole connection (the kernel refuses both); `caps()` tells what was
   * granted once the kernel's INIT has been answered.
   */
  passthrough?: boolean;
}

export type { FuseCaps } from './native.js';
import type { FuseCaps } from './native.js';

export interface Session extends Reply {
  readonly mountpoint: string;
  /** Drop cached pages (off/len; len 0 = to the end, off -1 = attributes only). Returns 0 or -errno. */
  invalInode(ino: number, off: number, len: number): number;
  /**
   * Drop the cached dentry parent/name. Returns 0 or -errno. Both notifications are synchronous writes to
   * the kernel: never call them while a request on the same directory (invalEntry) or the same pages
   * (invalInode) is still unanswered, or the kernel waits for us while we wait for it.
   */
  invalEntry(parent: number, name: string): number;
  /**
   * Put `data` into the kernel's page cache of `ino` at `off` (FUSE_NOTIFY_STORE), so that reads of it
   * need no request. Returns 0 or -errno. A synchronous write to the kernel, which locks each page it
   * stores: never call it while a read of the inode may be unanswered (an open handle of it exists).
   */
  notifyStore(ino: number, off: number, data: Uint8Array): number;
  /**
   * The binding answers getxattr (ENODATA) and listxattr (no names) of `ino` itself, without calling the
   * handlers, until `revokeNoXattrs(ino)` or the unmount. Best effort: a mark may be dropped at any time
   * (the binding's table is bounded) and the handlers then answer again. Mark only an inode whose empty
   * xattr set is durable, and revoke before answering any request that may have given it xattrs.
   */
  markNoXattrs(ino: number): void;
  /** FUSE passthrough: registers open file `fd` as a backing file; its id (> 0), or -errno. */
  backingOpen(fd: number): number;
  /** Drops a backing file id (files already open on it keep it); 0 or -errno. */
  backingClose(id: number): number;
  /** What the INIT reply granted. */
  caps(): FuseCaps;
  revokeNoXattrs(ino: number): void;
  /**
   * Idempotent; stops the poll first, answers outstanding requests with EIO, then unmounts; replies that
   * arrive later are dropped silently. Called from inside a handler it takes effect after that handler.
   */
  unmount(): void;
  /** External umount / fusermount -u / connection abort (not called for our own unmount()). */
  onUnmounted(cb: (reason: string) => void): void;
}

/**
 * The FUSE adapter: maps each request of the native binding onto the inode layer and back. No business
 * logic lives here: it loads directories when needed, converts attributes, keeps file and directory
 * handles, and maps errors to errno in exactly one place (`fail`).
 *
 * Metadata requests are answered synchronously from the journal; reads, writes, truncates and loads of
 * directories from the store answer later. A read, or a request waiting for its directory to load, can be
 * interrupted (the kernel's FUSE_INTERRUPT, e.g. Ctrl-C on the reader): it is answered EINTR at once and
 * its late result is dropped; the fetch itself goes on and fills the cache. Writes and other changes are
 * never interrupted halfway: they either happened or not, and their reply says which.
 */
import type { Logger } from 'pino';
import type { Ops, Req, Session, SetAttr, StatFs } from '../fuse/types.js';
import { canWriteThrough, type Content } from '../inodes/content.js';
import { E, FsError, nowNs } from '../inodes/errors.js';
import type { Inode } from '../inodes/types.js';
import type { UpperFiles } from '../inodes/upper.js';
import { NeedsLoad, type HomeView } from '../inodes/view.js';
import { Xattrs } from '../inodes/xattrs.js';
import { CorruptObjectError, FormatError, NotFoundError, StoreUnavailableError } from '../util/errors.js';
import { attrOf, entryOf, kindOfMode, modeOf, toNs, type Timeouts } from './attr.js';
import { Listings } from './listings.js';
import { PassthroughOpens } from './passthrough.js';
import { PagePreloads } from './preload.js';
import { allLocal } from '../inodes/filestate.js';
import { CommittedReplies } from './replies.js';
import { clearedSetidMode } from './setid.js';
import { defaults } from '../config.js';

export interface AdapterHooks {
  /** Every request: the home is active. */
  activity(op: string): void;
  /** Latency of a request answered later (read, write, fsync, loads). */
  observe(op: string, ms: number): void;
  /** A request failed with EIO for a reason other than its arguments (store, corruption, bug). */
  failed(kind: string): void;
  /** fsync of a file: resolves once it is durable as configured (--fsync store|local). */
  fsync(ino: number, datasync: boolean): Promise<void>;
  statfs(): StatFs;
  readOnly: boolean;
  /** Inode records kept in memory at most, beyond which unchanged directories are unloaded (inodes/trim.ts); 0 or absent: no limit. */
  maxRecords?: number;
}

export class FuseAdapter {
  private nextFh = 1;
  private readonly files = new Map<number, number>();
  /** Per open file handle: releases the pins on the file's cached blocks (Content.holdBlocks). */
  private readonly holds = new Map<number, () => void>();
  /** Requests waiting on the store that an interrupt answers with EINTR (reads, directory loads). */
  private readonly interruptible = new Set<Req>();
  private readonly listings = new Listings();
  private replies: CommittedReplies | undefined;
  private readonly xattrs: Xattrs;
  /** Which opens are FUSE passthrough (enabled at INIT where granted: `usePassthrough`). */
  readonly passthrough: PassthroughOpens;
  /** Small files put into the kernel's page cache at their first open for reading. */
  readonly preloads: PagePreloads;
  /** Requests so far (live files are looked at once per request). */
  private turn = 0;
  /** Handles opened for writing and not released; whether one was opened since the last `flushingKernel`. */
  private readonly writerHandles = new Set<number>();
  private openedWriter = false;

  constructor(
    private readonly view: HomeView,
    private readonly content: Content,
    private readonly upper: UpperFiles,
    private readonly hooks: AdapterHooks,
    private readonly log: Logger,
    // Attributes and names change only through this mount's kernel (one writer per home; seals and lazy
    // loads change neither), so cached ones stay right for as long as the kernel keeps them.
    private readonly t: Timeouts = { attr: 60, entry: 60, negative: 1 },
  ) {
    this.xattrs = new Xattrs(view.journal, (ino) => view.get(ino));
    this.passthrough = new PassthroughOpens(() => this.replies, upper, log);
    this.preloads = new PagePreloads(() => this.replies, content, (ino) => view.openCount(ino));
  }

  /**
   * Called once the kernel's INIT is answered: with passthrough granted, files whose bytes are local open
   * on their upper files, and the daemon reads live files' sizes back from them (content.ts `refresh`).
   */
  usePassthrough(on: boolean): void {
    this.passthrough.enabled = on;
    // One look (an fstat) per live file per request: a request sees the file as of its first look.
    const looked = new Map<number, number>();
    this.view.refresh = on ? (ino) => {
      if (!this.content.live.has(ino) || looked.get(ino) === this.turn) return;
      looked.set(ino, this.turn);
      if (looked.size > 1024) looked.clear();
      this.content.refresh(ino);
    } : undefined;
  }

  /**
   * Opens file `ino` (its record `node`) for handle `fh`: through passthrough when its bytes are local or
   * can be made so at once and its other opens allow it, else cached (the daemon serves its reads and writes).
   */
  private async openFile(ino: number, writer: boolean, fresh = false): Promise<{ fh: number; keepCache?: boolean; backingId?: number }> {
    const eligible = (): boolean => {
      const node = this.view.get(ino);
      return node.kind === 'file' && (writer ? canWriteThrough(node) : node.content !== undefined && allLocal(node.content));
    };
    const none = (): Promise<void> => Promise.resolve();
    const o = await this.passthrough.open(ino, eligible, writer ? () => this.content.openLive(ino, fresh) : none, writer ? () => this.content.closeLive(ino) : none);
    const fh = this.openHandle(ino, writer);
    this.passthrough.opened(fh, ino, o.backingId !== undefined, writer && o.backingId !== undefined);
    return { fh, ...o };
  }

  /**
   * Whether the kernel may hold writes it has not sent (the writeback cache's dirty pages and the times it
   * keeps): a file was opened for writing since the last `flushingKernel()`, or one still is. Otherwise a
   * `sync -f` of the mountpoint (home/commits.ts `flushKernel`) would only cost a process: a `find` of the
   * full-size home spawned one every 3.3 s (0.15 s of this thread in one profiled run).
   */
  kernelMayHoldWrites(): boolean {
    return this.openedWriter || this.writerHandles.size > 0;
  }

  /** A flush of the kernel's writes starts: what was opened for writing and released before it is covered. */
  flushingKernel(): void {
    this.openedWriter = false;
  }

  /** The mounted session; every reply goes through it once the journal batch it depends on committed. */
  set session(s: Session | undefined) {
    this.replies = s ? new CommittedReplies(s, this.view.journal) : undefined;
    const max = this.hooks.maxRecords ?? 0;
    if (!s || max <= 0) {
      this.view.stopTrimming();
      return;
    }
    this.view.startTrimming({ ...defaults.trim, maxRecords: max }, { pinned: (dir) => this.listings.listing(dir) });
  }

  get session(): Session | undefined {
    return this.replies;
  }

  private get s(): CommittedReplies {
    if (!this.replies) throw new Error('FUSE session not attached');
    return this.replies;
  }

  /** Maps any error to an errno reply; unexpected errors are logged and become EIO. */
  private fail(req: Req, op: string, e: unknown): void {
    if (e instanceof FsError) return this.s.err(req, e.errno);
    if (e instanceof CorruptObjectError || e instanceof StoreUnavailableError || e instanceof NotFoundError) {
      this.hooks.failed(e instanceof CorruptObjectError ? 'corrupt' : 'store');
      this.log.error({ op, err: e.message }, 'store error');
      return this.s.err(req, E.EIO);
    }
    // A tree or snapshot that hashes right but does not decode (malformed or hostile): never served.
    if (e instanceof FormatError) {
      this.hooks.failed('corrupt');
      this.log.error({ op, err: e.message }, 'invalid object in the store');
      return this.s.err(req, E.EIO);
    }
    // The local disk under the state directory is full (or read-only): tell the writer so, not EIO.
    const code = (e as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EROFS') {
      this.log.error({ op, err: (e as Error).message }, 'local state directory cannot take writes');
      return this.s.err(req, code === 'EROFS' ? E.EROFS : E.ENOSPC);
    }
    // Limits of the local filesystem under the upper area are the caller's errors, not I/O errors.
    if (code === 'EFBIG' || code === 'ENAMETOOLONG' || code === 'EOVERFLOW') return this.s.err(req, E[code]);
    this.hooks.failed('fuse');
    this.log.error({ op, err: e instanceof Error ? e.stack : String(e) }, 'request failed');
    this.s.err(req, E.EIO);
  }

  /** Runs fn once directory `ino` is loaded (and again after any NeedsLoad it throws), replying errors. */
  private run(req: Req, op: string, ino: number, fn: () => void | Promise<void>): void {
    this.activity(op);
    const attempt = (tries: number): void => {
      try {
        const pending = ino === 0 ? undefined : this.view.ensureLoaded(ino);
        if (pending) {
          this.whenLoaded(req, op, pending, () => attempt(tries));
          return;
        }
        const r = fn();
        if (r) r.catch((e: unknown) => this.fail(req, op, e));
      } catch (e) {
        if (e instanceof NeedsLoad && tries < 64) {
          const p = this.view.ensureLoaded(e.ino);
          if (p) this.whenLoaded(req, op, p, () => attempt(tries + 1));
          else attempt(tries + 1);
          return;
        }
        this.fail(req, op, e);
      }
    };
    attempt(0);
  }

  /** Continues `req` once a directory load finishes, unless it was interrupted meanwhile (then nothing runs). */
  private whenLoaded(req: Req, op: string, load: Promise<void>, next: () => void): void {
    this.interruptible.add(req);
    load.then(() => {
      if (this.interruptible.delete(req)) next();
    }, (e: unknown) => {
      if (this.interruptible.delete(req)) this.fail(req, op, e);
    });
  }

  /** Every request: the home is active; a live file's record is looked at again (once per request). */
  private activity(op: string): void {
    this.turn++;
    this.hooks.activity(op);
  }

  private writable(): void {
    if (this.hooks.readOnly) throw new FsError(E.EROFS);
  }

  private replyEntry(req: Req, node: Inode): void {
    this.view.ref(node.ino);
    this.s.entry(req, entryOf(node, this.t));
  }

  private openHandle(ino: number, writer: boolean): number {
    const fh = this.nextFh++;
    this.files.set(fh, ino);
    if (writer) {
      this.writerHandles.add(fh);
      this.openedWriter = true;
    }
    this.holds.set(fh, this.content.holdBlocks(ino));
    this.view.opened(ino);
    this.upper.hold(ino);
    return fh;
  }

  ops(): Ops {
    return {
      turnEnd: () => this.view.journal.commitScheduled(),
      lookup: (req, parent, name) => this.run(req, 'lookup', parent, () => {
        const node = this.view.lookup(parent, name);
        if (!node) {
          this.s.entry(req, { ino: 0, generation: 0, attr: attrOf(this.view.get(parent)), attrTimeout: 0, entryTimeout: this.t.negative });
          return;
        }
        this.replyEntry(req, node);
      }),
      // No reply: what a forget changes (an unlinked file's record removed) joins the next batch.
      forget: (ino, n) => this.view.journal.deferred(() => this.view.forget(ino, n)),
      getattr: (req, ino) => this.run(req, 'getattr', 0, () => this.s.attr(req, attrOf(this.view.attrs(ino)), this.t.attr)),
      setattr: (req, ino, set, fh) => this.run(req, 'setattr', 0, () => this.setattr(req, ino, set, fh)),
      readlink: (req, ino) => this.run(req, 'readlink', 0, () => {
        const node = this.view.get(ino);
        if (node.kind !== 'symlink') throw new FsError(E.EINVAL);
        this.s.readlink(req, node.target ?? '');
      }),
      mknod: (req, parent, name, mode, rdev) => this.run(req, 'mknod', parent, () => {
        this.writable();
        const kind = kindOfMode(mode);
        if (!kind || kind === 'dir' || kind === 'symlink') throw new FsError(E.EINVAL);
        const c = this.s.ctx(req);
        this.replyEntry(req, this.view.create(parent, name, { kind, mode, uid: c.uid, gid: c.gid, rdev }));
      }),
      mkdir: (req, parent, name, mode) => this.run(req, 'mkdir', parent, () => {
        this.writable();
        const c = this.s.ctx(req);
        this.replyEntry(req, this.view.create(parent, name, { kind: 'dir', mode, uid: c.uid, gid: c.gid }));
      }),
      unlink: (req, parent, name) => this.run(req, 'unlink', parent, () => {
        this.writable();
        this.view.remove(parent, name, false);
        this.s.err(req, 0);
      }),
      rmdir: (req, parent, name) => this.run(req, 'rmdir', parent, () => {
        this.writable();
        this.view.remove(parent, name, true);
        this.s.err(req, 0);
      }),
      symlink: (req, target, parent, name) => this.run(req, 'symlink', parent, () => {
        this.writable();
        if (Buffer.byteLength(target) > 4095) throw new FsError(E.ENAMETOOLONG);
        const c = this.s.ctx(req);
        this.replyEntry(req, this.view.create(parent, name, { kind: 'symlink', mode: 0o777, uid: c.uid, gid: c.gid, target }));
      }),
      rename: (req, parent, name, newParent, newName, flags) => this.run(req, 'rename', parent, () => {
        this.writable();
        const p2 = this.view.ensureLoaded(newParent);
        if (p2) throw new NeedsLoad(newParent);
        this.view.rename(parent, name, newParent, newName, flags);
        this.s.err(req, 0);
      }),
      link: (req, ino, newParent, newName) => this.run(req, 'link', newParent, () => {
        this.writable();
        this.replyEntry(req, this.view.link(ino, newParent, newName));
      }),
      open: (req, ino, flags, killSuidgid) => this.run(req, 'open', 0, () => {
        const node = this.view.get(ino);
        if (node.kind === 'dir') throw new FsError(E.EISDIR);
        if ((flags & 3) !== 0) this.writable();
        if (killSuidgid) this.killSuidgid(req, ino);
        if (!this.passthrough.enabled) {
          const fh = this.openHandle(ino, (flags & 3) !== 0);
          this.preloads.atOpen(ino, flags);
          return this.s.open(req, { fh, keepCache: true });
        }
        return this.openFile(ino, (flags & 3) !== 0).then((o) => {
          if (o.backingId === undefined && o.keepCache !== false) this.preloads.atOpen(ino, flags);
          this.s.open(req, o);
        });
      }),
      create: (req, parent, name, mode, flags) => this.run(req, 'create', parent, () => {
        this.writable();
        const c = this.s.ctx(req);
        // The kernel sends create only after a negative lookup; a name that exists now (raced) is EEXIST,
        // with or without O_EXCL, and the kernel retries the open on it.
        const node = this.view.create(parent, name, { kind: 'file', mode, uid: c.uid, gid: c.gid });
        if (!this.passthrough.enabled) {
          this.view.ref(node.ino);
          this.s.create(req, entryOf(node, this.t), { fh: this.openHandle(node.ino, (flags & 3) !== 0), keepCache: true });
          return;
        }
        return this.openFile(node.ino, (flags & 3) !== 0, true).then((o) => {
          this.view.ref(node.ino);
          this.s.create(req, entryOf(this.view.get(node.ino), this.t), o);
        });
      }),
      read: (req, ino, size, offset) => {
        this.activity('read');
        const t0 = performance.now();
        this.interruptible.add(req);
        this.content.read(ino, offset, size).then((buf) => {
          if (!this.interruptible.delete(req)) return; // interrupted: already answered EINTR
          this.s.buf(req, buf);
          this.hooks.observe('read', performance.now() - t0);
        }, (e: unknown) => {
          if (this.interruptible.delete(req)) this.fail(req, 'read', e);
        });
      },
      interrupt: (req) => {
        if (!this.interruptible.delete(req)) return; // answered already, or not interruptible
        this.activity('interrupt');
        this.s.err(req, E.EINTR);
      },
      write: (req, ino, data, offset, _fh, _flags, killSuidgid) => {
        this.activity('write');
        if (this.hooks.readOnly) return this.s.err(req, E.EROFS);
        const t0 = performance.now();
        if (killSuidgid) {
          try {
            this.killSuidgid(req, ino);
          } catch (e) {
            return this.fail(req, 'write', e);
          }
        }
        this.content.write(ino, offset, data).then((n) => {
          this.s.write(req, n);
          this.hooks.observe('write', performance.now() - t0);
        }, (e: unknown) => {
          this.fail(req, 'write', e);
          // With the writeback cache the kernel already counted these bytes in st_size: make it ask again.
          setImmediate(() => this.session?.invalInode(ino, -1, 0));
        });
      },
      // The kernel sends flush on every close, after it has waited for every write of the file to be
      // answered (and reports their errors itself); ENOSYS makes it stop sending them: one round trip
      // less per close. We hold no POSIX locks (the kernel keeps them locally).
      flush: (req) => this.s.err(req, E.ENOSYS),
      release: (req, ino, fh) => {
        this.holds.get(fh)?.();
        this.holds.delete(fh);
        this.writerHandles.delete(fh);
        if (this.passthrough.enabled && this.passthrough.released(fh)?.writer) {
          this.content.refresh(ino); // the last look at what the kernel wrote (closeLive relies on it), before an unlinked file's record goes
          this.content.closeLive(ino).catch((e: unknown) => this.log.error({ ino, err: (e as Error).message }, 'closing a passthrough file failed'));
        }
        if (this.files.delete(fh)) {
          this.upper.unhold(ino);
          this.view.closed(ino);
        }
        this.s.err(req, 0);
      },
      fsync: (req, ino, datasync) => {
        this.activity('fsync');
        const t0 = performance.now();
        this.hooks.fsync(ino, datasync).then(() => {
          this.s.err(req, 0);
          this.hooks.observe('fsync', performance.now() - t0);
        }, (e: unknown) => this.fail(req, 'fsync', e));
      },
      // No opendir or releasedir: the binding makes opendir zero-message (listings.ts explains the cookies).
      readdir: (req, ino, size, offset) => this.run(req, 'readdir', ino, () => this.readdir(req, ino, size, offset, false)),
      readdirplus: (req, ino, size, offset) => this.run(req, 'readdirplus', ino, () => this.readdir(req, ino, size, offset, true)),
      // A directory's fsync names its entries: the log segment holds each of them (seal/omission.ts).
      fsyncdir: (req, ino) => {
        this.hooks.fsync(ino, false).then(() => this.s.err(req, 0), (e: unknown) => this.fail(req, 'fsyncdir', e));
      },
      statfs: (req) => this.s.statfs(req, this.hooks.statfs()),
      setxattr: (req, ino, name, value, flags) => this.run(req, 'setxattr', 0, () => {
        this.writable();
        this.xattrs.set(ino, name, value, flags);
        this.s.err(req, 0);
      }),
      getxattr: (req, ino, name, size) => this.run(req, 'getxattr', 0, () => {
        const v = this.xattrs.get(ino, name);
        // The kernel asks for security.capability before every write: answer without building an error
        // (and let the binding answer the next ones for an inode with no xattrs at all).
        if (!v) return this.s.noSuchXattr(req, ino);
        if (size === 0) this.s.xattrSize(req, v.length);
        else if (size < v.length) throw new FsError(E.ERANGE);
        else this.s.buf(req, v);
      }),
      listxattr: (req, ino, size) => this.run(req, 'listxattr', 0, () => {
        const names = this.xattrs.list(ino);
        const buf = Buffer.from(names.map((n) => `${n}\0`).join(''));
        if (size === 0) this.s.xattrSize(req, buf.length);
        else if (size < buf.length) throw new FsError(E.ERANGE);
        else this.s.buf(req, buf);
      }),
      removexattr: (req, ino, name) => this.run(req, 'removexattr', 0, () => {
        this.writable();
        this.xattrs.remove(ino, name);
        this.s.err(req, 0);
      }),
      access: (req, ino) => this.run(req, 'access', 0, () => {
        this.view.get(ino);
        this.s.err(req, 0);
      }),
      fallocate: (req, ino, mode, offset, length) => {
        this.activity('fallocate');
        if (mode & ~1) return this.s.err(req, E.EOPNOTSUPP);
        const p = mode & 1 ? Promise.resolve() : this.content.allocate(ino, offset, length);
        p.then(() => this.s.err(req, 0), (e: unknown) => this.fail(req, 'fallocate', e));
      },
      // SEEK_DATA/SEEK_HOLE: ENOSYS makes the kernel answer them itself from its own i_size (whole file is
      // data), which is right under the writeback cache where the kernel knows the size before we do.
      lseek: (req) => this.s.err(req, E.ENOSYS),
      copyFileRange: (req, inoIn, offIn, _fhIn, inoOut, offOut, _fhOut, len) => {
        this.activity('copy_file_range');
        const go = async (): Promise<void> => {
          const data = await this.content.read(inoIn, offIn, Math.min(len, 16 * 1024 * 1024));
          const n = data.length > 0 ? await this.content.write(inoOut, offOut, data) : 0;
          this.s.write(req, n);
        };
        go().catch((e: unknown) => this.fail(req, 'copy_file_range', e));
      },
    };
  }

  private setattr(req: Req, ino: number, set: SetAttr, _fh: number | undefined): Promise<void> | void {
    this.writable();
    // The kernel flags a chown or a truncate that must clear setuid/setgid. A setattr with nothing in it but
    // perhaps a ctime is what is left of a chown(-1, -1) or of file_remove_privs once the kernel has taken its
    // kill bits out (FUSE_HANDLE_KILLPRIV_V2): both ask for the chown's rule (file_remove_privs only for an
    // unprivileged caller). The kernel's own time updates always carry an mtime.
    const caller = set.killSuidgid || isBare(set) ? this.s.ctx(req) : undefined;
    const meta = (): void => {
      const now = nowNs();
      const mode = set.mode ?? (caller ? clearedSetidMode(this.view.get(ino), caller, set.size === undefined) : undefined);
      const node = this.view.setMeta(ino, {
        ...(mode !== undefined ? { mode } : {}),
        ...(set.uid !== undefined ? { uid: set.uid } : {}),
        ...(set.gid !== undefined ? { gid: set.gid } : {}),
        ...(set.atime !== undefined ? { atimeNs: set.atime === 'now' ? now : toNs(set.atime) } : {}),
        ...(set.mtime !== undefined ? { mtimeNs: set.mtime === 'now' ? now : toNs(set.mtime) } : {}),
        ...(set.ctime !== undefined ? { ctimeNs: toNs(set.ctime) } : {}),
      });
      this.s.attr(req, attrOf(node), this.t.attr);
    };
    if (set.size !== undefined) {
      const node = this.view.get(ino);
      if (node.kind === 'dir') throw new FsError(E.EISDIR);
      if (node.kind !== 'file') throw new FsError(E.EINVAL);
      return this.content.truncate(ino, set.size).then(meta);
    }
    meta();
  }

  /** A write or O_TRUNC open the kernel flagged (FUSE_HANDLE_KILLPRIV_V2): the caller lacks CAP_FSETID. */
  private killSuidgid(req: Req, ino: number): void {
    const mode = clearedSetidMode(this.view.get(ino), this.s.ctx(req), false);
    if (mode !== undefined) this.view.setMeta(ino, { mode });
  }

  private readdir(req: Req, ino: number, size: number, offset: number, plus: boolean): void {
    const { entries, pos, cookie, done } = this.listings.at(ino, offset, () => this.view.list(ino).map(([name, i]) => [name, i.ino]));
    const self = this.view.get(ino);
    const parent = this.view.get(self.parents[0] ?? ino);
    // Positions: 1 = after ".", 2 = after "..", k + 3 = after entries[k]. Only what can fit is looked at: a
    // dirent takes at least 24 bytes, a direntplus at least 152. An entry whose inode has gone since the
    // listing was taken is left out (it was removed during the walk).
    const end = Math.min(entries.length + 2, pos + Math.ceil(size / (plus ? 152 : 24)) + 1);
    const slice: Array<{ name: string; node: Inode; off: number }> = [];
    for (let k = pos; k < end; k++) {
      const [name, node] = k === 0 ? ['.', self] : k === 1 ? ['..', parent] : this.listed(entries[k - 2]);
      if (node) slice.push({ name, node, off: cookie(k + 1) });
    }
    if (pos >= entries.length + 2) done();
    if (plus) {
      // Over the records' budget (inodes/trim.ts), entries other than directories go out without a node id:
      // the kernel lists them and makes no inode for them (a later stat looks them up), so it holds nothing
      // that keeps their directory's load in memory.
      const sparing = this.view.overBudget;
      const dot = (name: string): boolean => name === '.' || name === '..';
      const bare = (name: string, node: Inode): boolean => sparing && node.kind !== 'dir' && !dot(name);
      const packed = this.s.dirPlus(req, size, slice.map(({ name, node, off }) => {
        const entry = entryOf(node, this.t);
        return { name, entry: bare(name, node) ? { ...entry, ino: 0, generation: 0 } : entry, off };
      }));
      for (let i = 0; i < packed; i++) {
        const { name, node } = slice[i] as { name: string; node: Inode };
        if (!dot(name) && !bare(name, node)) this.view.ref(node.ino);
      }
    } else {
      this.s.dir(req, size, slice.map(({ name, node, off }) => ({ name, ino: node.ino, mode: modeOf(node), off })));
    }
  }

  private listed(e: [string, number] | undefined): [string, Inode | undefined] {
    return e ? [e[0], this.view.peek(e[1])] : ['', undefined];
  }
}

/** A setattr that changes nothing but perhaps the ctime (see setattr). */
function isBare(set: SetAttr): boolean {
  return set.mode === undefined && set.uid === undefined && set.gid === undefined && set.size === undefined &&
    set.atime === undefined && set.mtime === undefined && set.killSuidgid !== true;
}

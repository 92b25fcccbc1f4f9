/**
 * `FuseSession`: one mounted FUSE session, the object handlers answer through (`Session` in types.ts).
 *
 * Reply methods are thin: fixed-size replies write their fields into the shared scratch array and call the
 * addon; directory replies decide here how many entries fit (the same arithmetic as libfuse's
 * fuse_add_direntry[_plus]) so only those are converted. The addon stays the authority and returns how
 * many it actually packed.
 */
import type { Attr, Ctx, DirEntry, DirPlusEntry, Entry, FuseCaps, OpenReply, Req, Session, StatFs } from './types.js';
import { DIRPLUS_STRIDE, DIR_STRIDE, SC, scratch, type NativeAddon, type NativeSession } from './native.js';

const DIRENT_HEADER = 24;         // offsetof(struct fuse_dirent, name)
const DIRENTPLUS_HEADER = 152;    // offsetof(struct fuse_direntplus, dirent.name)
const align8 = (n: number): number => (n + 7) & ~7;

function putAttr(a: Attr, x: Float64Array, o: number): void {
  x[o + SC.ino] = a.ino; x[o + SC.mode] = a.mode; x[o + SC.nlink] = a.nlink; x[o + SC.uid] = a.uid;
  x[o + SC.gid] = a.gid; x[o + SC.rdev] = a.rdev; x[o + SC.size] = a.size; x[o + SC.blocks] = a.blocks;
  x[o + SC.blksize] = a.blksize; x[o + SC.atime] = a.atimeSec; x[o + SC.atimeNs] = a.atimeNsec;
  x[o + SC.mtime] = a.mtimeSec; x[o + SC.mtimeNs] = a.mtimeNsec; x[o + SC.ctime] = a.ctimeSec;
  x[o + SC.ctimeNs] = a.ctimeNsec;
}
function putEntry(e: Entry, x: Float64Array, o: number): void {
  putAttr(e.attr, x, o);
  x[o + SC.nodeid] = e.ino; x[o + SC.generation] = e.generation;
  x[o + SC.attrTimeout] = e.attrTimeout; x[o + SC.entryTimeout] = e.entryTimeout;
}
function putOpen(r: OpenReply): void {
  scratch[SC.fh] = r.fh;
  scratch[SC.openFlags] = (r.keepCache ? 1 : 0) | (r.directIo ? 2 : 0) | (r.nonSeekable ? 4 : 0)
    | (r.noFlush ? 8 : 0) | (r.cacheDir ? 16 : 0);
  scratch[SC.backing] = r.backingId ?? 0;
}
function checkName(name: string): void {
  if (name.includes('/') || name.includes('\0')) throw new TypeError(`directory entry name contains '/' or NUL: ${JSON.stringify(name)}`);
}

export class FuseSession implements Session {
  private dirNums = new Float64Array(64 * DIRPLUS_STRIDE);
  private readonly unmountedCbs: Array<(reason: string) => void> = [];
  private closed = false;

  constructor(
    private readonly addon: NativeAddon,
    private handle: NativeSession | undefined,
    readonly mountpoint: string,
    private readonly onClosed: (s: FuseSession) => void,
  ) {}

  /** Called by mount() once the addon returned the handle. */
  attach(handle: NativeSession): void { this.handle = handle; }

  /** Called by the addon (through mount()) when the kernel side went away. */
  externallyUnmounted(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.onClosed(this);
    for (const cb of this.unmountedCbs) cb(reason);
  }

  get isMounted(): boolean { return !this.closed; }

  ctx(req: Req): Ctx { return this.addon.ctx(req); }
  err(req: Req, errno: number): void { this.addon.replyErr(req, errno); }
  none(req: Req): void { this.addon.replyNone(req); }
  entry(req: Req, e: Entry): void { putEntry(e, scratch, 0); this.addon.replyEntry(req); }
  create(req: Req, e: Entry, o: OpenReply): void { putEntry(e, scratch, 0); putOpen(o); this.addon.replyCreate(req); }
  attr(req: Req, a: Attr, timeout: number): void {
    putAttr(a, scratch, 0); scratch[SC.attrTimeout] = timeout; this.addon.replyAttr(req);
  }
  readlink(req: Req, target: string): void { this.addon.replyReadlink(req, target); }
  open(req: Req, o: OpenReply): void { putOpen(o); this.addon.replyOpen(req); }
  write(req: Req, count: number): void { this.addon.replyWrite(req, count); }
  buf(req: Req, data: Uint8Array): void { this.addon.replyBuf(req, data); }
  xattrSize(req: Req, size: number): void { this.addon.replyXattrSize(req, size); }
  lseek(req: Req, off: number): void { this.addon.replyLseek(req, off); }
  statfs(req: Req, s: StatFs): void {
    scratch[0] = s.bsize; scratch[1] = s.frsize; scratch[2] = s.blocks; scratch[3] = s.bfree; scratch[4] = s.bavail;
    scratch[5] = s.files; scratch[6] = s.ffree; scratch[7] = s.favail; scratch[8] = s.namemax;
    this.addon.replyStatfs(req);
  }

  private nums(n: number): Float64Array {
    if (this.dirNums.length < n) this.dirNums = new Float64Array(Math.max(n, this.dirNums.length * 2));
    return this.dirNums;
  }

  dir(req: Req, size: number, entries: DirEntry[]): number {
    let used = 0, n = 0;
    const names: string[] = [];
    for (const d of entries) {
      const need = align8(DIRENT_HEADER + Buffer.byteLength(d.name));
      if (used + need > size) break;
      checkName(d.name);
      used += need; names.push(d.name); n++;
    }
    const x = this.nums(n * DIR_STRIDE);
    for (let i = 0; i < n; i++) {
      const d = entries[i] as DirEntry;
      x[i * DIR_STRIDE] = d.ino; x[i * DIR_STRIDE + 1] = d.mode; x[i * DIR_STRIDE + 2] = d.off;
    }
    return this.addon.replyDir(req, size, n, names.join('/'), x, false);
  }

  dirPlus(req: Req, size: number, entries: DirPlusEntry[]): number {
    let used = 0, n = 0;
    const names: string[] = [];
    for (const d of entries) {
      const need = align8(DIRENTPLUS_HEADER + Buffer.byteLength(d.name));
      if (used + need > size) break;
      checkName(d.name);
      used += need; names.push(d.name); n++;
    }
    const x = this.nums(n * DIRPLUS_STRIDE);
    for (let i = 0; i < n; i++) {
      const d = entries[i] as DirPlusEntry;
      putEntry(d.entry, x, i * DIRPLUS_STRIDE);
      x[i * DIRPLUS_STRIDE + 19] = d.off;
    }
    return this.addon.replyDir(req, size, n, names.join('/'), x, true);
  }

  invalInode(ino: number, off: number, len: number): number {
    return this.closed || !this.handle ? -107 : this.addon.invalInode(this.handle, ino, off, len);
  }
  notifyStore(ino: number, off: number, data: Uint8Array): number {
    return this.closed || !this.handle ? -107 : this.addon.notifyStore(this.handle, ino, off, data);
  }
  invalEntry(parent: number, name: string): number {
    return this.closed || !this.handle ? -107 : this.addon.invalEntry(this.handle, parent, name);
  }

  backingOpen(fd: number): number { return this.handle ? this.addon.backingOpen(this.handle, fd) : -107; }
  backingClose(id: number): number { return this.handle ? this.addon.backingClose(this.handle, id) : -107; }
  caps(): FuseCaps {
    return this.handle ? this.addon.caps(this.handle) : { passthrough: false, writebackCache: false, initialized: false };
  }
  markNoXattrs(ino: number): void {
    if (!this.closed && this.handle) this.addon.markNoXattrs(this.handle, ino);
  }
  revokeNoXattrs(ino: number): void {
    if (!this.closed && this.handle) this.addon.revokeNoXattrs(this.handle, ino);
  }

  unmount(): void { this.close(false); }

  /** exiting = the process is going away: unmount only, call no JS (safe even inside a handler). */
  close(exiting: boolean): void {
    if (this.closed) return;
    this.closed = true;
    this.onClosed(this);
    if (this.handle) this.addon.unmount(this.handle, exiting);
  }

  onUnmounted(cb: (reason: string) => void): void { this.unmountedCbs.push(cb); }
}

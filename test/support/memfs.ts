/**
 * An in-memory filesystem on the FUSE binding, for tests and benchmarks of the binding itself.
 *
 * It implements every op of `Ops` with the errno paths a real filesystem has (ENOENT, EEXIST, ENOTDIR,
 * EISDIR, ENOTEMPTY, ENODATA, ERANGE, ENXIO…), the kernel's lookup-count protocol (an inode lives while it
 * has a name, a lookup reference or an open handle), rename flags, xattrs, nanosecond times, and inode
 * numbers above 2^32. Directory handles snapshot the listing at opendir so readdir cookies stay stable.
 * `slowPrefix`: lookups of names starting with it are answered `slowMs` later (tests of parallel dirops).
 * `throwOnName`: a lookup of that name throws (tests of a crashing handler).
 * `writeBatch`: writes are held until that many wait, then applied (reading their payload only then) and
 * answered, newest first (tests of the binding's pooled write buffers: a request's own until answered).
 * The virtual xattr `user.memfs.stats` on the root returns the counters as JSON (for tests in another process);
 * setting BEHIND_WRITE / BEHIND_UNLINK changes things behind the kernel and sends invalidations.
 */
import type { Attr, DirEntry, DirPlusEntry, Entry, Ops, Req, Session, SetAttr } from '../../src/fuse/types.js';
import { servedStats, waitEnds, writeBufferStats } from '../../src/fuse/index.js';
import { constants as os } from 'node:os';

const E = os.errno;
const S_IFMT = 0o170000, S_IFDIR = 0o040000, S_IFREG = 0o100000, S_IFLNK = 0o120000;
const RENAME_NOREPLACE = 1, RENAME_EXCHANGE = 2;
const XATTR_CREATE = 1, XATTR_REPLACE = 2;
const SEEK_DATA = 3, SEEK_HOLE = 4;
export const MEMFS_INO_BASE = 2 ** 32 + 7;
export const STATS_XATTR = 'user.memfs.stats';
/** setxattr(file, BEHIND_WRITE, bytes) / setxattr(dir, BEHIND_UNLINK, name): change behind the kernel's back. */
export const BEHIND_WRITE = 'user.memfs.behind-write';
export const BEHIND_UNLINK = 'user.memfs.behind-unlink';

interface Time { sec: number; nsec: number }
interface Node {
  ino: number; mode: number; nlink: number; uid: number; gid: number; rdev: number;
  data: Buffer; size: number; atime: Time; mtime: Time; ctime: Time;
  xattrs: Map<string, Buffer>; children?: Map<string, number>; parent: number; target?: string;
  lookups: number; opens: number;
}

function now(): Time {
  const ns = process.hrtime.bigint() - hrBase + wallBaseNs;
  return { sec: Number(ns / 1_000_000_000n), nsec: Number(ns % 1_000_000_000n) };
}
const hrBase = process.hrtime.bigint();
const wallBaseNs = BigInt(Date.now()) * 1_000_000n;

export interface MemFsOptions { timeout?: number; slowPrefix?: string; slowMs?: number; throwOnName?: string; writeBatch?: number }

export class MemFs implements Ops {
  private readonly nodes = new Map<number, Node>();
  private readonly handles = new Map<number, { ino: number; listing?: Array<{ name: string; ino: number }> }>();
  private nextIno = MEMFS_INO_BASE;
  private nextFh = 1;
  private session: Session | undefined;
  private readonly timeout: number;
  /** Counters the tests look at. */
  readonly stats = { forgets: 0, interrupts: 0, lookups: 0, readdir: 0, readdirplus: 0 };

  constructor(private readonly opts: MemFsOptions = {}) {
    this.timeout = opts.timeout ?? 1;
    const root = this.newNode(S_IFDIR | 0o755, 0, 0, 1);
    this.nodes.delete(root.ino);
    root.ino = 1; root.parent = 1; root.nlink = 2; root.lookups = 1;
    this.nodes.set(1, root);
  }

  attach(s: Session): void { this.session = s; }
  private get r(): Session {
    if (!this.session) throw new Error('MemFs used before attach()');
    return this.session;
  }
  /** Inodes currently alive (tests check that forget lets unlinked ones go). */
  get liveInodes(): number { return this.nodes.size; }

  private newNode(mode: number, uid: number, gid: number, parent: number): Node {
    const t = now();
    const n: Node = {
      ino: this.nextIno++, mode, nlink: 1, uid, gid, rdev: 0, data: Buffer.alloc(0), size: 0,
      atime: t, mtime: t, ctime: t, xattrs: new Map(), parent, lookups: 0, opens: 0,
    };
    if ((mode & S_IFMT) === S_IFDIR) { n.children = new Map(); n.nlink = 2; }
    this.nodes.set(n.ino, n);
    return n;
  }
  private attrOf(n: Node): Attr {
    return {
      ino: n.ino, mode: n.mode, nlink: n.nlink, uid: n.uid, gid: n.gid, rdev: n.rdev, size: n.size,
      blocks: Math.ceil(n.size / 512), blksize: 4096,
      atimeSec: n.atime.sec, atimeNsec: n.atime.nsec, mtimeSec: n.mtime.sec, mtimeNsec: n.mtime.nsec,
      ctimeSec: n.ctime.sec, ctimeNsec: n.ctime.nsec,
    };
  }
  private entryOf(n: Node): Entry {
    return { ino: n.ino, generation: 1, attr: this.attrOf(n), attrTimeout: this.timeout, entryTimeout: this.timeout };
  }
  private maybeFree(n: Node): void {
    if (n.nlink === 0 && n.lookups === 0 && n.opens === 0 && n.ino !== 1) this.nodes.delete(n.ino);
  }
  private dir(req: Req, ino: number): Node | undefined {
    const n = this.nodes.get(ino);
    if (!n) { this.r.err(req, E.ENOENT); return undefined; }
    if (!n.children) { this.r.err(req, E.ENOTDIR); return undefined; }
    return n;
  }
  private node(req: Req, ino: number): Node | undefined {
    const n = this.nodes.get(ino);
    if (!n) this.r.err(req, E.ENOENT);
    return n;
  }
  private reply(req: Req, n: Node): void { n.lookups++; this.r.entry(req, this.entryOf(n)); }
  private touchDir(d: Node): void { d.mtime = d.ctime = now(); }

  private makeChild(req: Req, parent: number, name: string, mode: number): Node | undefined {
    const d = this.dir(req, parent);
    if (!d || !d.children) return undefined;
    if (d.children.has(name)) { this.r.err(req, E.EEXIST); return undefined; }
    if (Buffer.byteLength(name) > 255) { this.r.err(req, E.ENAMETOOLONG); return undefined; }
    const c = this.r.ctx(req);
    const n = this.newNode(mode, c.uid, c.gid, d.ino);
    d.children.set(name, n.ino);
    if (n.children) d.nlink++;
    this.touchDir(d);
    return n;
  }

  lookup(req: Req, parent: number, name: string): void {
    this.stats.lookups++;
    if (name === this.opts.throwOnName) throw new Error(`memfs: asked to crash on lookup of ${name}`);
    const answer = (): void => {
      const d = this.dir(req, parent);
      if (!d || !d.children) return;
      const ino = d.children.get(name);
      const n = ino === undefined ? undefined : this.nodes.get(ino);
      if (!n) return this.r.err(req, E.ENOENT);
      this.reply(req, n);
    };
    if (this.opts.slowPrefix && name.startsWith(this.opts.slowPrefix)) setTimeout(answer, this.opts.slowMs ?? 500);
    else answer();
  }
  forget(ino: number, nlookup: number): void {
    this.stats.forgets++;
    const n = this.nodes.get(ino);
    if (!n) return;
    n.lookups = Math.max(0, n.lookups - nlookup);
    this.maybeFree(n);
  }
  getattr(req: Req, ino: number): void {
    const n = this.node(req, ino);
    if (n) this.r.attr(req, this.attrOf(n), this.timeout);
  }
  setattr(req: Req, ino: number, set: SetAttr): void {
    const n = this.node(req, ino);
    if (!n) return;
    const t = now();
    if (set.mode !== undefined) n.mode = (n.mode & S_IFMT) | (set.mode & 0o7777);
    if (set.uid !== undefined) n.uid = set.uid;
    if (set.gid !== undefined) n.gid = set.gid;
    if (set.size !== undefined) {
      if (n.children) return this.r.err(req, E.EISDIR);
      this.resize(n, set.size);
      n.mtime = t;
    }
    if (set.atime !== undefined) n.atime = set.atime === 'now' ? t : set.atime;
    if (set.mtime !== undefined) n.mtime = set.mtime === 'now' ? t : set.mtime;
    n.ctime = set.ctime ?? t;
    this.r.attr(req, this.attrOf(n), this.timeout);
  }
  private resize(n: Node, size: number): void {
    if (size > n.data.length) {
      const b = Buffer.alloc(Math.max(size, n.data.length * 2));
      n.data.copy(b, 0, 0, n.size);
      n.data = b;
    } else if (size < n.size) {
      n.data.fill(0, size, n.size);
    }
    n.size = size;
  }
  readlink(req: Req, ino: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    if (n.target === undefined) return this.r.err(req, E.EINVAL);
    this.r.readlink(req, n.target);
  }
  mknod(req: Req, parent: number, name: string, mode: number, rdev: number): void {
    const n = this.makeChild(req, parent, name, mode);
    if (!n) return;
    n.rdev = rdev;
    this.reply(req, n);
  }
  mkdir(req: Req, parent: number, name: string, mode: number): void {
    const n = this.makeChild(req, parent, name, S_IFDIR | (mode & 0o7777));
    if (n) this.reply(req, n);
  }
  symlink(req: Req, target: string, parent: number, name: string): void {
    const n = this.makeChild(req, parent, name, S_IFLNK | 0o777);
    if (!n) return;
    n.target = target; n.size = Buffer.byteLength(target);
    this.reply(req, n);
  }
  link(req: Req, ino: number, newParent: number, newName: string): void {
    const n = this.node(req, ino);
    if (!n) return;
    if (n.children) return this.r.err(req, E.EPERM);
    const d = this.dir(req, newParent);
    if (!d || !d.children) return;
    if (d.children.has(newName)) return this.r.err(req, E.EEXIST);
    d.children.set(newName, n.ino);
    n.nlink++; n.ctime = now();
    this.touchDir(d);
    this.reply(req, n);
  }
  private removeName(req: Req, parent: number, name: string, wantDir: boolean): void {
    const d = this.dir(req, parent);
    if (!d || !d.children) return;
    const ino = d.children.get(name);
    const n = ino === undefined ? undefined : this.nodes.get(ino);
    if (!n) return this.r.err(req, E.ENOENT);
    if (wantDir && !n.children) return this.r.err(req, E.ENOTDIR);
    if (!wantDir && n.children) return this.r.err(req, E.EISDIR);
    if (n.children && n.children.size > 0) return this.r.err(req, E.ENOTEMPTY);
    d.children.delete(name);
    if (n.children) { d.nlink--; n.nlink = 0; } else n.nlink--;
    n.ctime = now();
    this.touchDir(d);
    this.maybeFree(n);
    this.r.err(req, 0);
  }
  unlink(req: Req, parent: number, name: string): void { this.removeName(req, parent, name, false); }
  rmdir(req: Req, parent: number, name: string): void { this.removeName(req, parent, name, true); }

  rename(req: Req, parent: number, name: string, newParent: number, newName: string, flags: number): void {
    const d1 = this.dir(req, parent);
    if (!d1 || !d1.children) return;
    const d2 = this.dir(req, newParent);
    if (!d2 || !d2.children) return;
    const srcIno = d1.children.get(name);
    const src = srcIno === undefined ? undefined : this.nodes.get(srcIno);
    if (!src) return this.r.err(req, E.ENOENT);
    const dstIno = d2.children.get(newName);
    const dst = dstIno === undefined ? undefined : this.nodes.get(dstIno);
    if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) return this.r.err(req, E.EINVAL);
    if (flags & RENAME_EXCHANGE) {
      if (!dst) return this.r.err(req, E.ENOENT);
      d1.children.set(name, dst.ino); d2.children.set(newName, src.ino);
      if (d1 !== d2 && src.children && !dst.children) { d1.nlink--; d2.nlink++; }
      if (d1 !== d2 && dst.children && !src.children) { d2.nlink--; d1.nlink++; }
      src.parent = d2.ino; dst.parent = d1.ino; src.ctime = dst.ctime = now();
      this.touchDir(d1); this.touchDir(d2);
      return this.r.err(req, 0);
    }
    if (dst) {
      if (flags & RENAME_NOREPLACE) return this.r.err(req, E.EEXIST);
      if (dst === src) return this.r.err(req, 0);
      if (src.children && !dst.children) return this.r.err(req, E.ENOTDIR);
      if (!src.children && dst.children) return this.r.err(req, E.EISDIR);
      if (dst.children && dst.children.size > 0) return this.r.err(req, E.ENOTEMPTY);
      if (dst.children) { d2.nlink--; dst.nlink = 0; } else dst.nlink--;
      dst.ctime = now();
      this.maybeFree(dst);
    }
    d1.children.delete(name);
    d2.children.set(newName, src.ino);
    if (src.children && d1 !== d2) { d1.nlink--; d2.nlink++; }
    src.parent = d2.ino; src.ctime = now();
    this.touchDir(d1); this.touchDir(d2);
    this.r.err(req, 0);
  }

  open(req: Req, ino: number, flags: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    if (n.children) return this.r.err(req, E.EISDIR);
    n.opens++;
    const fh = this.nextFh++;
    this.handles.set(fh, { ino });
    this.r.open(req, { fh, keepCache: true, noFlush: (flags & 3) === 0 });  // read-only: no flush on close
  }
  create(req: Req, parent: number, name: string, mode: number): void {
    const n = this.makeChild(req, parent, name, S_IFREG | (mode & 0o7777));
    if (!n) return;
    n.lookups++; n.opens++;
    const fh = this.nextFh++;
    this.handles.set(fh, { ino: n.ino });
    this.r.create(req, this.entryOf(n), { fh });
  }
  read(req: Req, ino: number, size: number, offset: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    const end = Math.min(n.size, offset + size);
    this.r.buf(req, offset >= end ? Buffer.alloc(0) : n.data.subarray(offset, end));
  }
  private readonly heldWrites: Array<() => void> = [];
  write(req: Req, ino: number, data: Buffer, offset: number): void {
    const batch = this.opts.writeBatch ?? 0;
    if (batch === 0) return this.applyWrite(req, ino, data, offset);
    this.heldWrites.push(() => this.applyWrite(req, ino, data, offset));
    if (this.heldWrites.length < batch) return;
    const held = this.heldWrites.splice(0).reverse();
    setImmediate(() => { for (const apply of held) apply(); });
  }
  private applyWrite(req: Req, ino: number, data: Buffer, offset: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    const end = offset + data.length;
    if (end > n.size) this.resize(n, end);
    data.copy(n.data, offset);
    n.mtime = n.ctime = now();
    this.r.write(req, data.length);
  }
  flush(req: Req): void { this.r.err(req, 0); }
  release(req: Req, _ino: number, fh: number): void {
    const h = this.handles.get(fh);
    this.handles.delete(fh);
    const n = h ? this.nodes.get(h.ino) : undefined;
    if (n) { n.opens--; this.maybeFree(n); }
    this.r.err(req, 0);
  }
  fsync(req: Req): void { this.r.err(req, 0); }
  opendir(req: Req, ino: number): void {
    const d = this.dir(req, ino);
    if (!d || !d.children) return;
    const listing = [{ name: '.', ino: d.ino }, { name: '..', ino: d.parent }];
    for (const [name, cino] of d.children) listing.push({ name, ino: cino });
    const fh = this.nextFh++;
    this.handles.set(fh, { ino, listing });
    this.r.open(req, { fh });
  }
  private listing(req: Req, fh: number): Array<{ name: string; ino: number }> | undefined {
    const h = this.handles.get(fh);
    if (!h?.listing) { this.r.err(req, E.EBADF); return undefined; }
    return h.listing;
  }
  readdir(req: Req, _ino: number, size: number, offset: number, fh: number): void {
    this.stats.readdir++;
    const l = this.listing(req, fh);
    if (!l) return;
    const out: DirEntry[] = [];
    for (let i = offset; i < l.length && out.length < 4096; i++) {
      const e = l[i] as { name: string; ino: number };
      out.push({ name: e.name, ino: e.ino, mode: this.nodes.get(e.ino)?.mode ?? 0, off: i + 1 });
    }
    this.r.dir(req, size, out);
  }
  readdirplus(req: Req, _ino: number, size: number, offset: number, fh: number): void {
    this.stats.readdirplus++;
    const l = this.listing(req, fh);
    if (!l) return;
    const out: DirPlusEntry[] = [];
    const nodes: Array<Node | undefined> = [];
    for (let i = offset; i < l.length && out.length < 1024; i++) {
      const e = l[i] as { name: string; ino: number };
      const n = this.nodes.get(e.ino);
      if (!n) continue;
      nodes.push(e.name === '.' || e.name === '..' ? undefined : n);
      out.push({ name: e.name, entry: this.entryOf(n), off: i + 1 });
    }
    const packed = this.r.dirPlus(req, size, out);
    // The kernel took a lookup reference for each packed entry other than "." and "..".
    for (let i = 0; i < packed; i++) { const n = nodes[i]; if (n) n.lookups++; }
  }
  releasedir(req: Req, _ino: number, fh: number): void { this.handles.delete(fh); this.r.err(req, 0); }
  fsyncdir(req: Req): void { this.r.err(req, 0); }
  statfs(req: Req): void {
    this.r.statfs(req, { bsize: 4096, frsize: 4096, blocks: 1 << 20, bfree: 1 << 19, bavail: 1 << 19,
      files: 1 << 20, ffree: (1 << 20) - this.nodes.size, favail: (1 << 20) - this.nodes.size, namemax: 255 });
  }
  setxattr(req: Req, ino: number, name: string, value: Buffer, flags: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    if (name === BEHIND_WRITE || name === BEHIND_UNLINK) return this.changeBehindKernel(req, n, name, value);
    const has = n.xattrs.has(name);
    if ((flags & XATTR_CREATE) && has) return this.r.err(req, E.EEXIST);
    if ((flags & XATTR_REPLACE) && !has) return this.r.err(req, E.ENODATA);
    n.xattrs.set(name, Buffer.from(value));
    n.ctime = now();
    this.r.err(req, 0);
  }
  /**
   * Test hook: change content or a name without the kernel knowing, then tell it (invalInode/invalEntry).
   * The reply goes first: notifying while the kernel still waits on a request that holds the directory's
   * lock (setxattr on that directory) would deadlock.
   */
  private changeBehindKernel(req: Req, n: Node, name: string, value: Buffer): void {
    if (name === BEHIND_WRITE) {
      if (n.children) return this.r.err(req, E.EISDIR);
      n.data = Buffer.from(value); n.size = value.length; n.mtime = n.ctime = now();
      this.r.err(req, 0);
      this.lastInval = this.r.invalInode(n.ino, 0, 0);
      return;
    }
    const child = value.toString();
    const cino = n.children?.get(child);
    const c = cino === undefined ? undefined : this.nodes.get(cino);
    if (!n.children || !c || c.children) return this.r.err(req, E.ENOENT);
    n.children.delete(child); c.nlink--; this.maybeFree(c);
    this.r.err(req, 0);
    this.lastInval = this.r.invalEntry(n.ino, child);
  }
  /** Result of the last invalInode/invalEntry (0 or -errno), reported in the stats xattr. */
  private lastInval = 1;

  getxattr(req: Req, ino: number, name: string, size: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    const v = ino === 1 && name === STATS_XATTR
      ? Buffer.from(JSON.stringify({ ...this.stats, liveInodes: this.nodes.size, lastInval: this.lastInval, writeBuffers: writeBufferStats(), served: servedStats(), waitEnds: waitEnds() }))
      : n.xattrs.get(name);
    if (!v) return this.r.err(req, E.ENODATA);
    if (size === 0) return this.r.xattrSize(req, v.length);
    if (size < v.length) return this.r.err(req, E.ERANGE);
    this.r.buf(req, v);
  }
  listxattr(req: Req, ino: number, size: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    const list = Buffer.from([...n.xattrs.keys()].map((k) => `${k}\0`).join(''));
    if (size === 0) return this.r.xattrSize(req, list.length);
    if (size < list.length) return this.r.err(req, E.ERANGE);
    this.r.buf(req, list);
  }
  removexattr(req: Req, ino: number, name: string): void {
    const n = this.node(req, ino);
    if (!n) return;
    if (!n.xattrs.delete(name)) return this.r.err(req, E.ENODATA);
    n.ctime = now();
    this.r.err(req, 0);
  }
  access(req: Req, ino: number): void {
    if (this.node(req, ino)) this.r.err(req, 0);
  }
  fallocate(req: Req, ino: number, mode: number, offset: number, length: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    if (mode !== 0) return this.r.err(req, E.EOPNOTSUPP);
    if (offset + length > n.size) this.resize(n, offset + length);
    this.r.err(req, 0);
  }
  lseek(req: Req, ino: number, off: number, whence: number): void {
    const n = this.node(req, ino);
    if (!n) return;
    if (whence === SEEK_DATA) return off >= n.size ? this.r.err(req, E.ENXIO) : this.r.lseek(req, off);
    if (whence === SEEK_HOLE) return off >= n.size ? this.r.err(req, E.ENXIO) : this.r.lseek(req, n.size);
    this.r.err(req, E.EINVAL);
  }
  copyFileRange(req: Req, inoIn: number, offIn: number, _fhIn: number, inoOut: number, offOut: number, _fhOut: number, len: number): void {
    const a = this.node(req, inoIn);
    if (!a) return;
    const b = this.node(req, inoOut);
    if (!b) return;
    const end = Math.min(a.size, offIn + len);
    const chunk = Buffer.from(a.data.subarray(offIn, Math.max(offIn, end)));
    if (offOut + chunk.length > b.size) this.resize(b, offOut + chunk.length);
    chunk.copy(b.data, offOut);
    b.mtime = b.ctime = now();
    this.r.write(req, chunk.length);
  }
  interrupt(_req: Req): void { this.stats.interrupts++; }
}

/**
 * A loopback filesystem on the homefs FUSE binding: every op is passed to a backing directory with
 * synchronous fs calls (the backing directory is not our mountpoint, and a sync call on a local disk is
 * cheaper than a threadpool hop). It exists to measure the binding's overhead against bindfs and
 * fuse-native doing the same job; it is not part of homefs. Inode numbers are the backing ones + 2^32.
 */
import fs from 'node:fs';
import path from 'node:path';
import { constants as os } from 'node:os';
import type { Attr, DirEntry, Entry, Ops, Req, Session, SetAttr } from '../../src/fuse/types.js';

const E = os.errno;
const OFFSET = 2 ** 32;
const TIMEOUT = 1;  // seconds, the same as bindfs's (libfuse's high-level) defaults

function errnoOf(e: unknown): number {
  const c = (e as NodeJS.ErrnoException).code;
  const n = c ? (E as Record<string, number>)[c] : undefined;
  return n ?? E.EIO;
}
function typeBits(d: fs.Dirent): number {
  if (d.isDirectory()) return 0o040000;
  if (d.isSymbolicLink()) return 0o120000;
  if (d.isFIFO()) return 0o010000;
  if (d.isSocket()) return 0o140000;
  if (d.isCharacterDevice()) return 0o020000;
  if (d.isBlockDevice()) return 0o060000;
  return 0o100000;
}

/** No readdirplus: defining it would switch the kernel to readdirplus, and this loopback has no cheap attributes to offer. */
export class Loopback implements Omit<Ops, 'readdirplus'> {
  private readonly paths = new Map<number, { path: string; nlookup: number }>();
  private readonly dirs = new Map<number, DirEntry[]>();
  private nextDirFh = 1;
  private session: Session | undefined;
  private readonly readBuf = Buffer.allocUnsafe(1 << 20);

  constructor(root: string, private readonly keepCache = false) { this.paths.set(1, { path: root, nlookup: 1 }); }
  attach(s: Session): void { this.session = s; }
  private get r(): Session { if (!this.session) throw new Error('Loopback used before attach()'); return this.session; }

  private p(ino: number): string | undefined { return this.paths.get(ino)?.path; }
  private attr(st: fs.BigIntStats, ino: number): Attr {
    return {
      ino, mode: Number(st.mode), nlink: Number(st.nlink), uid: Number(st.uid), gid: Number(st.gid), rdev: Number(st.rdev),
      size: Number(st.size), blocks: Number(st.blocks), blksize: Number(st.blksize),
      atimeSec: Number(st.atimeNs / 1_000_000_000n), atimeNsec: Number(st.atimeNs % 1_000_000_000n),
      mtimeSec: Number(st.mtimeNs / 1_000_000_000n), mtimeNsec: Number(st.mtimeNs % 1_000_000_000n),
      ctimeSec: Number(st.ctimeNs / 1_000_000_000n), ctimeNsec: Number(st.ctimeNs % 1_000_000_000n),
    };
  }
  private entry(p: string): Entry {
    const st = fs.lstatSync(p, { bigint: true });
    const ino = Number(st.ino) + OFFSET;
    const known = this.paths.get(ino);
    if (known) { known.nlookup++; known.path = p; } else this.paths.set(ino, { path: p, nlookup: 1 });
    return { ino, generation: 0, attr: this.attr(st, ino), attrTimeout: TIMEOUT, entryTimeout: TIMEOUT };
  }
  private child(req: Req, parent: number, name: string): string | undefined {
    const d = this.p(parent);
    if (d === undefined) { this.r.err(req, E.ENOENT); return undefined; }
    return path.join(d, name);
  }
  private run(req: Req, fn: () => void): void {
    try { fn(); } catch (e) { this.r.err(req, errnoOf(e)); }
  }

  lookup(req: Req, parent: number, name: string): void {
    const p = this.child(req, parent, name);
    if (p === undefined) return;
    const st = fs.lstatSync(p, { bigint: true, throwIfNoEntry: false });
    if (!st) return this.r.err(req, E.ENOENT);
    this.run(req, () => this.r.entry(req, this.entry(p)));
  }
  forget(ino: number, nlookup: number): void {
    const n = this.paths.get(ino);
    if (!n || ino === 1) return;
    n.nlookup -= nlookup;
    if (n.nlookup <= 0) this.paths.delete(ino);
  }
  getattr(req: Req, ino: number): void {
    const p = this.p(ino);
    if (p === undefined) return this.r.err(req, E.ENOENT);
    this.run(req, () => this.r.attr(req, this.attr(fs.lstatSync(p, { bigint: true }), ino), TIMEOUT));
  }
  setattr(req: Req, ino: number, set: SetAttr, fh: number | undefined): void {
    const p = this.p(ino);
    if (p === undefined) return this.r.err(req, E.ENOENT);
    this.run(req, () => {
      if (set.mode !== undefined) fs.chmodSync(p, set.mode & 0o7777);
      if (set.uid !== undefined || set.gid !== undefined) fs.lchownSync(p, set.uid ?? -1, set.gid ?? -1);
      if (set.size !== undefined) { if (fh !== undefined) fs.ftruncateSync(fh, set.size); else fs.truncateSync(p, set.size); }
      if (set.atime !== undefined || set.mtime !== undefined) {
        const st = fs.lstatSync(p);
        const t = (v: SetAttr['atime'], old: Date): number | Date =>
          v === undefined ? old : v === 'now' ? Date.now() / 1000 : v.sec + v.nsec / 1e9;
        fs.lutimesSync(p, t(set.atime, st.atime), t(set.mtime, st.mtime));
      }
      this.r.attr(req, this.attr(fs.lstatSync(p, { bigint: true }), ino), TIMEOUT);
    });
  }
  readlink(req: Req, ino: number): void {
    const p = this.p(ino);
    if (p === undefined) return this.r.err(req, E.ENOENT);
    this.run(req, () => this.r.readlink(req, fs.readlinkSync(p)));
  }
  mknod(req: Req): void { this.r.err(req, E.ENOSYS); }
  mkdir(req: Req, parent: number, name: string, mode: number): void {
    const p = this.child(req, parent, name);
    if (p !== undefined) this.run(req, () => { fs.mkdirSync(p, { mode }); this.r.entry(req, this.entry(p)); });
  }
  unlink(req: Req, parent: number, name: string): void {
    const p = this.child(req, parent, name);
    if (p !== undefined) this.run(req, () => { fs.unlinkSync(p); this.r.err(req, 0); });
  }
  rmdir(req: Req, parent: number, name: string): void {
    const p = this.child(req, parent, name);
    if (p !== undefined) this.run(req, () => { fs.rmdirSync(p); this.r.err(req, 0); });
  }
  symlink(req: Req, target: string, parent: number, name: string): void {
    const p = this.child(req, parent, name);
    if (p !== undefined) this.run(req, () => { fs.symlinkSync(target, p); this.r.entry(req, this.entry(p)); });
  }
  rename(req: Req, parent: number, name: string, newParent: number, newName: string, flags: number): void {
    if (flags !== 0) return this.r.err(req, E.EINVAL);
    const a = this.child(req, parent, name);
    if (a === undefined) return;
    const b = this.child(req, newParent, newName);
    if (b === undefined) return;
    this.run(req, () => {
      fs.renameSync(a, b);
      for (const n of this.paths.values()) {
        if (n.path === a) n.path = b;
        else if (n.path.startsWith(a + '/')) n.path = b + n.path.slice(a.length);
      }
      this.r.err(req, 0);
    });
  }
  link(req: Req, ino: number, newParent: number, newName: string): void {
    const a = this.p(ino);
    const b = this.child(req, newParent, newName);
    if (b === undefined) return;
    if (a === undefined) return this.r.err(req, E.ENOENT);
    this.run(req, () => { fs.linkSync(a, b); this.r.entry(req, this.entry(b)); });
  }
  open(req: Req, ino: number, flags: number): void {
    const p = this.p(ino);
    if (p === undefined) return this.r.err(req, E.ENOENT);
    const readOnly = (flags & 3) === fs.constants.O_RDONLY;  // 3 = O_ACCMODE
    this.run(req, () => this.r.open(req, {
      fh: fs.openSync(p, flags & ~(fs.constants.O_CREAT | fs.constants.O_EXCL)), keepCache: this.keepCache, noFlush: readOnly,
    }));
  }
  create(req: Req, parent: number, name: string, mode: number, flags: number): void {
    const p = this.child(req, parent, name);
    if (p === undefined) return;
    this.run(req, () => {
      const fd = fs.openSync(p, flags | fs.constants.O_CREAT, mode);
      this.r.create(req, this.entry(p), { fh: fd, keepCache: this.keepCache });
    });
  }
  read(req: Req, _ino: number, size: number, offset: number, fh: number): void {
    this.run(req, () => {
      const buf = size <= this.readBuf.length ? this.readBuf : Buffer.allocUnsafe(size);
      const n = fs.readSync(fh, buf, 0, size, offset);
      this.r.buf(req, buf.subarray(0, n));  // the reply copies the bytes before it returns
    });
  }
  write(req: Req, _ino: number, data: Buffer, offset: number, fh: number): void {
    this.run(req, () => this.r.write(req, fs.writeSync(fh, data, 0, data.length, offset)));
  }
  flush(req: Req): void { this.r.err(req, 0); }
  release(req: Req, _ino: number, fh: number): void { this.run(req, () => { fs.closeSync(fh); this.r.err(req, 0); }); }
  fsync(req: Req, _ino: number, datasync: boolean, fh: number): void {
    this.run(req, () => { if (datasync) fs.fdatasyncSync(fh); else fs.fsyncSync(fh); this.r.err(req, 0); });
  }
  opendir(req: Req, ino: number): void {
    const p = this.p(ino);
    if (p === undefined) return this.r.err(req, E.ENOENT);
    this.run(req, () => {
      const list: DirEntry[] = [{ name: '.', ino, mode: 0o040000, off: 1 }, { name: '..', ino: 1, mode: 0o040000, off: 2 }];
      for (const d of fs.readdirSync(p, { withFileTypes: true })) list.push({ name: d.name, ino: 1, mode: typeBits(d), off: list.length + 1 });
      const fh = this.nextDirFh++;
      this.dirs.set(fh, list);
      this.r.open(req, { fh });
    });
  }
  readdir(req: Req, _ino: number, size: number, offset: number, fh: number): void {
    const l = this.dirs.get(fh);
    if (!l) return this.r.err(req, E.EBADF);
    this.r.dir(req, size, l.slice(offset, offset + 512));
  }
  releasedir(req: Req, _ino: number, fh: number): void { this.dirs.delete(fh); this.r.err(req, 0); }
  fsyncdir(req: Req): void { this.r.err(req, 0); }
  statfs(req: Req, ino: number): void {
    const p = this.p(ino) ?? this.p(1) ?? '/';
    this.run(req, () => {
      const s = fs.statfsSync(p);
      this.r.statfs(req, { bsize: s.bsize, frsize: s.bsize, blocks: s.blocks, bfree: s.bfree, bavail: s.bavail,
        files: s.files, ffree: s.ffree, favail: s.ffree, namemax: 255 });
    });
  }
  setxattr(req: Req): void { this.r.err(req, E.ENOSYS); }
  getxattr(req: Req): void { this.r.err(req, E.ENOSYS); }
  listxattr(req: Req): void { this.r.err(req, E.ENOSYS); }
  removexattr(req: Req): void { this.r.err(req, E.ENOSYS); }
  access(req: Req): void { this.r.err(req, 0); }
  fallocate(req: Req): void { this.r.err(req, E.EOPNOTSUPP); }
  lseek(req: Req): void { this.r.err(req, E.ENOSYS); }
  copyFileRange(req: Req): void { this.r.err(req, E.ENOSYS); }
}

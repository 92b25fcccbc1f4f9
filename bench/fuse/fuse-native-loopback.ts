/**
 * The same loopback as loopback.ts on fuse-native 2.2.6 (libfuse 2.9, path-based, one thread hop per
 * request), for the comparison column of bench/fuse/run.ts. fuse-native is NOT a dependency of homefs:
 * install it outside the repo (`mkdir -p /tmp/fn && cd /tmp/fn && npm init -y && npm install fuse-native@2.2.6`)
 * and point FUSE_NATIVE_DIR at that directory (default /tmp/fn). Handlers use sync fs calls, its best case.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { constants as os } from 'node:os';

type Cb = (...a: unknown[]) => void;
interface FuseCtor { new (mnt: string, ops: Record<string, unknown>, opts: Record<string, unknown>): FuseInst }
interface FuseInst { mount(cb: (err: Error | null) => void): void; unmount(cb: (err: Error | null) => void): void }

export function fuseNativeDir(): string { return process.env['FUSE_NATIVE_DIR'] ?? '/tmp/fn'; }

export function loadFuseNative(): FuseCtor | string {
  const dir = fuseNativeDir();
  try {
    return createRequire(path.join(dir, 'package.json'))('fuse-native') as FuseCtor;
  } catch (e) {
    return `fuse-native not found under ${dir} (${(e as Error).message.split('\n')[0]}); install it there with: mkdir -p ${dir} && cd ${dir} && npm init -y && npm install fuse-native@2.2.6`;
  }
}

function neg(e: unknown): number {
  const c = (e as NodeJS.ErrnoException).code;
  return -((c ? (os.errno as Record<string, number>)[c] : undefined) ?? os.errno.EIO);
}

export function fuseNativeOps(root: string): Record<string, unknown> {
  const P = (p: string): string => path.join(root, p);
  const wrap = (fn: (...a: unknown[]) => unknown) => (...a: unknown[]): void => {
    const cb = a[a.length - 1] as Cb;
    try { const r = fn(...a.slice(0, -1)); cb(0, r); } catch (e) { cb(neg(e)); }
  };
  return {
    getattr: wrap((p) => fs.lstatSync(P(p as string))),
    fgetattr: wrap((_p, fd) => fs.fstatSync(fd as number)),
    readdir: wrap((p) => fs.readdirSync(P(p as string))),
    readlink: wrap((p) => fs.readlinkSync(P(p as string))),
    open: wrap((p, flags) => fs.openSync(P(p as string), flags as number)),
    create: wrap((p, mode) => fs.openSync(P(p as string), 'w', mode as number)),
    release: wrap((_p, fd) => fs.closeSync(fd as number)),
    read: (_p: string, fd: number, buf: Buffer, len: number, pos: number, cb: Cb) => {
      try { cb(fs.readSync(fd, buf, 0, len, pos)); } catch (e) { cb(neg(e)); }
    },
    write: (_p: string, fd: number, buf: Buffer, len: number, pos: number, cb: Cb) => {
      try { cb(fs.writeSync(fd, buf, 0, len, pos)); } catch (e) { cb(neg(e)); }
    },
    truncate: wrap((p, size) => fs.truncateSync(P(p as string), size as number)),
    ftruncate: wrap((_p, fd, size) => fs.ftruncateSync(fd as number, size as number)),
    unlink: wrap((p) => fs.unlinkSync(P(p as string))),
    mkdir: wrap((p, mode) => fs.mkdirSync(P(p as string), { mode: mode as number })),
    rmdir: wrap((p) => fs.rmdirSync(P(p as string))),
    rename: wrap((a, b) => fs.renameSync(P(a as string), P(b as string))),
    symlink: wrap((target, p) => fs.symlinkSync(target as string, P(p as string))),
    link: wrap((a, b) => fs.linkSync(P(a as string), P(b as string))),
    chmod: wrap((p, mode) => fs.chmodSync(P(p as string), mode as number)),
    chown: wrap((p, uid, gid) => fs.lchownSync(P(p as string), uid as number, gid as number)),
    utimens: wrap((p, atime, mtime) => fs.lutimesSync(P(p as string), atime as Date, mtime as Date)),
    fsync: wrap(() => undefined),
    flush: wrap(() => undefined),
    statfs: wrap(() => {
      const s = fs.statfsSync(root);
      return { bsize: s.bsize, frsize: s.bsize, blocks: s.blocks, bfree: s.bfree, bavail: s.bavail, files: s.files, ffree: s.ffree, favail: s.ffree, fsid: 0, flag: 0, namemax: 255 };
    }),
  };
}

/**
 * Loads the compiled addon (native/build/Release/homefs_fuse.node, built by `npm install` through node-gyp)
 * and describes its raw interface. Only src/fuse/ talks to this; everything else uses `Session`.
 *
 * Fixed-size replies pass their fields through one shared Float64Array (`scratch`, layout = the SC_*
 * enum in native/src/hf.h) because typed-array writes from JS are far cheaper than N-API property reads.
 */
import { loadNativeAddon } from '../util/addon.js';
import type { Req } from './types.js';

/** Opaque handle of one mounted session inside the addon. */
export type NativeSession = object;

export interface NativeAddon {
  mount(mountpoint: string, args: string[], ops: object, onUnmounted: (reason: string) => void,
    writebackCache: boolean, maxWrite: number, spinUs: number, handleKillpriv: boolean, idlePollUs: number,
    passthrough: boolean): NativeSession;
  unmount(s: NativeSession, exiting: boolean): void;
  invalInode(s: NativeSession, ino: number, off: number, len: number): number;
  invalEntry(s: NativeSession, parent: number, name: string): number;
  notifyStore(s: NativeSession, ino: number, off: number, data: Uint8Array): number;
  setScratch(a: Float64Array): void;
  replyErr(req: Req, errno: number): void;
  replyNone(req: Req): void;
  replyEntry(req: Req): void;
  /** With scratch[SC.backing] > 0 (a passthrough open): 0 or the send's -errno. */
  replyCreate(req: Req): number | undefined;
  replyAttr(req: Req): void;
  replyReadlink(req: Req, target: string): void;
  replyOpen(req: Req): number | undefined;
  replyWrite(req: Req, count: number): void;
  replyBuf(req: Req, data: Uint8Array): void;
  replyXattrSize(req: Req, size: number): void;
  replyStatfs(req: Req): void;
  replyLseek(req: Req, off: number): void;
  /** names joined by '/', nums = DIR_STRIDE or DIRPLUS_STRIDE doubles per entry; returns entries packed. */
  replyDir(req: Req, size: number, count: number, names: string, nums: Float64Array, plus: boolean): number;
  ctx(req: Req): { uid: number; gid: number; pid: number; umask: number };
  /** WRITE payloads passed as views of a pooled receive buffer / as copies, pool size, most lent at once. */
  writeBufferStats(): { lent: number; copied: number; pool: number; maxLent: number };
  /** The negative xattr cache (native/src/noxattr.c); no-ops on an unmounted session. */
  markNoXattrs(s: NativeSession, ino: number): void;
  revokeNoXattrs(s: NativeSession, ino: number): void;
  /** Requests the binding answered itself in this process, by op. */
  nativeReplies(): NativeReplies;
  /** Requests this process served in the awake wait for the next request (`awake`), and after a wake-up of the loop (`woken`). */
  servedStats(): { awake: number; woken: number };
  /** Why this process's awake waits ended, and the turns that skipped theirs (native/src/session.c `wait_end_names`). */
  waitEnds(): Record<string, number>;
  /** FUSE passthrough (native/src/passthrough.c): a backing file's id (> 0) or -errno; closing one: 0 or -errno. */
  backingOpen(s: NativeSession, fd: number): number;
  backingClose(s: NativeSession, id: number): number;
  /** What the INIT reply granted (all false before it). */
  caps(s: NativeSession): FuseCaps;
}

export interface NativeReplies { getxattr: number; listxattr: number }

/** What the kernel and the INIT reply settled: FUSE passthrough, or the writeback cache (never both). */
export interface FuseCaps { passthrough: boolean; writebackCache: boolean; initialized: boolean }

/** Indexes into the scratch array (must match native/src/hf.h). */
export const SC = {
  ino: 0, mode: 1, nlink: 2, uid: 3, gid: 4, rdev: 5, size: 6, blocks: 7, blksize: 8,
  atime: 9, atimeNs: 10, mtime: 11, mtimeNs: 12, ctime: 13, ctimeNs: 14,
  nodeid: 15, generation: 16, attrTimeout: 17, entryTimeout: 18, fh: 19, openFlags: 20, backing: 21, total: 22,
} as const;
export const DIR_STRIDE = 3;
export const DIRPLUS_STRIDE = 20;

let addon: NativeAddon | undefined;
export const scratch = new Float64Array(SC.total);

export function loadAddon(): NativeAddon {
  if (!addon) {
    addon = loadNativeAddon('homefs_fuse') as NativeAddon;
    addon.setScratch(scratch);
  }
  return addon;
}

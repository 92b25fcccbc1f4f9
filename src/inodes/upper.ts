/**
 * The home's local upper area: one sparse file per inode (`upper/<ino>`) holding the bytes written
 * locally and not yet (or already) sealed. File descriptors are kept open while in use and closed
 * beyond a small pool.
 *
 * Small writes and truncates of an open file are synchronous calls on the main thread: they only touch
 * the page cache, and a trip through the threadpool (two thread wake-ups and an event-loop turn) cost
 * more than the call itself (profile in docs/benchmarks.md, "2. The write path").
 * Opening (creating), reads, large writes, close, unlink and fdatasync, which change directories, may
 * wait for the disk or be throttled, stay on the threadpool; except that a small read whose file name
 * and bytes are in the kernel's caches is done at once (util/files-addon.ts), which never waits for the
 * disk: a log segment after a burst of new files reads thousands of them
 * (docs/decisions/0076-cached-upper-reads.md).
 */
import { close, closeSync, fdatasync, fstatSync, ftruncateSync, mkdirSync, open, openSync, read, truncateSync, write, writeSync, constants, unlink } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { errnoError, filesAddon as io } from '../util/files-addon.js';

const MAX_IDLE_FDS = 256;
const { ENOENT } = osConstants.errno;
/** Writes up to this size go straight to the page cache from the main thread; larger ones use the threadpool. */
const SYNC_WRITE_MAX = 64 * 1024;
/** Reads up to this size are tried at once from the kernel's caches (`readCached`). */
const CACHED_READ_MAX = 64 * 1024;


/**
 * An upper file's size and times as one stat saw them, each time as whole seconds and nanoseconds (exact,
 * where nanoseconds since the epoch in one number are not).
 */
export interface UpperStat {
  size: number;
  mtimeS: number;
  mtimeNsec: number;
  ctimeS: number;
  ctimeNsec: number;
}

/** A time of an UpperStat in nanoseconds since the epoch. */
export function timeNs(s: number, nsec: number): bigint {
  return BigInt(s) * 1_000_000_000n + BigInt(nsec);
}

function p<T>(fn: (cb: (err: NodeJS.ErrnoException | null, v: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

export class UpperFiles {
  private readonly fds = new Map<number, number>();
  private readonly users = new Map<number, number>();
  private readonly opening = new Map<number, Promise<number>>();
  private readonly times = new Float64Array(5);

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  path(ino: number): string {
    return join(this.dir, String(ino));
  }

  /** The inode's fd: at once when it is open, else opened (created if need be) on the threadpool. */
  private fd(ino: number): number | Promise<number> {
    const f = this.fds.get(ino);
    if (f !== undefined) return f;
    let o = this.opening.get(ino);
    if (!o) {
      o = p<number>((cb) => open(this.path(ino), constants.O_RDWR | constants.O_CREAT, 0o600, cb)).then((fd) => {
        this.opening.delete(ino);
        this.fds.set(ino, fd);
        this.trim();
        return fd;
      }, (e: unknown) => {
        this.opening.delete(ino);
        throw e;
      });
      this.opening.set(ino, o);
    }
    return o;
  }

  /**
   * Makes the upper file empty. A new inode's file is created empty and left alone: truncating it (or
   * O_TRUNC) would make ext4 flush it on close (auto_da_alloc), stalling whoever closes it.
   */
  reset(ino: number): Promise<void> {
    return this.using(ino, (fd) => {
      if (fstatSync(fd).size > 0) ftruncateSync(fd, 0);
    });
  }

  /**
   * Creates the upper file of a new inode now, on the main thread (an exclusive create in a directory of
   * our own: a passthrough create waits for it, and the thread pool's round trip costs more than the call).
   * False when a file is already there (the caller then empties it the usual way).
   */
  createNow(ino: number): boolean {
    if (this.fds.has(ino)) return false;
    let fd: number;
    try {
      fd = openSync(this.path(ino), constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
    this.fds.set(ino, fd);
    this.trim();
    return true;
  }

  /** The inode's open fd, opened (created if need be) when it is not: for a backing file (fs/passthrough.ts). */
  openFd(ino: number): Promise<number> {
    return Promise.resolve(this.fd(ino));
  }

  /**
   * The upper file's size and times now, or undefined when it does not exist (synchronous: one fstat, or a
   * stat when no fd is open; by the files addon, which fills a reused array where fs.fstatSync allocates).
   */
  statNow(ino: number): UpperStat | undefined {
    const f = this.fds.get(ino);
    const rc = io().statTimes(f ?? this.path(ino), this.times);
    if (rc < 0) {
      if (rc === -ENOENT) return undefined;
      throw errnoError(-rc, f !== undefined ? 'fstat' : 'stat', this.path(ino));
    }
    const t = this.times;
    return { size: t[0] as number, mtimeS: t[1] as number, mtimeNsec: t[2] as number, ctimeS: t[3] as number, ctimeNsec: t[4] as number };
  }

  /** Keeps the inode's fd open while a FUSE handle holds it. */
  hold(ino: number): void {
    this.users.set(ino, (this.users.get(ino) ?? 0) + 1);
  }

  unhold(ino: number): void {
    const n = (this.users.get(ino) ?? 1) - 1;
    if (n <= 0) this.users.delete(ino);
    else this.users.set(ino, n);
    this.trim();
  }

  /** Closes idle fds beyond the pool's size, down to half of it, in one thread-pool hop. */
  private trim(): void {
    if (this.fds.size <= MAX_IDLE_FDS) return;
    const closing: number[] = [];
    for (const [ino, f] of this.fds) {
      if (this.fds.size <= MAX_IDLE_FDS / 2) break;
      if (this.users.has(ino)) continue;
      this.fds.delete(ino);
      closing.push(f);
    }
    if (closing.length > 0) void io().closeFds(Int32Array.from(closing));
  }

  /**
   * Runs `fn` with the inode's fd, held for the whole call: `trim` never closes a held fd, so no other
   * request's trim can close it (and the number be reused for another file) between the open and the I/O.
   */
  private async using<T>(ino: number, fn: (fd: number) => T | Promise<T>): Promise<T> {
    this.hold(ino);
    try {
      return await fn(await this.fd(ino));
    } finally {
      this.unhold(ino);
    }
  }

  /** Bytes [offset, offset + length) of the inode's upper file, into `into` when given (at least `length` long). */
  read(ino: number, offset: number, length: number, into?: Buffer): Promise<Buffer> {
    const now = length <= CACHED_READ_MAX ? this.readCached(ino, offset, length, into) : undefined;
    if (now) return Promise.resolve(now);
    return this.using(ino, async (fd) => {
      const buf = into && into.length >= length ? into.subarray(0, length) : Buffer.allocUnsafe(length);
      let got = 0;
      while (got < length) {
        const n = await p<number>((cb) => read(fd, buf, got, length - got, offset + got, cb));
        if (n === 0) break;
        got += n;
      }
      // Bytes past the end of the upper file are a hole of the logical file (sparse extension): zeros.
      if (got < length) buf.fill(0, got);
      return buf;
    });
  }

  /**
   * `read` at once, when the file's name and all the bytes asked for are in the kernel's caches; undefined
   * when not (or on any error, or past the end of the upper file): `read` then goes to the thread pool.
   */
  private readCached(ino: number, offset: number, length: number, into?: Buffer): Buffer | undefined {
    let fd = this.fds.get(ino);
    if (fd === undefined) {
      if (this.opening.has(ino)) return undefined;
      const f = io().openCached(this.path(ino));
      if (f < 0) return undefined;
      fd = f;
      this.fds.set(ino, fd);
      this.trim();
      if (this.fds.get(ino) !== fd) return undefined; // (trimmed at once: closed)
    }
    const buf = into && into.length >= length ? into.subarray(0, length) : Buffer.allocUnsafe(length);
    return io().readCached(fd, buf, offset) === length ? buf : undefined;
  }

  write(ino: number, offset: number, data: Uint8Array): Promise<void> {
    return this.using(ino, async (fd) => {
      let done = 0;
      if (data.length <= SYNC_WRITE_MAX) {
        while (done < data.length) done += writeSync(fd, data, done, data.length - done, offset + done);
        return;
      }
      // A large write may be throttled by the kernel's dirty-page limits: never on the main thread.
      while (done < data.length) done += await p<number>((cb) => write(fd, data, done, data.length - done, offset + done, cb));
    });
  }

  /** Truncates the upper file now, on the main thread (a file held open by a FUSE handle has its fd). */
  truncateNow(ino: number, size: number): void {
    const f = this.fds.get(ino);
    if (f !== undefined) ftruncateSync(f, size);
    else truncateSync(this.path(ino), size);
  }

  truncate(ino: number, size: number): Promise<void> {
    return this.using(ino, (fd) => ftruncateSync(fd, size));
  }

  async sync(ino: number): Promise<void> {
    if (!this.fds.has(ino)) return;
    await this.using(ino, (fd) => p<void>((cb) => fdatasync(fd, (e) => cb(e, undefined))));
  }

  async remove(ino: number): Promise<void> {
    await this.opening.get(ino)?.catch(() => undefined);
    const fd = this.fds.get(ino);
    this.fds.delete(ino);
    this.users.delete(ino);
    if (fd !== undefined) await p<void>((cb) => close(fd, (e) => cb(e, undefined)));
    // On the threadpool: unlinking a file whose pages are being written back waits for that I/O.
    await p<void>((cb) => unlink(this.path(ino), (e) => cb(e && e.code !== 'ENOENT' ? e : null, undefined)));
  }

  async closeAll(): Promise<void> {
    const all = [...this.fds.values()];
    this.fds.clear();
    for (const fd of all) closeSync(fd);
  }
}

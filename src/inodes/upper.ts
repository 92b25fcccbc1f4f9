/**
 * The home's local upper area: one sparse file per inode (`upper/<ino>`) holding the bytes written
 * locally and not yet (or already) sealed. File descriptors are kept open while in use and closed
 * beyond a small pool.
 *
 * Opening, writing, truncating and removing are synchronous calls on the main thread: they only touch the page
 * cache, and a trip through the threadpool (two thread wake-ups and an event-loop turn) cost more than
 * the call itself on every small write (profile in docs/benchmarks.md, "Where the time goes"). Reads
 * and fdatasync, which may wait for the disk, stay on the threadpool.
 */
import { close, closeSync, fdatasync, ftruncateSync, mkdirSync, openSync, read, writeSync, constants, unlinkSync } from 'node:fs';
import { join } from 'node:path';

const MAX_IDLE_FDS = 256;

function p<T>(fn: (cb: (err: NodeJS.ErrnoException | null, v: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

export class UpperFiles {
  private readonly fds = new Map<number, number>();
  private readonly users = new Map<number, number>();

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  path(ino: number): string {
    return join(this.dir, String(ino));
  }

  private fd(ino: number, flags = 0): number {
    let f = this.fds.get(ino);
    if (f === undefined) {
      f = openSync(this.path(ino), constants.O_RDWR | constants.O_CREAT | flags, 0o600);
      this.fds.set(ino, f);
      this.trim();
    }
    return f;
  }

  /** Makes the upper file empty: one open with O_TRUNC when it is not open yet, else an ftruncate. */
  async reset(ino: number): Promise<void> {
    if (this.fds.has(ino)) return this.truncate(ino, 0);
    this.fd(ino, constants.O_TRUNC);
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

  private trim(): void {
    if (this.fds.size <= MAX_IDLE_FDS) return;
    for (const [ino, f] of this.fds) {
      if (this.fds.size <= MAX_IDLE_FDS / 2) break;
      if (this.users.has(ino)) continue;
      this.fds.delete(ino);
      close(f, () => undefined);
    }
  }

  async read(ino: number, offset: number, length: number): Promise<Buffer> {
    const fd = this.fd(ino);
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    this.hold(ino); // the pool must not close this fd under a read on the threadpool
    try {
      while (got < length) {
        const n = await p<number>((cb) => read(fd, buf, got, length - got, offset + got, cb));
        if (n === 0) break;
        got += n;
      }
    } finally {
      this.unhold(ino);
    }
    // Bytes past the end of the upper file are a hole of the logical file (sparse extension): zeros.
    if (got < length) buf.fill(0, got);
    return buf;
  }

  async write(ino: number, offset: number, data: Uint8Array): Promise<void> {
    const fd = this.fd(ino);
    let done = 0;
    while (done < data.length) done += writeSync(fd, data, done, data.length - done, offset + done);
  }

  async truncate(ino: number, size: number): Promise<void> {
    ftruncateSync(this.fd(ino), size);
  }

  async sync(ino: number): Promise<void> {
    const fd = this.fds.get(ino);
    if (fd === undefined) return;
    await p<void>((cb) => fdatasync(fd, (e) => cb(e, undefined)));
  }

  async remove(ino: number): Promise<void> {
    const fd = this.fds.get(ino);
    this.fds.delete(ino);
    this.users.delete(ino);
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(this.path(ino));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.fds.values()];
    this.fds.clear();
    for (const fd of all) closeSync(fd);
  }
}

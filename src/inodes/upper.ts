/**
 * The home's local upper area: one sparse file per inode (`upper/<ino>`) holding the bytes written
 * locally and not yet (or already) sealed. File descriptors are kept open while in use and closed
 * beyond a small pool, so the FUSE read/write path costs one positional syscall on the threadpool.
 */
import { close, fdatasync, ftruncate, mkdirSync, open, read, write, constants, unlink } from 'node:fs';
import { join } from 'node:path';

const MAX_IDLE_FDS = 256;

function p<T>(fn: (cb: (err: NodeJS.ErrnoException | null, v: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

export class UpperFiles {
  private readonly fds = new Map<number, Promise<number>>();
  private readonly users = new Map<number, number>();

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  path(ino: number): string {
    return join(this.dir, String(ino));
  }

  private fd(ino: number): Promise<number> {
    let f = this.fds.get(ino);
    if (!f) {
      f = p<number>((cb) => open(this.path(ino), constants.O_RDWR | constants.O_CREAT, 0o600, cb));
      this.fds.set(ino, f);
      f.catch(() => this.fds.delete(ino));
      this.trim();
    }
    return f;
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
      void f.then((fd) => close(fd, () => undefined), () => undefined);
    }
  }

  async read(ino: number, offset: number, length: number): Promise<Buffer> {
    const fd = await this.fd(ino);
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = await p<number>((cb) => read(fd, buf, got, length - got, offset + got, cb));
      if (n === 0) break;
      got += n;
    }
    // Bytes past the end of the upper file are a hole of the logical file (sparse extension): zeros.
    if (got < length) buf.fill(0, got);
    return buf;
  }

  async write(ino: number, offset: number, data: Uint8Array): Promise<void> {
    const fd = await this.fd(ino);
    let done = 0;
    while (done < data.length) {
      done += await p<number>((cb) => write(fd, data, done, data.length - done, offset + done, cb));
    }
  }

  async truncate(ino: number, size: number): Promise<void> {
    const fd = await this.fd(ino);
    await p<void>((cb) => ftruncate(fd, size, (e) => cb(e, undefined)));
  }

  async sync(ino: number): Promise<void> {
    const f = this.fds.get(ino);
    if (!f) return;
    const fd = await f;
    await p<void>((cb) => fdatasync(fd, (e) => cb(e, undefined)));
  }

  async remove(ino: number): Promise<void> {
    const f = this.fds.get(ino);
    this.fds.delete(ino);
    this.users.delete(ino);
    if (f) await f.then((fd) => p<void>((cb) => close(fd, (e) => cb(e, undefined))), () => undefined);
    await p<void>((cb) => unlink(this.path(ino), (e) => cb(e && e.code !== 'ENOENT' ? e : null, undefined)));
  }

  async closeAll(): Promise<void> {
    const all = [...this.fds.values()];
    this.fds.clear();
    await Promise.all(all.map((f) => f.then((fd) => p<void>((cb) => close(fd, (e) => cb(e, undefined))), () => undefined)));
  }
}

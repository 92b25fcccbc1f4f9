/**
 * The files of the on-disk block cache: `<dir>/<kind>s/<h[0:2]>/<hash>`, written atomically (a temp file in
 * the same directory, then a rename; many in one thread-pool hop), so a reader (this daemon or another
 * daemon of the same org sharing the directory) sees either nothing or the whole object: the rename
 * publishes a file only after its last byte was written, and every process on the host sees the same page
 * cache.
 *
 * No write is synced (one fdatasync per cached object cost more than the rest of the insert).
 * Range reads of cached files are served without re-hashing the whole object, so a host crash must never
 * leave a torn file that gets served. That guarantee is kept by trust, not by syncs: a process range-reads
 * without hashing only files it wrote itself or has hashed whole since it started (`IndexEntry.verified`,
 * blockcache.ts). A host crash ends every process that trusted a file; whoever starts afterwards finds the
 * files by scanning and hashes each one whole on its first read, so a file torn by the crash (zeros, a
 * short tail, an empty file) fails its hash, is removed and fetched again. A lost rename only loses a
 * cache entry.
 *
 * Everything here is async (the mount's event loop must never block on disk) and tolerant of files that
 * appear or vanish underneath (ENOENT is an answer, not an error).
 */
import type { FileHandle } from 'node:fs/promises';
import { mkdir, readdir, readFile, rm, stat, unlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { mapLimit } from '../util/concurrency.js';
import { makeDirs } from '../util/mkdirs.js';
import { filesAddon, itemFailure } from '../util/files-addon.js';

export type ObjectKind = 'block' | 'meta';
export const KINDS: readonly ObjectKind[] = ['block', 'meta'];

const HASH = /^[0-9a-f]{64}$/;
const TEMP_PREFIX = '.tmp-';
/** Temp files older than this are leftovers of a crashed writer (a live write takes milliseconds). */
export const STALE_TEMP_MS = 15 * 60_000;

export interface ScannedFile {
  kind: ObjectKind;
  hash: string;
  size: number;
  mtimeMs: number;
}

export function isEnoent(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** A temp file name no other writer uses: this process's id and run, and a count. */
const RUN = randomBytes(4).toString('hex');
let temps = 0;
function tempName(): string {
  return `${TEMP_PREFIX}${process.pid}-${RUN}-${(temps++).toString(36)}`;
}

/** Writes queued in one turn of the event loop go to the thread pool together, up to this many and bytes. */
const BATCH_MAX = 256;
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Atomic writes in batches: each is a temp file created, written and closed, then renamed to its name, all
 * of a batch in one thread-pool hop (util/files-addon.ts), where Node's fs took four per file. A batch
 * goes when the event loop has finished its turn, or at BATCH_MAX writes or BATCH_BYTES (so large blocks
 * still go up in parallel on the pool's threads, and none waits long behind others).
 */
interface QueuedWrite {
  tmp: string;
  final: string;
  data: Buffer;
  done: (failure: NodeJS.ErrnoException | null) => void;
}

class WriteBatches {
  private queue: QueuedWrite[] = [];
  private bytes = 0;

  /** Resolves with the write's failure (Node's fs errno error), or null. */
  write(tmp: string, final: string, data: Buffer): Promise<NodeJS.ErrnoException | null> {
    return new Promise((done) => {
      this.queue.push({ tmp, final, data, done });
      this.bytes += data.length;
      if (this.queue.length >= BATCH_MAX || this.bytes >= BATCH_BYTES) this.send();
      else if (this.queue.length === 1) setImmediate(() => this.send());
    });
  }

  private send(): void {
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    this.bytes = 0;
    const tmps = batch.map((w) => w.tmp);
    filesAddon().writeFiles(tmps, batch.map((w) => w.data), new Float64Array(batch.length * 5).fill(-1), batch.map((w) => w.final)).then(
      (result) => batch.forEach((w, i) => w.done(itemFailure(result, i, w.tmp))),
      (e: unknown) => batch.forEach((w) => w.done(Object.assign(e as Error, { code: 'EIO' }))),
    );
  }
}

export class DiskFiles {
  /** Fan-out directories known to exist (a vanished one is made again when a write into it fails). */
  private readonly made = new Set<string>();
  private readonly batch = new WriteBatches();

  constructor(readonly dir: string) {}

  path(kind: ObjectKind, hash: string): string {
    return join(this.dir, `${kind}s`, hash.slice(0, 2), hash);
  }

  async ensureDirs(): Promise<void> {
    await makeDirs(this.dir, 0o700); // a user-given --cache-dir: never Node's recursive mkdir (util/mkdirs.ts)
    for (const kind of KINDS) await mkdir(join(this.dir, `${kind}s`), { mode: 0o700 }).catch(ignoreExists);
  }

  /** Writes `data` atomically, unsynced (see above); replacing an existing file (same content) is harmless. */
  async write(kind: ObjectKind, hash: string, data: Buffer): Promise<void> {
    const sub = join(this.dir, `${kind}s`, hash.slice(0, 2));
    if (!this.made.has(sub)) {
      await mkdir(sub, { mode: 0o700 }).catch(ignoreExists);
      this.made.add(sub);
    }
    const final = this.path(kind, hash);
    let failure = await this.batch.write(join(sub, tempName()), final, data);
    if (failure && isEnoent(failure) && failure.syscall === 'open') {
      this.made.delete(sub); // the fan-out directory vanished (cache wiped underneath): make it again
      await mkdir(sub, { mode: 0o700 }).catch(ignoreExists);
      this.made.add(sub);
      failure = await this.batch.write(join(sub, tempName()), final, data);
    }
    if (failure) throw failure;
  }

  /** The whole file, or undefined if it does not exist. */
  async readWhole(kind: ObjectKind, hash: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.path(kind, hash));
    } catch (e) {
      if (isEnoent(e)) return undefined;
      throw e;
    }
  }

  async remove(kind: ObjectKind, hash: string): Promise<void> {
    await unlink(this.path(kind, hash)).catch((e: unknown) => {
      if (!isEnoent(e)) throw e;
    });
  }

  /** Sets the file's mtime to `timeMs` (its persisted last use); a vanished file is ignored. */
  async setLastUse(kind: ObjectKind, hash: string, timeMs: number): Promise<void> {
    const t = new Date(timeMs);
    await utimes(this.path(kind, hash), t, t).catch((e: unknown) => {
      if (!isEnoent(e)) throw e;
    });
  }

  /**
   * Lists every cached object with its size and mtime (its last use), asynchronously and with bounded
   * parallelism. Removes stale temp files and ignores anything that is not a cache file.
   */
  async scan(now: number, parallelism = 64): Promise<ScannedFile[]> {
    const out: ScannedFile[] = [];
    for (const kind of KINDS) {
      const kindDir = join(this.dir, `${kind}s`);
      const subs = (await readdir(kindDir).catch(emptyOnEnoent)).filter((s) => /^[0-9a-f]{2}$/.test(s));
      await mapLimit(subs, 8, async (sub) => {
        const subDir = join(kindDir, sub);
        const names = await readdir(subDir).catch(emptyOnEnoent);
        await mapLimit(names, parallelism, async (name) => {
          const p = join(subDir, name);
          let st;
          try {
            st = await stat(p);
          } catch (e) {
            if (isEnoent(e)) return;
            throw e;
          }
          if (name.startsWith(TEMP_PREFIX)) {
            if (now - st.mtimeMs > STALE_TEMP_MS) await rm(p, { force: true });
            return;
          }
          if (!st.isFile() || !HASH.test(name) || name.slice(0, 2) !== sub) return;
          out.push({ kind, hash: name, size: st.size, mtimeMs: st.mtimeMs });
        });
      });
    }
    return out;
  }
}

function ignoreExists(e: unknown): void {
  if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
}

function emptyOnEnoent(e: unknown): string[] {
  if (isEnoent(e)) return [];
  throw e;
}

/** `length` bytes at `offset` of an open file of `size` bytes (fewer at its end, none past it). */
export async function preadRange(fh: FileHandle, size: number, offset: number, length: number): Promise<Buffer> {
  const want = Math.max(0, Math.min(length, size - offset));
  const buf = Buffer.allocUnsafe(want);
  let got = 0;
  while (got < want) {
    const { bytesRead } = await fh.read(buf, got, want - got, offset + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === want ? buf : buf.subarray(0, got);
}

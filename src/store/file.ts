/**
 * `file://` backend: the embedded default store, a directory whose layout mirrors the keys.
 *
 * Writes are atomic and durable: a temp file in the target directory, fsync, rename (or link() for
 * create-if-absent, which fails with EEXIST if the key exists), then fsync of the directory. Readers never
 * see a partial object. Temp files start with `.tmp-` and are never listed.
 */
import { constants } from 'node:fs';
import { access, link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { NotFoundError, StoreUnavailableError, UserError, errorMessage } from '../util/errors.js';
import { ExitCode } from '../util/exit-codes.js';
import { makeDirs } from '../util/mkdirs.js';
import { mapLimit } from '../util/concurrency.js';
import type { ObjectInfo, Store, Uploads } from './store.js';
import { fileUploads } from './file-uploads.js';
import { filesAddon } from '../util/files-addon.js';

const KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export function validateKey(key: string): string {
  if (!KEY.test(key) || key.split('/').some((c) => c === '.' || c === '..' || c.startsWith('.tmp-'))) {
    throw new Error(`invalid store key: ${JSON.stringify(key)}`);
  }
  return key;
}

/** A byte range a caller may ask for: non-negative safe integers. */
export function checkRange(offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new Error(`bad byte range ${offset}+${length}`);
  }
}

export class FileStore implements Store {
  readonly url: string;
  /** Objects written a part at a time (file-uploads.ts). */
  readonly uploads: Uploads;

  constructor(readonly root: string, private readonly parallelism = 32) {
    this.url = `file://${root}`;
    this.uploads = fileUploads({ root, path: (k) => this.path(k), writeTemp: (d, b) => this.writeTemp(d, b), syncDir: (d) => this.syncDir(d) });
  }

  /**
   * Checks that the root is a directory, and with `create` writable, creating it (0700, with its parents)
   * if it is missing. Without `create` a missing root is an error: readers never create a mistyped store.
   */
  async init(create = true): Promise<this> {
    const unusable = (why: string): UserError => new UserError(`cannot open store ${this.url}: ${why}`, ExitCode.storeUnreachable);
    try {
      const st = await stat(this.root);
      if (!st.isDirectory()) throw unusable('it is not a directory');
    } catch (e) {
      if (e instanceof UserError) throw e;
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw unusable(code === 'EACCES' ? 'permission denied' : code === 'ENOTDIR' ? 'a component of its path is not a directory' : errorMessage(e));
      if (!create) throw new UserError(`store ${this.url} does not exist; check --store or HOMEFS_STORE (the first push or mount creates a store)`, ExitCode.storeUnreachable);
      try {
        await makeDirs(this.root, 0o700);
      } catch (e2) {
        throw unusable(errorMessage(e2));
      }
    }
    if (create) {
      try {
        await access(this.root, constants.W_OK | constants.X_OK);
      } catch {
        throw unusable('it is not writable by this user');
      }
    }
    return this;
  }

  private path(key: string): string {
    return join(this.root, validateKey(key));
  }

  async has(keys: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    await mapLimit(keys, this.parallelism, async (k) => {
      try {
        await stat(this.path(k));
        found.add(k);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' && (e as NodeJS.ErrnoException).code !== 'ENOTDIR') throw e;
      }
    });
    return found;
  }

  async get(key: string): Promise<Buffer> {
    try {
      return await readFile(this.path(key));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new NotFoundError(key);
      throw e;
    }
  }

  readAtOnce(key: string, length: number): Buffer | undefined {
    if (length <= 0) return undefined;
    const buf = Buffer.allocUnsafeSlow(length + 1); // (one byte more: a longer object reads more than `length`)
    return filesAddon().readFileCached(this.path(key), buf, 0) === length ? buf.subarray(0, length) : undefined;
  }

  /** Writes a durable temp file next to `dest` and returns its path. */
  private async writeTemp(dest: string, data: Buffer): Promise<string> {
    const dir = dirname(dest);
    const tmp = join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
    let fh;
    try {
      fh = await open(tmp, flags, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      // Create the key's directories, but never the store root itself: a vanished root (unmounted
      // disk, moved directory) is an unavailable store, not an empty one to start over in.
      try {
        await stat(this.root);
      } catch {
        throw new StoreUnavailableError(this.url, 'its directory is gone');
      }
      await mkdir(dir, { recursive: true, mode: 0o700 });
      fh = await open(tmp, flags, 0o600);
    }
    try {
      await fh.writeFile(data);
      await fh.sync();
    } catch (e) {
      await fh.close();
      await rm(tmp, { force: true });
      throw e;
    }
    await fh.close();
    return tmp;
  }

  private async syncDir(dir: string): Promise<void> {
    const fh = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    checkRange(offset, length);
    let fh;
    try {
      fh = await open(this.path(key), 'r');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new NotFoundError(key);
      throw e;
    }
    try {
      const buf = Buffer.allocUnsafe(length);
      let got = 0;
      while (got < length) {
        const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return buf.subarray(0, got);
    } finally {
      await fh.close();
    }
  }

  async put(key: string, data: Buffer): Promise<void> {
    const dest = this.path(key);
    const tmp = await this.writeTemp(dest, data);
    try {
      await rename(tmp, dest);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    await this.syncDir(dirname(dest));
  }

  async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    const dest = this.path(key);
    const tmp = await this.writeTemp(dest, data);
    try {
      await link(tmp, dest);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
    await this.syncDir(dirname(dest));
    return true;
  }

  async *list(prefix: string, limit = Infinity): AsyncIterable<ObjectInfo> {
    const slash = prefix.lastIndexOf('/');
    const dirKey = slash >= 0 ? prefix.slice(0, slash) : '';
    const namePrefix = prefix.slice(slash + 1);
    let left = limit;
    const walk = async function* (this: FileStore, key: string, filter: string): AsyncGenerator<ObjectInfo> {
      let names: string[];
      try {
        names = await readdir(key ? join(this.root, key) : this.root);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return;
        throw e;
      }
      names.sort();
      for (const name of names) {
        if (left <= 0) return;
        if (!name.startsWith(filter) || name.startsWith('.tmp-')) continue;
        const childKey = key ? `${key}/${name}` : name;
        let st;
        try {
          st = await stat(join(this.root, childKey));
        } catch {
          continue; // deleted while listing
        }
        if (st.isDirectory()) {
          yield* walk.call(this, childKey, '');
        } else {
          left--;
          yield { key: childKey, size: st.size, mtimeMs: st.mtimeMs };
        }
      }
    };
    if (dirKey && !KEY.test(dirKey)) return;
    yield* walk.call(this, dirKey, namePrefix);
  }

  async delete(key: string): Promise<void> {
    await unlink(this.path(key)).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
  }

  async close(): Promise<void> {}
}

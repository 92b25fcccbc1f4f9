/**
 * Multipart uploads for the `file://` store (store.ts `Uploads`), so that an object can be written a part at
 * a time without being held whole in memory (the wake pack at sleep: store/parted.ts).
 *
 * An upload is a directory `.tmp-uploads/<id>/` under the store root (names starting with `.tmp-` are never
 * listed as keys), holding `key` (the key it is for) and one file per part, each written durably and
 * renamed into place (a part written again replaces the earlier). `complete` copies the parts in order into
 * a temp file next to the key, syncs it and renames it over the key: readers see the old object or the whole
 * new one. `list` reports uploads left behind by a killed writer, which gc aborts once they are old.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { NotFoundError } from '../util/errors.js';
import type { PendingUpload, Uploads } from './store.js';

const DIR = '.tmp-uploads';
/** `complete` copies parts through a buffer of this size. */
const COPY_BYTES = 1024 * 1024;

/** What the uploads need of their store: its root, a key's path (validated), durable writes. */
export interface FileUploadsHost {
  readonly root: string;
  path(key: string): string;
  /** Writes a durable temp file next to `dest`; returns its path. */
  writeTemp(dest: string, data: Buffer): Promise<string>;
  syncDir(dir: string): Promise<void>;
}

export function fileUploads(host: FileUploadsHost): Uploads {
  const dirOf = (id: string): string => {
    if (!/^[0-9a-f]{16}$/.test(id)) throw new NotFoundError(`upload ${id}`);
    return join(host.root, DIR, id);
  };
  const check = async (key: string, id: string): Promise<string> => {
    const dir = dirOf(id);
    let owner: string;
    try {
      owner = await readFile(join(dir, 'key'), 'utf8');
    } catch {
      throw new NotFoundError(`${key} (upload ${id})`);
    }
    if (owner !== key) throw new NotFoundError(`${key} (upload ${id})`);
    return dir;
  };
  return {
    minPartBytes: 5 * 1024 * 1024, // as S3: a writer that works here works there
    start: async (key) => {
      host.path(key); // validates it
      const id = randomBytes(8).toString('hex');
      const dir = dirOf(id);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await writeFile(join(dir, 'key'), key, { mode: 0o600 });
      return id;
    },
    part: async (key, id, n, data) => {
      if (!Number.isSafeInteger(n) || n < 1) throw new Error(`bad part number ${n}`);
      const dir = await check(key, id);
      const dest = join(dir, String(n));
      await rename(await host.writeTemp(dest, data), dest);
      return `${n}-${data.length}`;
    },
    complete: async (key, id, etags) => {
      const dir = await check(key, id);
      const dest = host.path(key);
      const tmp = await host.writeTemp(dest, Buffer.alloc(0));
      const fh = await open(tmp, constants.O_WRONLY | constants.O_APPEND);
      const buf = Buffer.allocUnsafe(COPY_BYTES); // parts are copied through one small buffer, not read whole
      try {
        for (let i = 0; i < etags.length; i++) {
          const part = await open(join(dir, String(i + 1)), 'r').catch(() => undefined);
          try {
            const size = part ? (await part.stat()).size : -1;
            if (!part || etags[i] !== `${i + 1}-${size}`) throw new Error(`upload ${id}: part ${i + 1} is not the one uploaded`);
            for (let at = 0; at < size;) {
              const { bytesRead } = await part.read(buf, 0, Math.min(buf.length, size - at), at);
              if (bytesRead === 0) throw new Error(`upload ${id}: part ${i + 1} ended early`);
              await fh.write(buf, 0, bytesRead);
              at += bytesRead;
            }
          } finally {
            await part?.close();
          }
        }
        await fh.sync();
        await fh.close();
        await rename(tmp, dest);
      } catch (e) {
        await fh.close().catch(() => undefined);
        await rm(tmp, { force: true });
        throw e;
      }
      await host.syncDir(dirname(dest));
      await rm(dir, { recursive: true, force: true });
    },
    abort: async (_key, id) => {
      await rm(dirOf(id), { recursive: true, force: true });
    },
    list: async (prefix) => {
      const out: PendingUpload[] = [];
      let ids: string[];
      try {
        ids = await readdir(join(host.root, DIR));
      } catch {
        return out;
      }
      for (const id of ids) {
        try {
          const key = await readFile(join(host.root, DIR, id, 'key'), 'utf8');
          if (key.startsWith(prefix)) out.push({ key, id, startedMs: (await stat(join(host.root, DIR, id))).mtimeMs });
        } catch {
          /* being completed or aborted */
        }
      }
      return out;
    },
  };
}

/**
 * In-memory Store for tests and benchmarks: the same contract as the real backends, nothing durable.
 */
import { NotFoundError } from '../util/errors.js';
import type { ObjectInfo, Store, Uploads } from './store.js';

export class MemoryStore implements Store {
  readonly url = 'memory://';
  private readonly objects = new Map<string, { data: Buffer; mtimeMs: number }>();
  /** Uploads in progress: key and parts by number. */
  private readonly pending = new Map<string, { key: string; parts: Map<number, Buffer>; startedMs: number }>();
  private uploadIds = 0;
  /** As S3's: parts by number, every part but the last at least `minPartBytes` (checked at complete). */
  readonly uploads: Uploads;

  constructor(opts: { minPartBytes?: number } = {}) {
    const upload = (key: string, id: string) => {
      const u = this.pending.get(id);
      if (!u || u.key !== key) throw new NotFoundError(`${key} (upload ${id})`);
      return u;
    };
    this.uploads = {
      minPartBytes: opts.minPartBytes ?? 5 * 1024 * 1024,
      start: async (key) => {
        const id = `u${++this.uploadIds}`;
        this.pending.set(id, { key, parts: new Map(), startedMs: Date.now() });
        return id;
      },
      part: async (key, id, n, data) => {
        upload(key, id).parts.set(n, Buffer.from(data));
        return `"${id}-${n}-${data.length}"`;
      },
      complete: async (key, id, etags) => {
        const u = upload(key, id);
        const parts = etags.map((etag, i) => {
          const p = u.parts.get(i + 1);
          if (!p || etag !== `"${id}-${i + 1}-${p.length}"`) throw new Error(`upload ${id}: part ${i + 1} is not the one uploaded`);
          if (i < etags.length - 1 && p.length < this.uploads.minPartBytes) throw new Error(`upload ${id}: part ${i + 1} of ${p.length} bytes is too small`);
          return p;
        });
        this.pending.delete(id);
        this.objects.set(key, { data: Buffer.concat(parts), mtimeMs: Date.now() });
      },
      abort: async (_key, id) => {
        this.pending.delete(id);
      },
      list: async (prefix) => [...this.pending].filter(([, u]) => u.key.startsWith(prefix)).map(([id, u]) => ({ key: u.key, id, startedMs: u.startedMs })),
    };
  }

  /** Uploads started and neither completed nor aborted (tests). */
  get uploadsPending(): number {
    return this.pending.size;
  }

  async has(keys: readonly string[]): Promise<Set<string>> {
    return new Set(keys.filter((k) => this.objects.has(k)));
  }

  async get(key: string): Promise<Buffer> {
    const o = this.objects.get(key);
    if (!o) throw new NotFoundError(key);
    return Buffer.from(o.data);
  }

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    return Buffer.from((await this.get(key)).subarray(offset, offset + length));
  }

  async put(key: string, data: Buffer): Promise<void> {
    this.objects.set(key, { data: Buffer.from(data), mtimeMs: Date.now() });
  }

  async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    if (this.objects.has(key)) return false;
    this.objects.set(key, { data: Buffer.from(data), mtimeMs: Date.now() });
    return true;
  }

  async *list(prefix: string, limit = Infinity): AsyncIterable<ObjectInfo> {
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
    for (const key of keys.slice(0, limit === Infinity ? undefined : limit)) {
      const o = this.objects.get(key);
      if (o) yield { key, size: o.data.length, mtimeMs: o.mtimeMs };
    }
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key);
  }

  async close(): Promise<void> {}

  /** Test hook: replace an object's bytes without any checks (simulates corruption). */
  corrupt(key: string, data: Buffer): void {
    const o = this.objects.get(key);
    if (o) o.data = data;
  }
}

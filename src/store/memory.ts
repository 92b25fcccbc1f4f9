/**
 * In-memory Store for tests and benchmarks: the same contract as the real backends, nothing durable.
 */
import { NotFoundError } from '../util/errors.js';
import type { ObjectInfo, Store } from './store.js';

export class MemoryStore implements Store {
  readonly url = 'memory://';
  private readonly objects = new Map<string, { data: Buffer; mtimeMs: number }>();

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

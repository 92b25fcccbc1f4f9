/**
 * Store wrappers for the ops tests: one that records every call (to prove fork copies nothing), and one
 * that lets a test run code at a chosen point of another operation (a HEAD advance held at a gate, a hook
 * before a listing), which is how a seal "in flight" during gc is made deterministic.
 */
import type { ObjectInfo, Store } from '../../src/store/store.js';

export class RecordingStore implements Store {
  readonly calls: Array<{ op: string; key: string }> = [];
  constructor(readonly inner: Store) {}
  get url(): string {
    return this.inner.url;
  }
  has(keys: readonly string[]): Promise<Set<string>> {
    for (const k of keys) this.calls.push({ op: 'has', key: k });
    return this.inner.has(keys);
  }
  get(key: string): Promise<Buffer> {
    this.calls.push({ op: 'get', key });
    return this.inner.get(key);
  }
  getRange(key: string, offset: number, length: number): Promise<Buffer> {
    this.calls.push({ op: 'get', key });
    return this.inner.getRange(key, offset, length);
  }
  put(key: string, data: Buffer): Promise<void> {
    this.calls.push({ op: 'put', key });
    return this.inner.put(key, data);
  }
  putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    this.calls.push({ op: 'putIfAbsent', key });
    return this.inner.putIfAbsent(key, data);
  }
  async *list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    this.calls.push({ op: 'list', key: prefix });
    yield* this.inner.list(prefix, limit);
  }
  delete(key: string): Promise<void> {
    this.calls.push({ op: 'delete', key });
    return this.inner.delete(key);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export interface Hooks {
  /** Called (and awaited) before a putIfAbsent of a key matching `gateKey`. */
  beforePutIfAbsent?: (key: string) => Promise<void>;
  /** Called (and awaited) once before the first listing whose prefix matches. */
  beforeList?: { match: RegExp; run: () => Promise<void> };
}

export class HookedStore implements Store {
  private listHookDone = false;
  constructor(readonly inner: Store, readonly hooks: Hooks) {}
  get url(): string {
    return this.inner.url;
  }
  has(keys: readonly string[]): Promise<Set<string>> {
    return this.inner.has(keys);
  }
  get(key: string): Promise<Buffer> {
    return this.inner.get(key);
  }
  getRange(key: string, offset: number, length: number): Promise<Buffer> {
    return this.inner.getRange(key, offset, length);
  }
  put(key: string, data: Buffer): Promise<void> {
    return this.inner.put(key, data);
  }
  async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    await this.hooks.beforePutIfAbsent?.(key);
    return this.inner.putIfAbsent(key, data);
  }
  async *list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    const h = this.hooks.beforeList;
    if (h && !this.listHookDone && h.match.test(prefix)) {
      this.listHookDone = true;
      await h.run();
    }
    yield* this.inner.list(prefix, limit);
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export function gate(): { wait: Promise<void>; open: () => void; reached: Promise<void>; arrive: () => void } {
  let open = (): void => undefined;
  let arrive = (): void => undefined;
  const wait = new Promise<void>((r) => (open = r));
  const reached = new Promise<void>((r) => (arrive = r));
  return { wait, open, reached, arrive };
}

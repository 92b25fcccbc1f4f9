/**
 * Store wrappers for the ops tests: one that records every call (to prove fork copies nothing), and one
 * that lets a test run code at a chosen point of another operation (a HEAD advance held at a gate, a hook
 * before a listing), which is how a seal "in flight" during gc is made deterministic.
 */
import { ForwardingStore } from '../../src/store/forwarding.js';
import type { ObjectInfo, Store } from '../../src/store/store.js';

export class RecordingStore extends ForwardingStore {
  readonly calls: Array<{ op: string; key: string }> = [];
  override has(keys: readonly string[]): Promise<Set<string>> {
    for (const k of keys) this.calls.push({ op: 'has', key: k });
    return this.inner.has(keys);
  }
  override get(key: string): Promise<Buffer> {
    this.calls.push({ op: 'get', key });
    return this.inner.get(key);
  }
  override getRange(key: string, offset: number, length: number): Promise<Buffer> {
    this.calls.push({ op: 'get', key });
    return this.inner.getRange(key, offset, length);
  }
  override put(key: string, data: Buffer): Promise<void> {
    this.calls.push({ op: 'put', key });
    return this.inner.put(key, data);
  }
  override putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    this.calls.push({ op: 'putIfAbsent', key });
    return this.inner.putIfAbsent(key, data);
  }
  override async *list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    this.calls.push({ op: 'list', key: prefix });
    yield* this.inner.list(prefix, limit);
  }
  override delete(key: string): Promise<void> {
    this.calls.push({ op: 'delete', key });
    return this.inner.delete(key);
  }
}

export interface Hooks {
  /** Called (and awaited) before a putIfAbsent of a key matching `gateKey`. */
  beforePutIfAbsent?: (key: string) => Promise<void>;
  /** Called (and awaited) once before the first listing whose prefix matches. */
  beforeList?: { match: RegExp; run: () => Promise<void> };
}

export class HookedStore extends ForwardingStore {
  private listHookDone = false;
  constructor(inner: Store, readonly hooks: Hooks) {
    super(inner);
  }
  override async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    await this.hooks.beforePutIfAbsent?.(key);
    return this.inner.putIfAbsent(key, data);
  }
  override async *list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    const h = this.hooks.beforeList;
    if (h && !this.listHookDone && h.match.test(prefix)) {
      this.listHookDone = true;
      await h.run();
    }
    yield* this.inner.list(prefix, limit);
  }
}

export function gate(): { wait: Promise<void>; open: () => void; reached: Promise<void>; arrive: () => void } {
  let open = (): void => undefined;
  let arrive = (): void => undefined;
  const wait = new Promise<void>((r) => (open = r));
  const reached = new Promise<void>((r) => (arrive = r));
  return { wait, open, reached, arrive };
}

/**
 * A store whose writes wait for a gate: reads go through at once, every write (put, putIfAbsent, delete)
 * first waits for `gate` and fails with its error if it rejects. A mount opens its store this way so that
 * its first reads (lease, HEAD, snapshot) overlap the create-if-absent probe (probe.ts) while nothing is
 * written before the probe has confirmed that HEAD can advance safely on this store (but for the lease,
 * through `ungated`: it advances nothing, and a wake whose probe fails releases it). `close` waits for
 * `settled` (the probe's own clean-up) before closing the store under it.
 */
import { ForwardingStore } from './forwarding.js';
import type { Store } from './store.js';

export class GatedStore extends ForwardingStore {
  constructor(inner: Store, readonly gate: Promise<void>, private readonly settled: Promise<void> = gate) {
    super(inner);
    gate.catch(() => undefined); // reported by the writes (and whoever awaits the gate), not as unhandled
    settled.catch(() => undefined);
  }

  /** The store without the gate, for the one write that may precede the probe: the lease's (home/claim.ts). */
  get ungated(): Store {
    return this.inner;
  }

  override async put(key: string, data: Buffer): Promise<void> {
    await this.gate;
    return this.inner.put(key, data);
  }

  override async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    await this.gate;
    return this.inner.putIfAbsent(key, data);
  }

  override async delete(key: string): Promise<void> {
    await this.gate;
    return this.inner.delete(key);
  }

  override async close(): Promise<void> {
    await this.settled.catch(() => undefined);
    await this.inner.close();
  }
}

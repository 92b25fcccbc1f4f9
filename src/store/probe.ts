/**
 * Checks that a store enforces create-if-absent before anyone advances a HEAD on it. HEAD safety rests on
 * one primitive: of two `putIfAbsent` calls on one key, the second returns false. A service that ignores
 * `If-None-Match: *` (some S3 emulators, old gateways) would let two writers both "win" a generation and
 * silently lose one history. The probe writes a fresh key under `keyPrefix` twice and deletes it afterwards.
 * The default `_probe/` lies outside every org (org names cannot start with `_`); credentials scoped to one
 * org's prefix (docs/operations.md) may only write under `<org>/`, so callers that know the org pass
 * `<org>/_probe/`.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { UserError } from '../util/errors.js';
import type { Store } from './store.js';

export const PROBE_PREFIX = '_probe/';

export async function assertCreateIfAbsent(store: Store, keyPrefix = PROBE_PREFIX): Promise<void> {
  const p = startProbe(store, keyPrefix);
  await p.settled;
  await p.confirmed;
}

/**
 * The probe, started: `confirmed` resolves once the store has shown it enforces create-if-absent (the two
 * conditional writes), and rejects with the one-line reason otherwise; `settled` once the probe's key is
 * deleted again too (it never rejects). A caller may go on while the delete is in flight.
 */
export function startProbe(store: Store, keyPrefix = PROBE_PREFIX): { confirmed: Promise<void>; settled: Promise<void> } {
  const id = `${hostname().replace(/[^A-Za-z0-9._-]/g, '_')}-${process.pid}-${randomBytes(8).toString('hex')}`;
  const key = `${keyPrefix}${id}`;
  const confirmed = (async () => {
    const first = await store.putIfAbsent(key, Buffer.from(`homefs create-if-absent probe 1 ${id}\n`));
    if (!first) {
      throw new UserError(`store ${store.url}: create-if-absent probe found its fresh key ${key} already present; the store does not behave as homefs needs, so homefs refuses to advance HEAD on it`);
    }
    const second = await store.putIfAbsent(key, Buffer.from(`homefs create-if-absent probe 2 ${id}\n`));
    if (second) {
      throw new UserError(`store ${store.url} does not enforce create-if-absent (a second conditional write with If-None-Match: * replaced an existing object); homefs refuses to advance HEAD on it`);
    }
  })();
  const settled = confirmed.then(() => undefined, () => undefined).then(() => store.delete(key)).catch(() => undefined);
  return { confirmed, settled };
}

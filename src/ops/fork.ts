/**
 * Fork: a new home whose HEAD is an existing snapshot. O(1) in the size of the home: it reads the source
 * snapshot, writes one small snapshot object for the new home (same root tree, parent = the source
 * snapshot, reason "fork") and creates the new home's generation 0. No tree or block is read or copied;
 * blocks dedupe within the org, so the fork shares everything until one side changes it. On a store over
 * the network the source's namespace pack is copied too, when it is of the forked root (a hint for the new
 * home's first wake; transfer/nspack.ts).
 */
import { commitSnapshot } from '../format/commit.js';
import { GcFence, type FenceOptions } from '../format/gcfence.js';
import { readHead } from '../format/heads.js';
import { copyNsPack } from '../transfer/nspack.js';
import { ObjectStore } from '../format/objects.js';
import { assertSnapshotComplete } from './refs.js';
import { resolveHomeSnapshot } from '../transfer/walk.js';
import { segmentObjects } from '../fsynclog/homelog.js';
import { mapLimit } from '../util/concurrency.js';
import { defaults } from '../config.js';
import type { Store } from '../store/store.js';
import { HeadConflictError, UserError } from '../util/errors.js';
import type { HomeRef } from '../util/names.js';

export interface ForkResult {
  source: string;
  /** The snapshot forked from. */
  from: string;
  target: string;
  /** The new home's snapshot (generation 0). */
  snapshot: string;
  gen: number;
  /** Wall time of the store work, ms. */
  ms: number;
}

export interface FenceOption {
  /** gc fence timing (format/gcfence.ts); tests shorten it. */
  fence?: Partial<FenceOptions>;
}

export async function forkHome(store: Store, src: HomeRef, dst: HomeRef, opts: FenceOption = {}): Promise<ForkResult> {
  if (src.org !== dst.org) throw new UserError(`cannot fork across orgs (${src.org} → ${dst.org}): blocks never dedupe across orgs; use pull and push`);
  if (src.home === dst.home) throw new UserError(`cannot fork ${src.org}/${src.home} onto itself`);
  const t0 = performance.now();
  const objects = new ObjectStore(store, src.org);
  const gc = new GcFence(store, src.org, opts.fence);
  const since = await gc.observe(); // before relying on the source snapshot (gcfence.ts)
  const [source, existing] = await Promise.all([resolveHomeSnapshot(objects, src.home, src.snapshot), readHead(store, dst.org, dst.home)]);
  if (existing) throw new UserError(`home ${dst.org}/${dst.home} already exists (generation ${existing.gen}); fork into a new name`);
  const from = source.snapshot;
  // What the source fsync'd since its HEAD is only in its log: its objects become ordinary ones first.
  if (source.segment) await mapLimit([...segmentObjects(src.org, source.segment)], defaults.storeParallelism, ([key, data]) => store.put(key, data));
  const snap = await objects.getSnapshot(from);
  const { snapshot, gen } = await commitSnapshot(objects, dst.home, null, { root: snap.root, parent: from, stats: snap.stats, reason: 'fork' }, {
    fence: { gc, since, reverify: () => assertSnapshotComplete(objects, from, `fork of ${src.org}/${src.home}`) },
  }).catch((e: unknown) => {
    throw e instanceof HeadConflictError ? new UserError(`home ${dst.org}/${dst.home} was created by someone else during the fork`) : e;
  });
  await copyNsPack(store, src.org, src.home, dst.home, snap.root); // a hint for the new home's first wake
  return { source: `${src.org}/${src.home}`, from, target: `${dst.org}/${dst.home}`, snapshot, gen, ms: performance.now() - t0 };
}

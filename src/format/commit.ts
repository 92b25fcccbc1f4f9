/**
 * Committing a snapshot: the one way a new snapshot becomes a home's HEAD. Push, seal, fork and rollback
 * all end here, so the order "every referenced object first, then the snapshot, then HEAD" and any check
 * that must run right before HEAD is written live in one place.
 *
 * The caller has written everything the snapshot references (blocks, trees), or passes the writes still in
 * flight as `pending`. This writes the snapshot object (in parallel with those writes and the gc fence's
 * last look) and then creates HEAD generation `fromGen + 1` with create-if-absent (heads.ts), under the
 * gc fence when one is given (gcfence.ts: waits out an overlapping gc and re-verifies first). A lost race
 * leaves HEAD unchanged, records the snapshot under `conflicts/` and throws HeadConflictError.
 */
import { hostname } from 'node:os';
import type { RootAttrs, SnapshotStats } from '../model/tree.js';
import type { EpochState, GcFence } from './gcfence.js';
import { advanceHead } from './heads.js';
import type { ObjectStore } from './objects.js';

/** What the caller decides about a new snapshot; home, time and host are filled in here. */
export interface NewSnapshot {
  /** Hash of the root tree (already in the store). */
  root: string;
  /** The snapshot this one follows (null for a home's first). */
  parent: string | null;
  stats: SnapshotStats;
  /** Why it was made: push, fsync, idle, sync, sleep, fork, rollback, conflict... */
  reason: string;
  rootAttrs?: RootAttrs;
  /** Defaults to this machine's hostname. */
  host?: string;
  /** What readers of the home must know (snapshot version 2), e.g. `['log']` for a mounted home. */
  features?: string[];
  /** Log segments written while this snapshot was sealed (Snapshot.logTail; needs feature `log-tail`). */
  logTail?: { gen: number; seq: number };
}

export interface CommitOptions {
  /**
   * The org's gc fence, the caller's look at it from before it relied on any existing object, and how to
   * make everything the snapshot references present again after an overlapping gc (or throw to give up).
   */
  fence?: { gc: GcFence; since: EpochState; reverify: () => Promise<void> };
  /**
   * Writes of objects the snapshot references that are still in flight. The snapshot object and the gc
   * fence's look before HEAD go up in parallel with them; HEAD is written only after all have landed.
   */
  pending?: Promise<unknown>;
}

export interface Committed {
  snapshot: string;
  gen: number;
  /** The fence's look right before HEAD was written (a safe `since` for this process's next commit). */
  observed: EpochState | null;
}

/**
 * Writes snapshot `s` of `home` (in `objects.org`) and makes it HEAD generation `fromGen + 1` (0 when
 * `fromGen` is null). Throws HeadConflictError if that generation was taken by another writer.
 */
export async function commitSnapshot(objects: ObjectStore, home: string, fromGen: number | null, s: NewSnapshot, opts: CommitOptions = {}): Promise<Committed> {
  const f = opts.fence;
  // One round trip for everything but HEAD: the snapshot, the pending objects and the fence's look (C3).
  const [snapshot, first] = await Promise.all([
    objects.putSnapshot({
      root: s.root, parent: s.parent, home: `${objects.org}/${home}`, time: new Date().toISOString(), host: s.host ?? hostname(),
      stats: s.stats, reason: s.reason, ...(s.rootAttrs ? { rootAttrs: s.rootAttrs } : {}), ...(s.features ? { features: s.features } : {}), ...(s.logTail ? { logTail: s.logTail } : {}),
    }),
    f ? f.gc.recheck(f.since) : Promise.resolve(undefined),
    opts.pending,
  ]);
  const write = (): Promise<number> => advanceHead(objects.store, objects.org, home, fromGen, snapshot);
  if (!f) return { snapshot, gen: await write(), observed: null };
  const { result, observed } = await f.gc.commit(f.since, f.reverify, write, first);
  return { snapshot, gen: result, observed };
}

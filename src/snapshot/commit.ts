/**
 * Committing a snapshot: the one way a new snapshot becomes a home's HEAD. Push, seal, fork and rollback
 * all end here, so the order "every referenced object first, then the snapshot, then HEAD" and any check
 * that must run right before HEAD is written live in one place.
 *
 * The caller has already written everything the snapshot references (blocks, trees). This writes the
 * snapshot object and creates HEAD generation `fromGen + 1` with create-if-absent (heads.ts), under the
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
}

export interface CommitOptions {
  /**
   * The org's gc fence, the caller's look at it from before it relied on any existing object, and how to
   * make everything the snapshot references present again after an overlapping gc (or throw to give up).
   */
  fence?: { gc: GcFence; since: EpochState; reverify: () => Promise<void> };
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
  const snapshot = await objects.putSnapshot({
    root: s.root, parent: s.parent, home: `${objects.org}/${home}`, time: new Date().toISOString(), host: s.host ?? hostname(),
    stats: s.stats, reason: s.reason, ...(s.rootAttrs ? { rootAttrs: s.rootAttrs } : {}),
  });
  const write = (): Promise<number> => advanceHead(objects.store, objects.org, home, fromGen, snapshot);
  const f = opts.fence;
  if (!f) return { snapshot, gen: await write(), observed: null };
  const { result, observed } = await f.gc.commit(f.since, f.reverify, write);
  return { snapshot, gen: result, observed };
}

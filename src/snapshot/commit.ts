/**
 * Committing a snapshot: the one way a new snapshot becomes a home's HEAD. Push, seal, fork and rollback
 * all end here, so the order "every referenced object first, then the snapshot, then HEAD" and any check
 * that must run right before HEAD is written live in one place.
 *
 * The caller has already written everything the snapshot references (blocks, trees). This writes the
 * snapshot object, runs `beforeHead` (if given), and creates HEAD generation `fromGen + 1` with
 * create-if-absent (heads.ts). A lost race leaves HEAD unchanged, records the snapshot under
 * `conflicts/` and throws HeadConflictError.
 */
import { hostname } from 'node:os';
import type { RootAttrs, SnapshotStats } from '../model/tree.js';
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
   * Runs after the snapshot object is written and immediately before HEAD is created. Throwing aborts the
   * commit: HEAD is not touched and the error propagates (the snapshot stays as a collectable orphan).
   * This is the hook for checks that must hold at the moment HEAD moves, e.g. a gc epoch fence that
   * verifies no gc swept objects this commit relies on since the caller started.
   */
  beforeHead?: () => Promise<void>;
}

export interface Committed {
  snapshot: string;
  gen: number;
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
  await opts.beforeHead?.();
  const gen = await advanceHead(objects.store, objects.org, home, fromGen, snapshot);
  return { snapshot, gen };
}

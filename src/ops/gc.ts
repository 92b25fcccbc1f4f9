/**
 * Garbage collection of one org, mark and sweep:
 *
 *  1. retention: each home keeps its newest `keep` generations (history.ts; not in a dry run);
 *  2. mark: every retained generation, every conflict record and the live log segment of every home of the org, walked down to
 *     its trees and blocks (refs.ts, memoized by tree hash);
 *  3. sweep candidates: objects under `<org>/blocks/` and `<org>/meta/` that are unmarked AND older than the
 *     grace period (default 24 h) by their store mtime;
 *  4. re-mark: HEADs and conflicts are read again and any root that appeared meanwhile (a seal or fork that
 *     committed during the gc) is walked; what it references leaves the candidate list;
 *  5. delete the candidates, each after a last look at its mtime (one rewritten since the scan stays).
 *
 * Why this is safe while other hosts seal, fork or push: the whole run sits inside a gc epoch
 * (format/gcfence.ts). gc announces the epoch, waits `fence.waitMs` so that every commit that did not see
 * the announcement has landed before the mark reads HEADs, and ends the epoch when it is done; a commit that
 * may have overlapped waits for the end, re-verifies what it relies on, and only then writes HEAD. The grace
 * period, the re-mark and the last look remain as a second line for writers that predate the fence. If the
 * mark cannot read a root (missing or corrupt object), gc stops before deleting anything: sweeping on a
 * partial mark would delete live data. A run that outlives `fence.maxRunMs` stops deleting.
 *
 * A home's hot-set record, wake pack and namespace pack (`homes/<home>/HOTSET`, `WAKEPACK`, `NSPACK`) are
 * neither swept (only blocks/ and meta/ are) nor marked from: they are hints that no commit references
 * (docs/format.md). Nor is its push pack (`PUSHPACK`) marked from; it is deleted once the snapshot it holds
 * the blocks of is no longer retained (a pull never uses it again, and it holds up to 512 MiB of copies).
 */
import { homesPrefix, keyHash, objectsPrefix, pushPackKey } from '../store/keys.js';
import { PUSHPACK_HEADER, pushPackSnapshot } from '../transfer/pushpack.js';
import type { ObjectInfo, Store } from '../store/store.js';
import { GcFence, type FenceOptions } from '../format/gcfence.js';
import { ObjectStore } from '../format/objects.js';
import { mapLimit } from '../util/concurrency.js';
import { UserError, errorMessage } from '../util/errors.js';
import { pruneHistory } from './history.js';
import { emptyReachable, homeRoots, listHomes, markSnapshot, type Reachable, type Root } from './refs.js';

export interface GcOptions {
  /** Unreferenced objects younger than this are kept (a seal may be about to reference them). */
  graceMs: number;
  dryRun: boolean;
  /** Generations kept per home (retention). */
  keep: number;
  now?: () => number;
  onProgress?: (phase: string, done: number, total: number) => void;
  /** The epoch protocol's timing (tests shorten the wait and inject clocks). */
  fence?: Partial<FenceOptions>;
  /** Test hook: runs after the epoch wait, before the mark. */
  afterWait?: () => Promise<void>;
}

export interface GcResult {
  org: string;
  dryRun: boolean;
  homes: number;
  roots: number;
  /** Generation records deleted by retention (or that would be). */
  prunedGenerations: number;
  reachableObjects: number;
  scannedObjects: number;
  scannedBytes: number;
  /** Unreferenced objects younger than the grace period: kept. */
  youngUnreferenced: number;
  /** Candidates that a seal or fork committed during the gc made reachable again: kept. */
  rescued: number;
  /** Candidates rewritten (or gone) between the scan and their delete: kept. */
  refreshed: number;
  /** The gc epoch this run held (null for a dry run, which announces nothing). */
  epoch: number | null;
  /** Candidates left because the run reached its maximum duration. */
  overrun: number;
  deletedObjects: number;
  bytesFreed: number;
  /** Push packs of snapshots no longer retained: deleted (or that would be). */
  pushPacksDeleted: number;
  /** Multipart uploads under the org's homes (a push pack of a push that died) older than the grace period: aborted (or that would be). */
  uploadsAborted: number;
  seconds: number;
}

const HASH = /^[0-9a-f]{64}$/;

async function retainedRoots(store: Store, org: string, homes: readonly string[], keep: number): Promise<Root[]> {
  const roots: Root[] = [];
  for (const h of homes) roots.push(...(await homeRoots(store, org, h, keep, true)));
  return roots;
}

async function mark(objects: ObjectStore, roots: readonly Root[], into: Reachable, onRoot?: (i: number) => void): Promise<void> {
  let i = 0;
  for (const r of roots) {
    try {
      await markSnapshot(r.objects ?? objects, r.snapshot, into);
    } catch (e) {
      throw new UserError(`gc stopped before deleting anything: snapshot ${r.snapshot.slice(0, 12)} of ${objects.org}/${r.home} (${r.source}) cannot be read: ${errorMessage(e)}; run 'homefs verify --org ${objects.org}'`);
    }
    onRoot?.(++i);
  }
}

/**
 * The homes' push packs whose snapshot is not in `retained`, older than the grace period: deleted (none in
 * a dry run; counted either way). A pack that cannot be read or does not decode as a version this homefs
 * knows is left alone (never delete what we do not understand; a pull ignores it anyway).
 */
async function prunePushPacks(store: Store, org: string, homes: readonly string[], retained: ReadonlySet<string>, opts: GcOptions, started: number): Promise<number> {
  let pruned = 0;
  await mapLimit(homes, 16, async (home) => {
    const key = pushPackKey(org, home);
    const info = await statKey(store, key);
    if (!info || started - info.mtimeMs < opts.graceMs) return;
    let snapshot: string;
    try {
      snapshot = pushPackSnapshot(await store.getRange(key, 0, PUSHPACK_HEADER));
    } catch {
      return;
    }
    if (retained.has(snapshot)) return;
    if (!opts.dryRun) await store.delete(key);
    pruned++;
  });
  return pruned;
}

/**
 * Multipart uploads under the org's homes started longer ago than the grace period: the push pack of a push
 * that was killed (or whose abort failed) before it completed. Nothing can complete them any more; they
 * are invisible to readers but hold storage. Aborted (counted only in a dry run).
 */
async function abortStaleUploads(store: Store, org: string, opts: GcOptions, started: number): Promise<number> {
  const uploads = store.uploads;
  if (!uploads) return 0;
  const stale = (await uploads.list(homesPrefix(org))).filter((u) => started - u.startedMs >= opts.graceMs);
  if (!opts.dryRun) await mapLimit(stale, 16, (u) => uploads.abort(u.key, u.id));
  return stale.length;
}

/** The listing entry of exactly `key` (size, mtime), or null when it is gone. */
async function statKey(store: Store, key: string): Promise<ObjectInfo | null> {
  for await (const o of store.list(key, 1)) return o.key === key ? o : null;
  return null;
}

interface Candidate {
  key: string;
  hash: string;
  size: number;
}

export async function gcOrg(store: Store, org: string, opts: GcOptions): Promise<GcResult> {
  if (opts.dryRun) return sweepOrg(store, org, opts, null, null);
  const fence = new GcFence(store, org, opts.fence);
  const epoch = await fence.beginEpoch();
  let result: GcResult | null = null;
  try {
    opts.onProgress?.('fence', 0, 1);
    await fence.opts.sleep(fence.opts.waitMs);
    await opts.afterWait?.();
    result = await sweepOrg(store, org, opts, fence, epoch);
    return result;
  } finally {
    await fence.endEpoch(epoch, result ? { deleted: result.deletedObjects, bytesFreed: result.bytesFreed } : { failed: 1 });
  }
}

async function sweepOrg(store: Store, org: string, opts: GcOptions, fence: GcFence | null, epoch: number | null): Promise<GcResult> {
  const t0 = performance.now();
  const now = opts.now ?? Date.now;
  const objects = new ObjectStore(store, org);
  const progress = opts.onProgress ?? (() => undefined);
  const overrun = (): boolean => fence !== null && performance.now() - t0 > fence.opts.maxRunMs - fence.opts.waitMs;

  const homes = await listHomes(store, org);
  let prunedGenerations = 0;
  for (const h of homes) prunedGenerations += (await pruneHistory(store, org, h, opts.keep, opts.dryRun)).pruned.length;

  const reachable = emptyReachable();
  const roots = await retainedRoots(store, org, homes, opts.keep);
  await mark(objects, roots, reachable, (i) => progress('mark', i, roots.length));

  const started = now();
  const candidates: Candidate[] = [];
  let scannedObjects = 0;
  let scannedBytes = 0;
  let youngUnreferenced = 0;
  for (const kind of ['blocks', 'meta'] as const) {
    for await (const o of store.list(objectsPrefix(org, kind))) {
      const hash = keyHash(o.key);
      if (!HASH.test(hash)) continue; // not ours: never delete what we do not understand
      scannedObjects++;
      scannedBytes += o.size;
      const live = kind === 'blocks' ? reachable.blocks.has(hash) : reachable.meta.has(hash);
      if (live) continue;
      if (started - o.mtimeMs < opts.graceMs) youngUnreferenced++;
      else candidates.push({ key: o.key, hash, size: o.size });
      if (scannedObjects % 1000 === 0) progress('scan', scannedObjects, 0);
    }
  }

  // Re-mark: roots committed while we marked and scanned (other hosts' seals, forks, new homes).
  const again = await retainedRoots(store, org, await listHomes(store, org), opts.keep);
  await mark(objects, again.filter((r) => !reachable.meta.has(r.snapshot)), reachable);
  const doomed = candidates.filter((c) => !reachable.blocks.has(c.hash) && !reachable.meta.has(c.hash));
  const rescued = candidates.length - doomed.length;
  const pushPacksDeleted = await prunePushPacks(store, org, homes, reachable.meta, opts, started);
  const uploadsAborted = await abortStaleUploads(store, org, opts, started);

  let deleted = 0;
  let bytesFreed = 0;
  let refreshed = 0;
  let overran = 0;
  if (!opts.dryRun) {
    await mapLimit(doomed, 16, async (c) => {
      if (overrun()) {
        overran++;
        return;
      }
      // Last look right before the delete: an object rewritten since the scan (a seal re-uploading
      // content it dedupes against) is young again and stays.
      const current = await statKey(store, c.key);
      if (!current || now() - current.mtimeMs < opts.graceMs) {
        refreshed++;
        return;
      }
      await store.delete(c.key);
      deleted++;
      bytesFreed += c.size;
      if (deleted % 100 === 0) progress('sweep', deleted, doomed.length);
    });
    progress('sweep', deleted, doomed.length);
  } else {
    deleted = doomed.length;
    bytesFreed = doomed.reduce((s, c) => s + c.size, 0);
  }
  return {
    org, dryRun: opts.dryRun, homes: homes.length, roots: roots.length, prunedGenerations,
    reachableObjects: reachable.meta.size + reachable.blocks.size, scannedObjects, scannedBytes, youngUnreferenced, rescued, refreshed,
    deletedObjects: deleted, bytesFreed, pushPacksDeleted, uploadsAborted, epoch, overrun: overran, seconds: (performance.now() - t0) / 1000,
  };
}

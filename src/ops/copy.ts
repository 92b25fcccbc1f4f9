/**
 * `homefs copy`: what the retained history of homes references, from one store to another of any kind
 * (backup, replication, a move between stores), incrementally and verified.
 *
 * For each home, a plan is taken first: its newest `keep` HEAD generations, its conflict records and its
 * pending log segment (what was fsync'd since HEAD, with the segments it chains to), all read at one point
 * in time; everything after works from that plan, so a seal or an fsync on the source meanwhile cannot mix
 * two states: the target gets HEAD or the newest segment the home had when the plan was taken. Then:
 *
 * 1. every tree and snapshot reachable from those roots is read from the source and checked against its
 *    hash (a segment's own objects travel inside the segment and are not copied on their own);
 * 2. blocks and meta objects the target does not have (known from one listing of the org's objects on the
 *    target, a thousand keys a request, instead of a request per key) are read, checked against their
 *    hash, and written; those it has are counted as skipped;
 * 3. only then, conflict records, and the HEAD generations oldest first, each create-only: a generation the
 *    target already holds is kept (the same snapshot: skipped; another one: the target has diverged and the
 *    home fails). The target's HEAD therefore never moves backwards and never names a missing object;
 * 4. the pending segment, as one whole segment (its chain's objects folded in) at its own key, create-only;
 * 5. with `withHints`, the hot-set record and the packs, which are hints, overwritten.
 *
 * A damaged or missing source object fails that home (CorruptObjectError or NotFoundError, exit 4) before
 * any of its heads are written; the other homes go on. An interrupted copy run again sends only what did
 * not land. `dryRun` does every read and check but writes nothing.
 */
import { decodeSnapshot, decodeTree } from '../format/codec.js';
import { listHistory, type HeadRecord } from '../format/heads.js';
import { encodeSegment, pendingSegment, segmentObjects, type Segment } from '../fsynclog/homelog.js';
import { blockKey, headKey, hotsetKey, logKey, metaKey, nsPackKey, objectsPrefix, pushPackKey, wakePackKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { verifyObject } from '../store/verify.js';
import { mapLimit } from '../util/concurrency.js';
import { errorMessage, NotFoundError, UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit-codes.js';
import { listConflicts, entryBlockSizes } from './refs.js';

export interface CopyOptions {
  /** HEAD generations per home, newest first (Infinity: every one the source retains). */
  keep: number;
  withHints: boolean;
  dryRun: boolean;
  /** Objects in flight at once. */
  parallelism: number;
  onProgress?: (home: string, done: number, total: number) => void;
  warn?: (msg: string) => void;
}

export interface CopyReport {
  homes: number;
  /** Objects written (or, with dryRun, that would be). */
  objects: number;
  bytes: number;
  /** Objects the target already had. */
  skipped: number;
  seconds: number;
  /** Homes whose copy failed, and why (their heads on the target are unchanged). */
  failed: Array<{ home: string; error: string; damage: boolean }>;
}

interface Plan {
  history: HeadRecord[];
  conflicts: Array<{ key: string; snapshot: string }>;
  segment: Segment | null;
}

interface Tally {
  objects: number;
  bytes: number;
  skipped: number;
}

/** Copies the homes `homes` of `org` from `src` to `dst` (see the module comment). */
export async function copyHomes(src: Store, dst: Store, org: string, homes: readonly string[], o: CopyOptions): Promise<CopyReport> {
  const started = Date.now();
  const t: Tally = { objects: 0, bytes: 0, skipped: 0 };
  const failed: CopyReport['failed'] = [];
  const present = await listObjects(dst, org);
  for (const home of homes) {
    try {
      await copyHome(src, dst, org, home, o, t, present);
    } catch (e) {
      // Damage in the source, or a target that diverged, fails this home; a store that fails, or a bug, the whole copy.
      if (!(e instanceof UserError) || (e.exitCode !== ExitCode.damage && e.exitCode !== ExitCode.userError)) throw e;
      failed.push({ home: `${org}/${home}`, error: errorMessage(e), damage: e.exitCode === ExitCode.damage });
    }
  }
  return { homes: homes.length, ...t, seconds: (Date.now() - started) / 1000, failed };
}

async function copyHome(src: Store, dst: Store, org: string, home: string, o: CopyOptions, t: Tally, present: Set<string>): Promise<void> {
  const plan = await takePlan(src, org, home, o);
  if (!plan) return; // (a home with keys but no generation yet: nothing to copy)
  const inline = plan.segment ? segmentObjects(org, plan.segment) : new Map<string, Buffer>();
  const read = async (key: string, hash: string): Promise<Buffer> => {
    const data = inline.get(key) ?? (await src.get(key).catch((e: unknown) => {
      if (e instanceof NotFoundError) throw new UserError(`object ${key}, which ${org}/${home} references, is missing from the source store; run 'homefs verify' there`, ExitCode.damage);
      throw e;
    }));
    return verifyObject(key, hash, data);
  };
  // 1. The namespace of every root, level by level; meta objects kept (they are small) to write in step 2.
  const meta = new Map<string, Buffer>();
  const blocks = new Map<string, number>();
  const roots = [...plan.history.map((h) => h.snapshot), ...plan.conflicts.map((c) => c.snapshot), ...(plan.segment ? [plan.segment.snapshot] : [])];
  let level: string[] = [];
  for (const id of new Set(roots)) {
    const data = await read(metaKey(org, id), id);
    meta.set(id, data);
    level.push(decodeSnapshot(data, id).root);
  }
  while (level.length > 0) {
    const next: string[] = [];
    const fresh = [...new Set(level)].filter((h) => !meta.has(h));
    await mapLimit(fresh, o.parallelism, async (h) => {
      const data = await read(metaKey(org, h), h);
      meta.set(h, data);
      for (const e of decodeTree(data, h).entries) {
        if (e.kind === 'dir' && e.tree) next.push(e.tree);
        else if (e.kind === 'file') for (const [b, size] of entryBlockSizes(e)) blocks.set(b, size);
      }
    });
    level = next;
  }
  // 2. Objects the target lacks: blocks first, then trees and snapshots (a segment's own objects travel in it).
  const keys = [
    ...[...blocks].map(([h, size]) => ({ key: blockKey(org, h), hash: h, size })),
    ...[...meta].map(([h, data]) => ({ key: metaKey(org, h), hash: h, size: data.length })),
  ].filter((k) => !inline.has(k.key));
  const send = keys.filter((k) => !present.has(k.key));
  t.skipped += keys.length - send.length;
  let done = 0;
  await mapLimit(send, o.parallelism, async (k) => {
    const data = meta.get(k.hash) ?? (await read(k.key, k.hash));
    if (!o.dryRun) await dst.put(k.key, data);
    present.add(k.key);
    t.objects++;
    t.bytes += data.length;
    o.onProgress?.(`${org}/${home}`, ++done, send.length);
  });
  // 3. Conflict records, then HEAD generations, oldest first, create-only.
  for (const c of plan.conflicts) await createOnly(dst, c.key, Buffer.from(c.snapshot, 'latin1'), o, t, null);
  for (const h of [...plan.history].reverse()) {
    await createOnly(dst, headKey(org, home, h.gen), Buffer.from(h.snapshot, 'latin1'), o, t, `generation ${h.gen} of ${org}/${home}`);
  }
  // 4. The pending segment, whole (the chain it relied on folded in), at its own key.
  const s = plan.segment;
  if (s) await createOnly(dst, logKey(org, home, s.gen, s.seq), encodeSegment({ ...s, chain: [] }), o, t, null);
  // 5. Hints.
  if (o.withHints) {
    for (const key of [hotsetKey(org, home), wakePackKey(org, home), nsPackKey(org, home), pushPackKey(org, home)]) {
      const data = await src.get(key).catch((e: unknown) => {
        if (e instanceof NotFoundError) return null;
        throw e;
      });
      if (!data) continue;
      if (!o.dryRun) await dst.put(key, data);
      t.objects++;
      t.bytes += data.length;
    }
  }
}

/** The home's roots at one point in time. */
async function takePlan(src: Store, org: string, home: string, o: CopyOptions): Promise<Plan | null> {
  const history = await listHistory(src, org, home, o.keep);
  const head = history[0];
  if (!head) return null;
  const conflicts = await listConflicts(src, org, home);
  const segment = await pendingSegment(src, org, home, head, o.warn ?? (() => undefined));
  return { history, conflicts, segment };
}

/** The keys of the org's blocks and meta objects in `store` (a listing returns a thousand a request). */
async function listObjects(store: Store, org: string): Promise<Set<string>> {
  const out = new Set<string>();
  for (const kind of ['blocks', 'meta'] as const) for await (const o of store.list(objectsPrefix(org, kind))) out.add(o.key);
  return out;
}

/**
 * Writes `data` at `key` unless the target has the key. Holding other bytes there is a divergence when
 * `what` names the record (a HEAD generation: the home fails); otherwise the target's copy is kept.
 */
async function createOnly(dst: Store, key: string, data: Buffer, o: CopyOptions, t: Tally, what: string | null): Promise<void> {
  const created = o.dryRun ? !(await dst.has([key])).has(key) : await dst.putIfAbsent(key, data);
  if (created) {
    t.objects++;
    t.bytes += data.length;
    return;
  }
  t.skipped++;
  if (what && !o.dryRun && !(await dst.get(key)).equals(data)) {
    throw new UserError(`the target's ${what} holds another snapshot than the source's: the two have diverged (a home mounted from the target?); nothing more was written for this home`);
  }
}

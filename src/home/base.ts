/**
 * Choosing what a mount starts from. The local journal (same state directory) wins when it is based on
 * the store's HEAD; a fresh state directory starts from HEAD (or empty); a journal based on an older HEAD
 * (someone else sealed since) is sealed as a conflict snapshot first — kept, never lost — and replaced.
 * A claimant (`--takeover`, or a wake that finds another host's lease: the previous holder may still be
 * writing) fences that holder by advancing HEAD one generation to the same snapshot, first, so that any later
 * seal of the old holder loses the HEAD race.
 *
 * The home's fsync log (fsynclog/homelog.ts) is replayed here. A read-write wake then claims each log it reads
 * with a tombstone (the previous holder's next segment then fails): HEAD's, those of the generations below
 * that hold the same snapshot (a claimant's fence, or one that crashed before it replayed), and a log tail
 * (segments written while the seal that made the snapshot ran). If the newest valid segment was written by
 * this state directory, its journal already holds it; otherwise the segment is absorbed: its objects are
 * uploaded and HEAD advances to its snapshot.
 */
import type { Logger } from 'pino';
import { mkdirSync, rmSync } from 'node:fs';
import { journalTestOptions } from '../config.js';
import { Journal } from '../inodes/journal.js';
import { advanceHead, readHead, type HeadRecord } from '../format/heads.js';
import { claimLog, claimLogAhead, liveHead, OverlayStore, pendingSegment, segmentObjects, type LogEntry, type Segment } from '../fsynclog/homelog.js';
import type { ObjectInfo, Store } from '../store/store.js';
import { ObjectStore } from '../format/objects.js';
import type { Snapshot, SnapshotStats } from '../model/tree.js';
import { HeadConflictError, UserError } from '../util/errors.js';
import { mapLimit } from '../util/concurrency.js';
import { defaults } from '../config.js';
import type { HomePaths } from './paths.js';

export interface BaseChoice {
  journal: Journal;
  /** Root tree of the base snapshot (null: empty home). */
  rootTree: string | null;
  /** Attributes of the home's root directory recorded in the base snapshot. */
  rootAttrs?: Snapshot['rootAttrs'];
  /**
   * Where this mount's fsyncs go: the log of generation `gen` from `nextSeq` on, `chained` if HEAD's snapshot
   * lets readers expect chained segments (feature `log-chain`); null: every fsync seals.
   */
  log: { gen: number; nextSeq: number; chained: boolean } | null;
}

/** Journal meta key: the HEAD generation whose snapshot references every block the journal calls sealed. */
export const LOG_OK = 'logOk';
/** Journal meta key: `{gen, seq}` of the last segment this journal wrote (recorded once it landed). */
export const LOG_SEQ = 'logSeq';

/** HEAD moved (another writer, e.g. a holder still sealing) while this wake replayed or fenced: look again. */
class HeadMoved extends Error {}

/** Attempts at choosing a base while another writer keeps moving HEAD (each one claims its log anew). */
const WAKE_ATTEMPTS = 5;

/** What the caller read ahead since its lease look (home/claim.ts): HEAD, and its log's listing. */
export interface ReadAhead {
  head: Promise<HeadRecord | null>;
  /** The listing of generation `gen`'s log, if the caller made it (taken once). */
  logListing(gen: number): Promise<readonly ObjectInfo[]> | undefined;
}

export async function chooseBase(
  objects: ObjectStore, org: string, home: string, paths: HomePaths, claimant: boolean, log: Logger,
  sealStale: (journal: Journal) => Promise<void>, writer: string | null, early?: ReadAhead,
): Promise<BaseChoice> {
  for (let attempt = 1; ; attempt++) {
    try {
      // `early`: read by the caller since its lease look (home.ts); a later attempt reads anew.
      return await chooseOnce(objects, org, home, paths, claimant, log, sealStale, writer, attempt === 1 ? early : undefined);
    } catch (e) {
      if (!(e instanceof HeadMoved)) throw e;
      if (attempt >= WAKE_ATTEMPTS) throw new UserError(`HEAD of ${org}/${home} kept moving while this mount replayed its log (another host is still writing it); mount again`);
      log.warn({ org, home, attempt }, 'HEAD moved while waking; looking again');
    }
  }
}

async function chooseOnce(
  objects: ObjectStore, org: string, home: string, paths: HomePaths, claimant: boolean, log: Logger,
  sealStale: (journal: Journal) => Promise<void>, writer: string | null, early: ReadAhead | undefined,
): Promise<BaseChoice> {
  const opened = { journal: new Journal(paths.journal, journalTestOptions()) };
  try {
    return await choose(opened, objects, org, home, paths, claimant, log, sealStale, writer, early);
  } catch (e) {
    if (e instanceof HeadMoved) await opened.journal.close();
    throw e;
  }
}

/** Moves HEAD from `h` to `snapshot`; HeadMoved if another writer took that generation first. */
async function advance(objects: ObjectStore, org: string, home: string, h: HeadRecord, snapshot: string): Promise<number> {
  try {
    return await advanceHead(objects.store, org, home, h.gen, snapshot);
  } catch (e) {
    throw e instanceof HeadConflictError ? new HeadMoved() : e;
  }
}

async function choose(
  opened: { journal: Journal }, objects: ObjectStore, org: string, home: string, paths: HomePaths, claimant: boolean, log: Logger,
  sealStale: (journal: Journal) => Promise<void>, writer: string | null, early: ReadAhead | undefined,
): Promise<BaseChoice> {
  let journal = opened.journal;
  const found = await (early?.head ?? readHead(objects.store, org, home));
  let head = found;
  // A claimant fences first: HEAD advances to the same snapshot before any tombstone, so a seal of a holder
  // still writing (past its last look at its segments) loses the HEAD race instead of publishing what a
  // fsync fenced by that tombstone held. The log of `found` still counts under the new generation.
  let created: number | null = null;
  if (found && writer !== null && claimant) {
    created = await advance(objects, org, home, found, found.snapshot);
    head = { gen: created, snapshot: found.snapshot };
    log.info({ org, home, gen: created }, 'took the home over: HEAD advanced to fence the previous holder');
  }
  // Claim every log the wake reads (read-write mounts only), then find what was fsync'd since HEAD.
  let own: { gen: number; tombstone: number } | null = null;
  let seg: Segment | null = null;
  if (head && writer !== null) {
    const h = head;
    const pending = (list: (gen: number) => Promise<readonly LogEntry[]>): Promise<Segment | null> =>
      // From `found` down: the log of the generation this wake created is empty, and only this mount writes it.
      pendingSegment(objects.store, org, home, h, (msg) => log.error({ org, home }, msg), { list, ...(found ? { from: found.gen } : {}), prefetch: true });
    // The segments are read while the tombstones are written (claimLogAhead); a lost race claims and reads again.
    const ahead: Array<Promise<boolean>> = [];
    seg = await pending(async (gen) => {
      const c = await claimLogAhead(objects.store, org, home, gen, writer, early?.logListing(gen));
      const claimed = c.tombstone.then((t) => {
        if (t !== null && gen === h.gen) own = { gen, tombstone: t };
        return t !== null;
      });
      claimed.catch(() => undefined); // (a failed write fails the wake below, unless reading failed first)
      ahead.push(claimed);
      return c.seqs;
    });
    if (!(await Promise.all(ahead)).every(Boolean)) {
      log.info({ org, home }, 'another writer appended to the log while this wake claimed it: claiming again');
      own = null;
      seg = await pending(async (gen) => {
        const c = await claimLog(objects.store, org, home, gen, writer);
        if (gen === h.gen) own = { gen, tombstone: c.tombstone };
        return c.seqs;
      });
    }
  }
  // A read-only mount claims and replays nothing, but shows what was fsync'd since HEAD (its caller reads
  // through a store that serves that segment's objects: `readOnlyStore`).
  const shown = head && writer === null ? await pendingSegment(objects.store, org, home, head, (msg) => log.warn({ org, home }, msg)) : null;
  let advanced = false;
  const absorb = async (h: HeadRecord, s: Segment): Promise<HeadRecord> => {
    const objs = [...segmentObjects(org, s)];
    await mapLimit(objs, defaults.storeParallelism, ([key, data]) => objects.store.put(key, data));
    const gen = await advance(objects, org, home, h, s.snapshot);
    log.info({ org, home, gen, seq: s.seq, writer: s.writer }, 'replayed the log: HEAD advanced to what was fsync\'d');
    advanced = true;
    return { gen, snapshot: s.snapshot };
  };
  if (!journal.isEmpty()) {
    const base = journal.base();
    // A segment this journal recorded writing: the journal holds at least as much (it was made from it, and
    // the record comes after it). Any other segment (another host's, or ours with the record lost) is newer
    // than what this journal is known to hold: it is absorbed, and this journal's changes kept as a conflict.
    const mine = (s: Segment): boolean => {
      const m = journal.getMeta<{ gen: number; seq: number }>(LOG_SEQ);
      return s.writer === writer && m?.gen === s.gen && m.seq >= s.seq;
    };
    if (base.gen === (found?.gen ?? null) && !(seg && !mine(seg))) {
      if (head && found && created !== null) {
        // Rebased onto the generation this wake created: the same snapshot, so every block it calls sealed is still referenced.
        if (journal.getMeta<number>(LOG_OK) === found.gen) journal.setMeta(LOG_OK, created);
        journal.setBase({ snapshot: head.snapshot, gen: created });
      }
      return { journal, rootTree: null, log: writer === null ? null : await logFor(objects, head, own) };
    }
    if (head && seg && base.gen === found?.gen) head = await absorb(head, seg);
    if (journal.changedCount > 0) {
      log.warn({ org, home, localGen: base.gen, headGen: head?.gen }, 'HEAD moved since this state directory last sealed; keeping local changes as a conflict snapshot');
      await sealStale(journal);
    }
    await journal.close();
    rmSync(paths.journal, { recursive: true, force: true });
    rmSync(paths.upper, { recursive: true, force: true });
    mkdirSync(paths.upper, { recursive: true, mode: 0o700 });
    journal = new Journal(paths.journal, journalTestOptions());
    opened.journal = journal;
  }
  if (head && seg && !advanced) head = await absorb(head, seg);
  let rootTree: string | null = null;
  let rootAttrs: Snapshot['rootAttrs'];
  if (head) {
    const snap = await objects.getSnapshot(shown?.snapshot ?? head.snapshot);
    rootTree = snap.root;
    rootAttrs = snap.rootAttrs;
    journal.setMeta('stats', snap.stats satisfies SnapshotStats);
    journal.setMeta(LOG_OK, head.gen);
  }
  journal.setBase({ snapshot: shown?.snapshot ?? head?.snapshot ?? null, gen: head?.gen ?? null });
  return { journal, rootTree, ...(rootAttrs ? { rootAttrs } : {}), log: writer === null ? null : await logFor(objects, head, own) };
}

/**
 * The log this mount writes to: HEAD's generation, if HEAD's snapshot requires readers to know logs; after
 * the tombstone `own` if this wake claimed HEAD's log, else (a generation this wake created) from 0.
 */
async function logFor(objects: ObjectStore, head: HeadRecord | null, own: { gen: number; tombstone: number } | null): Promise<BaseChoice['log']> {
  if (!head) return null;
  const snap = await objects.getSnapshot(head.snapshot);
  if (!snap.features?.includes('log')) return null;
  return { gen: head.gen, nextSeq: own?.gen === head.gen ? own.tombstone + 1 : 0, chained: snap.features.includes('log-chain') };
}

/**
 * The store a read-only mount reads through: `store`, plus the objects of the home's live log segment (what
 * was fsync'd since HEAD), so that the base `chooseBase` picks for it (that segment's snapshot) is readable.
 */
export async function readOnlyStore(store: Store, org: string, home: string, log: Logger): Promise<Store> {
  const live = await liveHead(new ObjectStore(store, org), home, (msg) => log.warn({ org, home }, msg));
  return live.segment ? new OverlayStore(store, segmentObjects(org, live.segment)) : store;
}

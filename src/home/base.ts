/**
 * Choosing what a mount starts from. The local journal (same state directory) wins when it is based on
 * the store's HEAD; a fresh state directory starts from HEAD (or empty); a journal based on an older HEAD
 * (someone else sealed since) is sealed as a conflict snapshot first — kept, never lost — and replaced.
 * A takeover fences the previous holder by advancing HEAD one generation (same snapshot), so that any
 * later seal of the old holder loses the HEAD race.
 */
import type { Logger } from 'pino';
import { mkdirSync, rmSync } from 'node:fs';
import { journalTestOptions } from '../config.js';
import { Journal } from '../inodes/journal.js';
import { advanceHead, readHead } from '../snapshot/heads.js';
import type { ObjectStore } from '../snapshot/objects.js';
import type { Snapshot, SnapshotStats } from '../model/tree.js';
import type { HomePaths } from './paths.js';

export interface BaseChoice {
  journal: Journal;
  /** Root tree of the base snapshot (null: empty home). */
  rootTree: string | null;
  /** Attributes of the home's root directory recorded in the base snapshot. */
  rootAttrs?: Snapshot['rootAttrs'];
}

export async function chooseBase(
  objects: ObjectStore, org: string, home: string, paths: HomePaths, fence: boolean, log: Logger,
  sealStale: (journal: Journal) => Promise<void>,
): Promise<BaseChoice> {
  let journal = new Journal(paths.journal, journalTestOptions());
  let head = await readHead(objects.store, org, home);
  if (!journal.isEmpty()) {
    const base = journal.base();
    if (base.gen === (head?.gen ?? null)) {
      if (fence && head) {
        const gen = await advanceHead(objects.store, org, home, head.gen, head.snapshot);
        head = { gen, snapshot: head.snapshot };
        journal.setBase({ snapshot: head.snapshot, gen });
        log.info({ org, home, gen }, 'took the home over: HEAD advanced to fence the previous holder');
      }
      return { journal, rootTree: null };
    }
    if (journal.changedCount > 0) {
      log.warn({ org, home, localGen: base.gen, headGen: head?.gen }, 'HEAD moved since this state directory last sealed; keeping local changes as a conflict snapshot');
      await sealStale(journal);
    }
    await journal.close();
    rmSync(paths.journal, { recursive: true, force: true });
    rmSync(paths.upper, { recursive: true, force: true });
    mkdirSync(paths.upper, { recursive: true, mode: 0o700 });
    journal = new Journal(paths.journal, journalTestOptions());
  }
  if (fence && head) {
    const gen = await advanceHead(objects.store, org, home, head.gen, head.snapshot);
    head = { gen, snapshot: head.snapshot };
    log.info({ org, home, gen }, 'took the home over: HEAD advanced to fence the previous holder');
  }
  let rootTree: string | null = null;
  let rootAttrs: Snapshot['rootAttrs'];
  if (head) {
    const snap = await objects.getSnapshot(head.snapshot);
    rootTree = snap.root;
    rootAttrs = snap.rootAttrs;
    journal.setMeta('stats', snap.stats satisfies SnapshotStats);
  }
  journal.setBase({ snapshot: head?.snapshot ?? null, gen: head?.gen ?? null });
  return { journal, rootTree, ...(rootAttrs ? { rootAttrs } : {}) };
}

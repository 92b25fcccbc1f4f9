/**
 * A mounted home's write-behind (seal/writebehind.ts), wired to its journal, content, store, gc fence and
 * cache: which files it queues (every change of a file's bytes, every last close, every file left dirty
 * by an earlier process of this state directory), what it skips (what the seal leaves out), whose gc look
 * tags its uploads (the mount's, shared with its seals), and where its blocks go (one object per block).
 */
import type { Logger } from 'pino';
import type { BlockCache } from '../cache/blockcache.js';
import type { Content } from '../inodes/content.js';
import { isUnsealed } from '../inodes/filestate.js';
import type { Journal } from '../inodes/journal.js';
import type { HomeView } from '../inodes/view.js';
import { excludedIno } from '../seal/preseal.js';
import { sealSlabs } from '../seal/blockread.js';
import type { SealDeps } from '../seal/seal.js';
import { WriteBehind, type WriteBehindOptions, defaultWriteBehindOptions } from '../seal/writebehind.js';
import type { Foreground } from './foreground.js';
import type { Excludes } from '../format/excludes.js';
import type { ObjectStore } from '../format/objects.js';
import { errorMessage } from '../util/errors.js';

/** A look at the gc fence is reused for this long before write-behind asks again (as seals do). */
const LOOK_REUSE_MS = 30_000;

export interface WriteBehindWiring {
  journal: Journal;
  content: Content;
  view: HomeView;
  objects: ObjectStore;
  cache: BlockCache;
  excludes: Excludes;
  fence: SealDeps['fence'];
  hash: (data: Buffer) => Promise<{ hash: string; data: Buffer }>;
  /** The presealer's upload of a block, while in flight. */
  presealing: (hash: string) => Promise<unknown> | undefined;
  /** Whether the foreground is busy (home/foreground.ts). */
  foreground: Foreground;
  log: Logger;
  options?: Partial<WriteBehindOptions>;
}

export function startWriteBehind(w: WriteBehindWiring): WriteBehind {
  const { journal, content, fence } = w;
  let looking: Promise<SealDeps['fence']['observed']> | null = null;
  const wb = new WriteBehind({
    look: (ino) => {
      const node = journal.get(ino);
      const c = node?.content;
      if (!node || node.kind !== 'file' || !c) return undefined;
      return { pending: isUnsealed(c) && !c.stored, size: node.size };
    },
    stage: (ino, store, landed, epoch) => content.sealFile(ino, store, { record: { stored: epoch }, landed }),
    epoch: async () => {
      const last = fence.observed;
      let look = last && fence.gc.opts.monotonic() - last.atMs < LOOK_REUSE_MS ? last : null;
      if (!look) {
        looking ??= fence.gc.observe().then((s) => (fence.observed = s)).finally(() => (looking = null));
        look = await looking;
      }
      if (!look || !(look.done || fence.gc.isStale(look))) return undefined;
      return { epoch: look.epoch };
    },
    hash: w.hash,
    slabs: sealSlabs(),
    sink: { missing: (hashes) => w.objects.missingBlocks(hashes), put: async (hash, data) => void (await w.objects.putBlock(hash, data)) },
    uploading: w.presealing,
    excluded: (ino) => excludedIno(journal, w.excludes, ino),
    foregroundBusy: () => w.cache.foregroundWaiting,
    busy: () => w.foreground.busy(),
    onError: (ino, e) => w.log.debug({ op: 'writebehind', ino, err: errorMessage(e) }, 'write-behind of a file failed; it is queued again (or left to the seal)'),
  }, { ...defaultWriteBehindOptions, ...w.options });
  content.onChanged = (ino) => wb.changed(ino);
  const reclaim = w.view.onReclaim;
  w.view.onReclaim = (node) => {
    wb.dropped(node.ino);
    reclaim(node);
  };
  w.view.onLastClose = (ino) => wb.closedFile(ino);
  // Files an earlier process of this state directory left changed and not stored.
  for (const [ino] of journal.changedInodes()) {
    const c = journal.get(ino)?.content;
    if (c && isUnsealed(c) && !c.stored) {
      wb.changed(ino);
      wb.closedFile(ino);
    }
  }
  return wb;
}

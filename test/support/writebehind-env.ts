/**
 * A journal, content layer and view with write-behind wired to them over a given store (memory unless
 * given), for the tests of seal/writebehind.ts and of the gc fence's handling of its tags.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashBuffer } from '../../src/hash/blake3.js';
import { Content } from '../../src/inodes/content.js';
import { isUnsealed } from '../../src/inodes/filestate.js';
import { Journal } from '../../src/inodes/journal.js';
import { ROOT_INO } from '../../src/inodes/types.js';
import { UpperFiles } from '../../src/inodes/upper.js';
import { HomeView } from '../../src/inodes/view.js';
import type { SealDeps } from '../../src/seal/seal.js';
import { WriteBehind, defaultWriteBehindOptions } from '../../src/seal/writebehind.js';
import { decodeTree } from '../../src/format/codec.js';
import { Excludes } from '../../src/format/excludes.js';
import { GcFence } from '../../src/format/gcfence.js';
import { ObjectStore } from '../../src/format/objects.js';
import { MemoryStore } from '../../src/store/memory.js';
import { metaKey } from '../../src/store/keys.js';
import type { Store } from '../../src/store/store.js';

export interface Env {
  j: Journal;
  content: Content;
  view: HomeView;
  mem: Store;
  objects: ObjectStore;
  wb: WriteBehind;
  fence: SealDeps['fence'];
  puts: string[];
  /** While set, block uploads wait for `release`. */
  gate: { hold: boolean; waiting: Array<() => void> };
  deps: () => SealDeps;
  close: () => Promise<void>;
}

export function writeBehindEnv(base: Store = new MemoryStore()): Env {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-wb-'));
  const mem = base;
  const puts: string[] = [];
  const store: Store = Object.assign(Object.create(base) as Store, { put: (key: string, data: Buffer) => (puts.push(key), base.put(key, data)) });
  const j = new Journal(join(dir, 'journal'));
  const objects = new ObjectStore(store, 'acme');
  const noBlocks = { read: async () => Buffer.alloc(0), get: async () => Buffer.alloc(0), prefetch: () => undefined, size: () => undefined };
  const content = new Content(j, new UpperFiles(join(dir, 'upper')), noBlocks, { readaheadBlocks: 0, quotaBytes: 0 });
  const view = new HomeView(j, { getTree: async (h) => decodeTree(await mem.get(metaKey('acme', h)), h), prefetchTrees: () => undefined });
  view.initRoot(null, {}, 0, 0);
  const fence: SealDeps['fence'] = { gc: new GcFence(store, 'acme'), observed: null };
  const gate = { hold: false, waiting: [] as Array<() => void> };
  const hash = async (data: Buffer): Promise<{ hash: string; data: Buffer }> => ({ hash: hashBuffer(data), data });
  const wb = new WriteBehind({
    look: (ino) => {
      const n = j.get(ino);
      return n?.content ? { pending: isUnsealed(n.content) && !n.content.stored, size: n.size } : undefined;
    },
    stage: (ino, storeBlock, landed, epoch) => content.sealFile(ino, storeBlock, { record: { stored: epoch }, landed }),
    epoch: async () => {
      const s = await fence.gc.observe();
      fence.observed = s;
      return s.done ? { epoch: s.epoch } : undefined;
    },
    hash,
    sink: {
      missing: (hs) => objects.missingBlocks(hs),
      put: async (h, data) => {
        if (gate.hold) await new Promise<void>((r) => gate.waiting.push(r));
        await objects.putBlock(h, data);
      },
    },
    excluded: () => false,
    foregroundBusy: () => false,
    onError: () => undefined,
  }, { ...defaultWriteBehindOptions, quietMs: 0, closedQuietMs: 0, pumpMs: 1 });
  content.onChanged = (ino) => wb.changed(ino);
  view.onReclaim = (node) => {
    wb.dropped(node.ino);
    void content.reclaim(node);
  };
  const deps = (): SealDeps => ({
    journal: j, content, objects, excludes: new Excludes([]), home: 'h', host: 'test', parallelism: 4, hash, fence,
    uploading: (h) => wb.inFlight(h), storedUnder: (h, e) => wb.has(h, e),
  });
  return {
    j, content, view, mem, objects, wb, fence, puts, gate, deps,
    close: async () => {
      await wb.close();
      await j.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}


/** A new file in the root holding `bytes`; resolves with its inode number once written. */
export function newFile(e: Env, name: string, bytes: string | Buffer): Promise<number> {
  const ino = e.view.create(ROOT_INO, name, { kind: 'file', mode: 0o644, uid: 0, gid: 0 }).ino;
  return e.content.write(ino, 0, Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes)).then(() => ino);
}

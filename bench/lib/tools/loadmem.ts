/**
 * What a mounted home's journal holds in memory once every directory is loaded, as after a first `find`:
 * loads every directory of a home's HEAD into a fresh journal (inodes/view.ts, the mount's own loads, each
 * entry also referenced once as the kernel's READDIRPLUS would), and prints the heap it took per entry.
 *
 *   node --expose-gc dist/bench/lib/tools/loadmem.js <store url> <org>/<home>
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Journal } from '../../../src/inodes/journal.js';
import { ROOT_INO } from '../../../src/inodes/types.js';
import { HomeView } from '../../../src/inodes/view.js';
import { readHead } from '../../../src/format/heads.js';
import { ObjectStore } from '../../../src/format/objects.js';
import { openStore } from '../../../src/store/open.js';

const [url, ref] = process.argv.slice(2);
const [org, home] = (ref ?? '').split('/');
const gc = (globalThis as { gc?: () => void }).gc;
if (!url || !org || !home || !gc) {
  process.stderr.write('usage: node --expose-gc loadmem <store url> <org>/<home>\n');
  process.exit(2);
}
const store = await openStore(url);
const objects = new ObjectStore(store, org);
const head = await readHead(store, org, home);
if (!head) throw new Error(`${org}/${home} has no HEAD`);
const snap = await objects.getSnapshot(head.snapshot);
const dir = mkdtempSync(join(tmpdir(), 'homefs-loadmem-'));
try {
  const view = new HomeView(new Journal(join(dir, 'journal')), { getTree: (h) => objects.getTree(h), prefetchTrees: () => undefined });
  view.initRoot(snap.root, {}, 0, 0);
  gc();
  const before = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const stack = [ROOT_INO];
  while (stack.length > 0) {
    const ino = stack.pop() as number;
    await view.ensureLoaded(ino);
    for (const [, node] of view.list(ino)) {
      view.ref(node.ino);
      if (node.kind === 'dir') stack.push(node.ino);
    }
  }
  const ms = performance.now() - t0;
  gc();
  const heap = process.memoryUsage().heapUsed - before;
  const counts = view.journal.memoryCounts();
  console.log(`${counts.records} records, ${counts.dirs} directories, ${counts.heldLoads} held loads: heap +${(heap / 1e6).toFixed(1)} MB, ${(heap / counts.records).toFixed(0)} bytes per entry (loads took ${(ms / 1000).toFixed(1)} s, trees read from the store)`);
  await view.journal.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
  await store.close();
}

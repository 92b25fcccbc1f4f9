/**
 * The namespace pack through real mounts over the test Ceph (`find` on a fresh host): a push
 * writes every tree of the home into NSPACK; a fresh host brings them into its cache from a few ranged GETs
 * and lists the whole home correctly; with the pack damaged, of an unknown version, of an older snapshot, or
 * missing, a fresh host still lists the home correctly (trees come one GET each), and its sleep writes a
 * pack of the snapshot it sealed. gc leaves the pack alone; a fork gets a copy.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { TestHome, homefsOk, shOk } from './support/homefs-mount.js';
import { decodeNsPackIndex } from '../src/transfer/nspack.js';
import { ObjectStore } from '../src/format/objects.js';
import { readHead } from '../src/format/heads.js';
import { hotsetKey, metaKey, nsPackKey } from '../src/store/keys.js';
import { pullSnapshot } from '../src/transfer/pull.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { RecordingStore } from './support/ops-stores.js';
import { testS3Url } from './support/s3.js';

let h: TestHome;
let store: Store;
let expected: string;
let hostNo = 0;
const LIST = `find . -printf '%y %p\\n' | sort && find . -type f -printf '%s %p\\n' | sort && cat d1/e2/f3/leaf.txt`;
const key = (): string => nsPackKey('acme', 'ns');

async function headRoot(): Promise<string> {
  const head = await readHead(store, 'acme', 'ns');
  assert.ok(head, 'the home has a HEAD');
  return (await new ObjectStore(store, 'acme').getSnapshot(head.snapshot)).root;
}

/** What the mount's wake took from the pack, once it is done. */
async function packLoaded(mnt: string): Promise<Record<string, number | boolean>> {
  for (let i = 0; i < 600; i++) {
    const rep = (await h.status(mnt)).nspack as Record<string, number | boolean> | null;
    if (rep?.done) return rep;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the namespace pack was never loaded (or found missing)');
}

/** A fresh host (with no hot set to warm from) mounts, waits for the pack to load, lists the home, sleeps; returns the load report. */
async function freshList(extra = ''): Promise<Record<string, number | boolean>> {
  await store.delete(hotsetKey('acme', 'ns')); // else the last session's wake pack races the namespace pack with the same trees
  const mnt = await h.mount({ host: `fresh${hostNo++}` });
  try {
    const rep = await packLoaded(mnt);
    assert.equal(await shOk(`cd ${mnt} && ${LIST}`), expected, 'the mount lists the pushed home');
    const entries = (await shOk(`cd ${mnt} && find . | wc -l`)).trim();
    const memory = (await h.status(mnt)).memory as Record<string, number>;
    assert.equal(memory.records, Number(entries), 'status counts one record per entry the listing loaded, the root included');
    assert.ok((memory.rss ?? 0) > (memory.heapUsed ?? 0) && (memory.heapUsed ?? 0) > 0, 'and the daemon\'s memory');
    if (extra) await shOk(`cd ${mnt} && ${extra}`);
    return rep;
  } finally {
    await h.sleep(mnt);
  }
}

before(async () => {
  h = new TestHome('acme', 'ns', await testS3Url());
  store = await openStore(h.storeUrl, { write: true });
  await shOk(`mkdir -p ${h.root}/src && cd ${h.root}/src && for a in 0 1 2 3; do for b in 0 1 2; do for c in 0 1 2 3; do
    mkdir -p d$a/e$b/f$c && echo "$a $b $c" > d$a/e$b/f$c/leaf.txt; done; done; done && mkdir empty && echo top > top.txt`);
  await homefsOk(['push', path.join(h.root, 'src'), h.ref, '--store', h.storeUrl], { timeoutMs: 120_000 });
  expected = await shOk(`cd ${h.root}/src && ${LIST}`);
});
after(async () => {
  await h.cleanup();
  await store.close();
});

test('push writes a namespace pack of every tree, root first', async () => {
  const idx = decodeNsPackIndex(await store.get(key()));
  assert.equal(idx.root, await headRoot());
  assert.equal(idx.slices.length, 1 + 4 + 12 + 48 + 1, 'root, d*, e*, f* and empty/');
  assert.equal(new Set(idx.slices.map((s) => s.entry.hash)).size, idx.slices.length, 'each tree once');
});

/** Pulls HEAD of acme/ns in-process, counting GETs of tree objects; returns the count, checks the copy. */
async function pullCountingTreeGets(dest: string): Promise<number> {
  const head = await readHead(store, 'acme', 'ns');
  assert.ok(head);
  const snapKey = metaKey('acme', head.snapshot);
  const counting = new RecordingStore(store);
  await pullSnapshot(counting, 'acme', head.snapshot, dest, { home: 'ns', xattrs: false });
  assert.equal(await shOk(`cd ${dest} && ${LIST}`), expected, 'the pulled copy is the pushed home');
  return counting.calls.filter((c) => c.op === 'get' && c.key.includes('/meta/') && c.key !== snapKey).length;
}

test('pull takes the trees from the pack; with the pack damaged it fetches them one by one', async () => {
  assert.equal(await pullCountingTreeGets(path.join(h.root, 'pull1')), 0, 'no tree fetched on its own');
  const good = await store.get(key());
  const bad = Buffer.from(good);
  for (let i = bad.length - 200; i < bad.length; i++) bad[i] = (bad[i] as number) ^ 0xff; // the last trees' bytes
  await store.put(key(), bad);
  try {
    const n = await pullCountingTreeGets(path.join(h.root, 'pull2'));
    assert.ok(n > 0 && n < 66, `trees the damaged pack could not give were fetched (${n})`);
    await store.delete(key());
    assert.equal(await pullCountingTreeGets(path.join(h.root, 'pull3')), 66, 'no pack: every tree fetched');
  } finally {
    await store.put(key(), good);
  }
});

test('a fresh host takes every tree from the pack in a few ranged GETs', async () => {
  const rep = await freshList();
  assert.equal(rep.found, true);
  assert.equal(rep.sameRoot, true);
  assert.equal(Number(rep.fromPack) + Number(rep.cached), 66, 'every tree came from the pack (or was cached by the mount already)');
  assert.ok(Number(rep.fromPack) >= 60);
  assert.equal(rep.rejected, 0);
  assert.equal(rep.requests, 1, 'a small pack comes in its first ranged GET');
});

test('a fresh read-only mount takes every tree from the pack and writes none', async () => {
  await store.delete(hotsetKey('acme', 'ns'));
  const before = await store.get(key());
  const mnt = await h.mount({ host: `ro${hostNo++}`, extra: ['--read-only'] });
  try {
    const rep = await packLoaded(mnt);
    assert.equal(rep.found, true);
    assert.equal(rep.sameRoot, true);
    assert.equal(Number(rep.fromPack) + Number(rep.cached), 66, 'every tree came from the pack');
    assert.equal(rep.requests, 1);
    assert.equal(await shOk(`cd ${mnt} && ${LIST}`), expected, 'the read-only mount lists the pushed home');
  } finally {
    await h.sleep(mnt);
  }
  assert.ok((await store.get(key())).equals(before), 'the read-only sleep left the pack as it was');
});

test('a damaged pack is rejected tree by tree and the listing is still right', async () => {
  const pack = await store.get(key());
  const idx = decodeNsPackIndex(pack);
  for (let i = idx.dataStart + 10; i < pack.length; i += 97) pack[i] = (pack[i] ?? 0) ^ 0x5a;
  await store.put(key(), pack);
  const rep = await freshList();
  assert.equal(rep.found, true);
  assert.ok(Number(rep.rejected) > 0 && Number(rep.fromPack) < 66, `damaged pack: ${JSON.stringify(rep)}`);
  const again = await freshList(); // that sleep wrote a sound pack again
  assert.equal(again.rejected, 0);
  assert.equal(Number(again.fromPack) + Number(again.cached), 66);
});

test('a pack of an unknown version, a truncated one, or none is ignored', async () => {
  const good = await store.get(key());
  const hostile = Buffer.from(good);
  hostile[4] = 9;
  await store.put(key(), hostile);
  assert.equal((await freshList()).found, false);
  await store.put(key(), good.subarray(0, 60));
  assert.equal((await freshList()).found, false);
  await store.delete(key());
  assert.equal((await freshList()).found, false);
});

test('a sleep writes the pack of the snapshot it sealed; an older pack still serves its unchanged trees', async () => {
  await store.delete(key());
  const first = await headRoot();
  await freshList(); // nothing changed: the sleep writes a pack of the same root
  const old = await store.get(key());
  assert.equal(decodeNsPackIndex(old).root, first);
  const mnt = await h.mount({ host: `fresh${hostNo++}` });
  await shOk(`mkdir ${mnt}/d0/e0/new && echo x > ${mnt}/d0/e0/new/x.txt`);
  await h.sleep(mnt);
  const second = await headRoot();
  assert.notEqual(second, first);
  assert.equal(decodeNsPackIndex(await store.get(key())).root, second, 'the sleep packed the new root');
  expected = await shOk(`cd ${h.root}/src && mkdir -p d0/e0/new && echo x > d0/e0/new/x.txt && ${LIST}`);
  await store.put(key(), old);
  const rep = await freshList();
  assert.equal(rep.found, true);
  assert.equal(rep.sameRoot, false);
  assert.equal(Number(rep.fromPack) + Number(rep.cached), 66, 'every tree of the older pack verifies; the walk fetches the changed ones');
  assert.equal(decodeNsPackIndex(await store.get(key())).root, second, 'that sleep packed the current root again');
});

test('gc keeps the namespace pack', async () => {
  await homefsOk(['gc', '--org', 'acme', '--grace', '0s', '--keep', '1', '--fence-wait', '0s', '--store', h.storeUrl], { timeoutMs: 60_000 });
  assert.ok((await store.has([key()])).has(key()), 'gc keeps the pack');
  const rep = await freshList();
  assert.equal(Number(rep.fromPack) + Number(rep.cached), 67, 'root, d*, e*, f*, empty/ and new/');
});

test('a fork gets a copy of the pack, and its first wake takes its trees from it', async () => {
  await homefsOk(['fork', h.ref, 'acme/nsfork', '--store', h.storeUrl]);
  const forkKey = nsPackKey('acme', 'nsfork');
  assert.equal(decodeNsPackIndex(await store.get(forkKey)).root, await headRoot());
  const mnt = await h.mount({ host: `fork${hostNo++}`, ref: 'acme/nsfork' });
  try {
    const rep = await packLoaded(mnt);
    assert.equal(rep.sameRoot, true);
    assert.equal(Number(rep.fromPack) + Number(rep.cached), 67);
    assert.equal(await shOk(`cd ${mnt} && ${LIST}`), expected);
  } finally {
    await h.sleep(mnt);
  }
});

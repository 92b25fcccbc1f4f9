/**
 * The gc/dedup race, interleaved deterministically (format/gcfence.ts). A commit deduplicates against a
 * block that has been garbage for longer than the grace period; a gc deletes that block while the commit is
 * between its dedupe check and its HEAD write. Without the fence the commit lands a snapshot that references
 * a deleted block; with it, the commit either lands before the gc marks (and the gc keeps the block), or
 * waits for the gc, finds the block gone, and uploads it again or gives up with HEAD unchanged. The same
 * holds for blocks write-behind stored or found before the commit (their gc epoch tags).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, mkdir, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaults } from '../src/config.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { gcOrg } from '../src/ops/gc.js';
import { verifyHomes } from '../src/ops/verify.js';
import { GcFence, type EpochState } from '../src/format/gcfence.js';
import { readHead } from '../src/format/heads.js';
import { ObjectStore } from '../src/format/objects.js';
import { pushDirectory } from '../src/transfer/push.js';
import { FileStore } from '../src/store/file.js';
import { blockKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import { gate, RecordingStore } from './support/ops-stores.js';
import { newFile, writeBehindEnv } from './support/writebehind-env.js';
import { storedOf } from '../src/inodes/filestate.js';
import { seal } from '../src/seal/seal.js';

const DAY = 86_400_000;

interface Setup {
  work: string;
  storeDir: string;
  store: FileStore;
  objects: ObjectStore;
  /**
   * Garbage for two days: 100 KiB by default (push writes it with one create-only PUT whose 412 is the
   * dedupe hit; a seal asks first), or larger than `defaults.push.createOnlyMax` (push asks first too).
   */
  garbage: Buffer;
  src: string;
}

async function setup(size = 100 * 1024): Promise<Setup> {
  const work = await mkdtemp(join(tmpdir(), 'homefs-gcfence-'));
  const storeDir = join(work, 'store');
  const store = await new FileStore(storeDir).init();
  const objects = new ObjectStore(store, 'acme');
  const garbage = randomBytes(size);
  await objects.putBlock(hashBuffer(garbage), garbage);
  const t = new Date(Date.now() - 2 * DAY);
  const dir = join(storeDir, 'acme/blocks');
  for (const sub of await readdir(dir)) for (const f of await readdir(join(dir, sub))) await utimes(join(dir, sub, f), t, t);
  const src = join(work, 'src');
  await mkdir(src);
  await writeFile(join(src, 'reused.bin'), garbage);
  await writeFile(join(src, 'note.md'), 'new\n');
  return { work, storeDir, store, objects, garbage, src };
}

const blockPath = (s: Setup): string => join(s.storeDir, blockKey('acme', hashBuffer(s.garbage)));

for (const [size, how] of [[100 * 1024, 'create-only PUT'], [defaults.push.createOnlyMax + 1, 'existence check']] as const) test(`gc fence: a push whose dedupe hit (${how}) preceded a whole gc run re-verifies and refuses to land a snapshot with a deleted block`, async () => {
  const s = await setup(size);
  try {
    let gcResult = -1;
    const recording = new RecordingStore(s.store);
    const push = pushDirectory(s.src, recording, 'acme', 'b', {
      xattrs: false,
      fence: { pollMs: 1 },
      // Between the dedupe check (the block exists) and HEAD, a whole gc runs and deletes the block.
      beforeCommit: async () => void (gcResult = (await gcOrg(s.store, 'acme', { graceMs: DAY, keep: 20, dryRun: false, fence: { waitMs: 0 } })).deletedObjects),
    });
    await assert.rejects(push, /ran during this push and deleted 1 blocks it deduplicated against; HEAD is unchanged/);
    const key = blockKey('acme', hashBuffer(s.garbage));
    const asked = recording.calls.filter((c) => c.key === key).map((c) => c.op);
    // The dedupe hit: a create-only PUT that found the block (412), or an existence check; then the re-verification's check.
    assert.deepEqual(asked, size <= defaults.push.createOnlyMax ? ['putIfAbsent', 'has'] : ['has', 'has']);
    assert.equal(gcResult, 1, 'the gc did delete the reused block: without the fence HEAD would reference it');
    assert.equal(existsSync(blockPath(s)), false);
    assert.equal(await readHead(s.store, 'acme', 'b'), null, 'no snapshot landed');
    const again = await pushDirectory(s.src, s.store, 'acme', 'b', { xattrs: false });
    assert.equal(again.blocksNew, 1, 'the second push uploads the deleted block again');
    assert.ok(existsSync(blockPath(s)));
    assert.deepEqual((await verifyHomes(s.store, s.objects, ['b'], { full: true })).problems, []);
  } finally {
    await rm(s.work, { recursive: true, force: true });
  }
});

test('gc fence: a commit that lands within the announced wait is marked by the gc, which keeps the block', async () => {
  const s = await setup();
  try {
    const gcWaiting = gate();
    let gc: Promise<{ deletedObjects: number }> = Promise.reject(new Error('gc not started'));
    gc.catch(() => undefined);
    const r = await pushDirectory(s.src, s.store, 'acme', 'b', {
      xattrs: false,
      // The commit's clock does not move: its span from first look to HEAD is 0 ms plus the deadlines.
      fence: { commitDeadlineMs: 10, storeDeadlineMs: 10, monotonic: () => 0 },
      beforeCommit: async () => {
        gc = gcOrg(s.store, 'acme', {
          graceMs: DAY, keep: 20, dryRun: false,
          fence: { waitMs: 60_000, sleep: () => gcWaiting.wait },
        });
        const look = new GcFence(s.store, 'acme');
        for (let st = await look.observe(); st.epoch !== 0; st = await look.observe()) await new Promise((res) => setTimeout(res, 1));
      },
    });
    gcWaiting.open();
    const g = await gc;
    assert.equal(g.deletedObjects, 0, 'the gc marked the commit and deleted nothing it references');
    assert.ok(existsSync(blockPath(s)));
    assert.equal((await readHead(s.store, 'acme', 'b'))?.snapshot, r.snapshot);
    assert.deepEqual((await verifyHomes(s.store, s.objects, ['b'], { full: true })).problems, []);
  } finally {
    await rm(s.work, { recursive: true, force: true });
  }
});

test('gc fence: rules, one epoch at a time, stale and unreadable epochs', async () => {
  const store = new MemoryStore();
  let wall = 1_000_000;
  let mono = 0;
  const f = new GcFence(store, 'acme', { waitMs: 1000, commitDeadlineMs: 10, storeDeadlineMs: 10, maxRunMs: 5000, staleMarginMs: 1000, wallClock: () => wall, monotonic: () => mono });
  const none = await f.observe();
  assert.deepEqual([none.epoch, none.done], [null, true]);
  const e0 = await f.beginEpoch();
  assert.equal(e0, 0);
  await assert.rejects(f.beginEpoch(), /another gc of org acme is running \(epoch 0/);
  mono = 500;
  const running = await f.observe();
  assert.deepEqual([running.epoch, running.done, running.waitMs], [0, false, 1000]);
  assert.equal(f.safe(none, running), true, 'announced 500 ms after the first look, 1000 ms wait: lands first');
  mono = 990;
  assert.equal(f.safe(none, await f.observe()), false, 'too late to be sure to land before the mark');
  assert.equal(f.safe(running, running), false, 'a gc running at the first look can have deleted anything');
  await f.endEpoch(0, { deleted: 0 });
  const done = await f.observe();
  assert.equal(f.safe(running, done), false, 'ended after the first look: re-verify');
  assert.equal(f.safe(done, done), true);
  assert.equal(await f.beginEpoch(), 1);
  wall += 7000;
  const stale = await f.observe();
  assert.equal(f.isStale(stale), true, 'a gc past its maximum run plus margin deletes nothing more');
  assert.equal(await f.beginEpoch(), 2, 'the next gc abandons a stale epoch');
  assert.ok((await store.get('acme/gc/9999999999998.done')).toString().includes('abandoned'));
  await store.putIfAbsent('acme/gc/9999999999996', Buffer.from('{not json'));
  await f.endEpoch(2, {});
  const hostile = await f.observe();
  assert.deepEqual([hostile.epoch, hostile.done, hostile.waitMs, f.isStale(hostile)], [3, false, 0, false], 'an unreadable record is never stale and promises no wait');
  assert.equal(await f.beginEpoch(), 4, 'a gc abandons an epoch whose record it cannot read');
});

test('gc fence: a seal-like commit waiting on a running gc re-uploads what the gc deleted', async () => {
  const s = await setup();
  try {
    const fence = new GcFence(s.store, 'acme', { pollMs: 1 });
    const since: EpochState = await fence.observe();
    const e = await new GcFence(s.store, 'acme', { waitMs: 0 }).beginEpoch(); // announced after the first look, no wait
    const hash = hashBuffer(s.garbage);
    let reuploaded = 0;
    const committed = fence.commit(since, async () => {
      if ((await s.objects.missingBlocks([hash])).size === 1) {
        await s.objects.putBlock(hash, s.garbage);
        reuploaded++;
      }
    }, async () => 'head written');
    await s.store.delete(blockKey('acme', hash)); // what that gc's sweep does
    await new GcFence(s.store, 'acme').endEpoch(e, { deleted: 1 });
    assert.equal((await committed).result, 'head written');
    assert.equal(reuploaded, 1);
    assert.ok(existsSync(blockPath(s)));
  } finally {
    await rm(s.work, { recursive: true, force: true });
  }
});

test('gc fence: recheck answers what observe would, with one existence check while no gc was announced', async () => {
  const store = new RecordingStore(new MemoryStore());
  let mono = 0;
  const f = new GcFence(store, 'acme', { monotonic: () => mono });
  const none = await f.observe();
  store.calls.length = 0;
  mono = 5;
  const again = await f.recheck(none);
  assert.deepEqual([again.epoch, again.done, again.atMs], [null, true, 5]);
  assert.deepEqual(store.calls.map((c) => c.op), ['has'], 'no LIST');
  const e0 = await f.beginEpoch();
  const announced = await f.recheck(none);
  assert.deepEqual([announced.epoch, announced.done], [e0, false], 'a gc announced since is seen');
  assert.equal(f.safe(none, announced) && announced.epoch === none.epoch, false);
  const running = await f.recheck(announced);
  assert.deepEqual([running.epoch, running.done], [e0, false], 'a running epoch is looked at in full');
  await f.endEpoch(e0, {});
  const done = await f.observe();
  await f.beginEpoch();
  const next = await f.recheck(done);
  assert.deepEqual([next.epoch, next.done], [e0 + 1, false], 'the epoch after a done one is seen');
});

test("gc fence: write-behind's tags: a block it found before a whole gc run is not trusted after it; the seal uploads it again", async () => {
  const s = await setup(); // 100 KiB of two-day-old garbage: write-behind asks about it and finds it
  const e = writeBehindEnv(s.store);
  try {
    const ino = await newFile(e, 'reused.bin', s.garbage);
    await e.wb.idle();
    assert.equal(e.wb.blocksFound, 1, 'write-behind found the block in the store and did not upload it');
    assert.equal(storedOf(e.j.get(ino)?.content)?.epoch, null, 'tagged with the epoch its look saw: none yet');
    const g = await gcOrg(s.store, 'acme', { graceMs: DAY, keep: 20, dryRun: false, fence: { waitMs: 0 } });
    assert.equal(g.deletedObjects, 1, 'the gc deleted the block (nothing referenced it)');
    assert.equal(existsSync(blockPath(s)), false);
    await seal(e.deps(), 'sync'); // the first HEAD: looks afresh, sees epoch 0, checks the block and uploads it again
    assert.ok(existsSync(blockPath(s)), 'the seal uploaded the block again from the upper file');
    assert.deepEqual((await verifyHomes(s.store, s.objects, ['h'], { full: true })).problems, []);
  } finally {
    await e.close();
    await rm(s.work, { recursive: true, force: true });
  }
});

test("gc fence: write-behind's tags: with no gc announced since, a seal relies on them without asking", async () => {
  const s = await setup();
  const e = writeBehindEnv(s.store);
  try {
    await newFile(e, 'reused.bin', s.garbage);
    await e.wb.idle();
    e.puts.length = 0;
    const recording = new RecordingStore(s.store);
    const calls = recording.calls;
    await seal({ ...e.deps(), objects: new ObjectStore(recording, 'acme') }, 'sync');
    assert.deepEqual(calls.filter((c) => c.key === blockKey('acme', hashBuffer(s.garbage))), [], 'the seal neither asked about nor uploaded the tagged block');
    assert.deepEqual((await verifyHomes(s.store, s.objects, ['h'], { full: true })).problems, []);
  } finally {
    await e.close();
    await rm(s.work, { recursive: true, force: true });
  }
});

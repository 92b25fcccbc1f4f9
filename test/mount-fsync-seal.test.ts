/**
 * An fsync during a seal goes to the seal's log tail instead of waiting for the seal: through a
 * real mount whose HEAD writes are held back (HOMEFS_TEST_HEAD_DELAY_MS), an fsync returns while
 * `homefs sync` is still sealing, and what it returned for survives kill -9 whichever of the two landed
 * first: the segment alone (the seal never committed), or the segment and then the seal's HEAD. With block
 * writes held back (HOMEFS_TEST_BLOCK_DELAY_MS), an fsync of a file the seal is still uploading waits for
 * neither that upload nor the seal. The fencing race: a takeover while the old holder's seal has
 * passed its last look at its segments and waits for its HEAD write; the old holder's fsync fenced by the
 * claimant's tombstone fails, and its seal must then lose HEAD too, so nothing that fsync held is visible.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefs, homefsOk, sh, shOk } from './support/homefs-mount.js';

/** Long enough that a sync's seal is surely still waiting for its HEAD when the fsync is made. */
const HEAD_DELAY_MS = 6_000;
/** How long after `homefs sync` starts the fsync is made (the seal has captured by then; its HEAD waits). */
const SEAL_RUNNING_MS = 2_000;

const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

/**
 * These mounts test exactly which of a seal's and the log's writes an fsync waits for: nothing else may
 * write to the store meanwhile (no write-behind, no protection runs; those have tests of their own).
 */
const ONLY_FSYNC = ['--no-write-behind', '--protect-interval', '0'];

const WRITE_FSYNC = `python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644); os.write(fd, sys.argv[2].encode()); os.fsync(fd); os.close(fd)'`;

function writeFsync(file: string, text: string): Promise<string> {
  return shOk(`${WRITE_FSYNC} ${file} '${text}'`);
}

/** A mount whose daemon delays every HEAD write; a first sealed generation with the log on. */
async function slowHeadMount(name: string): Promise<{ h: TestHome; mnt: string }> {
  const h = new TestHome('acme', name);
  homes.push(h);
  process.env.HOMEFS_TEST_HEAD_DELAY_MS = String(HEAD_DELAY_MS);
  try {
    const mnt = await h.mount({ extra: ONLY_FSYNC });
    await writeFsync(`${mnt}/base`, 'sealed first');
    return { h, mnt };
  } finally {
    delete process.env.HOMEFS_TEST_HEAD_DELAY_MS;
  }
}

/** A fresh host takes the home over (the old daemon was killed): each file reads as expected, then it sleeps. */
async function takeoverReads(h: TestHome, expect: Array<[file: string, text: string, why: string]>): Promise<void> {
  const mnt2 = await h.mount({ host: 'host2', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  for (const [file, text, why] of expect) assert.equal(readFileSync(path.join(mnt2, file), 'utf8'), text, why);
  await h.sleep(mnt2);
}

/** HEAD generations of the home in its file:// store. */
function heads(h: TestHome): number {
  return readdirSync(path.join(h.root, 'store', h.org, 'homes', h.home, 'heads')).length;
}

/** Starts `homefs sync` of a new unsynced file, then (while its seal waits for HEAD) writes + fsyncs `file`. */
async function fsyncDuringSync(h: TestHome, mnt: string, file: string, text: string): Promise<Promise<unknown>> {
  const before = heads(h);
  await shOk(`mkdir -p ${mnt}/d/e && printf unsynced > ${mnt}/d/e/plain`);
  let syncDone = false;
  const sync = homefs(['sync', mnt], { timeoutMs: 120_000 }).finally(() => {
    syncDone = true;
  });
  await new Promise((r) => setTimeout(r, SEAL_RUNNING_MS));
  assert.equal(syncDone, false, 'the sync is still sealing (its HEAD is held back)');
  await writeFsync(file, text);
  assert.equal(heads(h), before, 'the fsync returned while the seal still waited for its HEAD: it did not wait behind the seal');
  return sync;
}

test('an fsync during a seal returns before the seal; kill -9 before the seal lands keeps it', async () => {
  const { h, mnt } = await slowHeadMount('tail1');
  const sync = await fsyncDuringSync(h, mnt, `${mnt}/d/e/fsynced`, 'fsynced during the seal');
  await h.kill9(mnt);
  await sync;
  await takeoverReads(h, [['d/e/fsynced', 'fsynced during the seal', 'replayed from the segment'], ['base', 'sealed first', 'the sealed base']]);
});

test('an fsync during a seal that then lands: readers and a fresh host after kill -9 see the fsync (the log tail)', async () => {
  const { h, mnt } = await slowHeadMount('tail2');
  const sync = await fsyncDuringSync(h, mnt, `${mnt}/d/e/fsynced`, 'fsynced during the seal');
  await sync; // the seal's HEAD has landed; the fsync'd file is not in its snapshot, only in the tail segment
  const store = ['--store', h.storeUrl];
  assert.equal(await homefsOk(['cat', h.ref, 'd/e/fsynced', ...store]), 'fsynced during the seal', 'a reader sees the tail');
  await h.kill9(mnt);
  await takeoverReads(h, [['d/e/fsynced', 'fsynced during the seal', 'replayed from the tail'], ['d/e/plain', 'unsynced', 'and what the seal holds']]);
});

/** Block objects in the home's file:// store. */
function blockCount(h: TestHome): number {
  const dir = path.join(h.root, 'store', h.org, 'blocks');
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}

test('an fsync of a file the running seal is still uploading waits for neither the upload nor the seal', async () => {
  const h = new TestHome('acme', 'upload1');
  homes.push(h);
  process.env.HOMEFS_TEST_BLOCK_DELAY_MS = '8000';
  let mnt: string;
  try {
    mnt = await h.mount({ extra: ONLY_FSYNC });
  } finally {
    delete process.env.HOMEFS_TEST_BLOCK_DELAY_MS;
  }
  await writeFsync(`${mnt}/base`, 'sealed first'); // a seal: the log starts with the first sealed generation
  await shOk(`printf 'as the seal captured it' > ${mnt}/big`);
  const blocks = blockCount(h);
  let syncDone = false;
  const sync = homefs(['sync', mnt], { timeoutMs: 120_000 }).finally(() => {
    syncDone = true;
  });
  await new Promise((r) => setTimeout(r, SEAL_RUNNING_MS));
  await writeFsync(`${mnt}/big`, 'rewritten while the seal uploads it');
  assert.equal(blockCount(h), blocks, 'the fsync returned before the seal uploaded the file: it did not wait for that upload');
  assert.equal(syncDone, false, 'nor for the seal');
  await h.kill9(mnt);
  await sync;
  await takeoverReads(h, [['big', 'rewritten while the seal uploads it', 'replayed from the segment'], ['base', 'sealed first', 'the sealed base']]);
});

/** Log entries of the home in its file:// store: each generation's directory, with its tombstones and segments. */
function logEntries(h: TestHome): Array<{ file: string; tombstone: boolean }> {
  const dir = path.join(h.root, 'store', h.org, 'homes', h.home, 'log');
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => {
    const file = path.join(e.parentPath, e.name);
    return { file, tombstone: readFileSync(file).subarray(0, 4).toString('latin1') === 'HFTB' };
  });
}

/** Held back this long: the old holder's HEAD write; the claimant's block uploads (its replay) longer still. */
const OLD_HEAD_DELAY_MS = 12_000;
const CLAIMANT_BLOCK_DELAY_MS = 25_000;

test("the fencing race: a takeover's tombstone lands after the old holder's seal looked at its segments; that seal loses HEAD and the fenced fsync stays invisible", async () => {
  const h = new TestHome('acme', 'race1');
  homes.push(h);
  let mnt = await h.mount({ extra: ONLY_FSYNC });
  await writeFsync(`${mnt}/base`, 'sealed first');
  await h.sleep(mnt);
  process.env.HOMEFS_TEST_HEAD_DELAY_MS = String(OLD_HEAD_DELAY_MS);
  try {
    mnt = await h.mount({ extra: ONLY_FSYNC }); // the same state directory wakes: the old holder, whose HEAD writes are held back
  } finally {
    delete process.env.HOMEFS_TEST_HEAD_DELAY_MS;
  }
  const logged = `fsynced before the takeover ${'x'.repeat(70_000)}`; // large enough for a block of its own
  await writeFsync(`${mnt}/logged`, logged);
  await shOk(`printf 'captured by the seal; its fsync is fenced' > ${mnt}/victim`);
  const segDir = path.dirname(logEntries(h).find((e) => !e.tombstone)?.file ?? '');
  assert.notEqual(segDir, '.', 'the fsync wrote a log segment');
  const tombstonesBefore = logEntries(h).filter((e) => e.tombstone).length;
  // The old holder seals: it captures `victim`, finds its segments settled and unfenced, and waits for its HEAD write.
  let syncDone = false;
  const sync = homefs(['sync', mnt], { timeoutMs: 120_000 }).finally(() => {
    syncDone = true;
  });
  await new Promise((r) => setTimeout(r, SEAL_RUNNING_MS));
  // A fresh host takes over; its replay's block uploads are held back (main advanced HEAD only after them).
  process.env.HOMEFS_TEST_BLOCK_DELAY_MS = String(CLAIMANT_BLOCK_DELAY_MS);
  const mnt2 = h.mountpoint('claimant');
  const claimant = h.mount({ host: 'host2', mnt: mnt2, extra: ['--takeover'] });
  delete process.env.HOMEFS_TEST_BLOCK_DELAY_MS;
  claimant.catch(() => undefined);
  const claimed = (): boolean => logEntries(h).filter((e) => e.tombstone && path.dirname(e.file) === segDir).length > tombstonesBefore;
  for (let i = 0; i < 200 && !claimed(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(claimed(), "the claimant's tombstone landed in the old holder's log");
  // The old holder fsyncs the file its seal captured: that segment hits the tombstone.
  const fenced = await sh(`${WRITE_FSYNC} ${mnt}/victim 'captured by the seal; its fsync is fenced'`);
  assert.equal(syncDone, false, "the old holder's seal was still waiting for its HEAD write when its fsync was fenced");
  assert.notEqual(fenced.code, 0, "the fenced holder's fsync fails");
  const synced = await sync;
  await claimant;
  assert.equal(readFileSync(path.join(mnt2, 'logged'), 'utf8'), logged, "what the old holder fsync'd is replayed");
  assert.equal(readFileSync(path.join(mnt2, 'base'), 'utf8'), 'sealed first');
  assert.equal(existsSync(path.join(mnt2, 'victim')), false, 'a file whose fsync failed is not visible');
  assert.notEqual(synced.code, 0, "the old holder's seal fails too: the claimant took HEAD's next generation first");
  const listing = await homefsOk(['ls', h.ref, '--store', h.storeUrl]);
  assert.doesNotMatch(listing, /victim/, 'nor to a reader of the store');
  await h.kill9(mnt);
  await h.sleep(mnt2);
});

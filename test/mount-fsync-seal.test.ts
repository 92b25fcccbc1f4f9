/**
 * An fsync during a seal goes to the seal's log tail instead of waiting for the seal (issue 12): through a
 * real mount whose HEAD writes are held back (HOMEFS_TEST_HEAD_DELAY_MS), an fsync returns while
 * `homefs sync` is still sealing, and what it returned for survives kill -9 whichever of the two landed
 * first: the segment alone (the seal never committed), or the segment and then the seal's HEAD. With block
 * writes held back (HOMEFS_TEST_BLOCK_DELAY_MS), an fsync of a file the seal is still uploading waits for
 * neither that upload nor the seal.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefs, homefsOk, shOk } from './support/homefs-mount.js';

/** Long enough that a sync's seal is surely still waiting for its HEAD when the fsync is made. */
const HEAD_DELAY_MS = 6_000;
/** How long after `homefs sync` starts the fsync is made (the seal has captured by then; its HEAD waits). */
const SEAL_RUNNING_MS = 2_000;

const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

function writeFsync(file: string, text: string): Promise<string> {
  return shOk(`python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644); os.write(fd, sys.argv[2].encode()); os.fsync(fd); os.close(fd)' ${file} '${text}'`);
}

/** A mount whose daemon delays every HEAD write; a first sealed generation with the log on. */
async function slowHeadMount(name: string): Promise<{ h: TestHome; mnt: string }> {
  const h = new TestHome('acme', name);
  homes.push(h);
  process.env.HOMEFS_TEST_HEAD_DELAY_MS = String(HEAD_DELAY_MS);
  try {
    const mnt = await h.mount();
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
    mnt = await h.mount();
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

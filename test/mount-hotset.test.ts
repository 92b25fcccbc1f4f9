/**
 * The hot set through real mounts: a session's reads are recorded at sleep with a wake
 * pack; a fresh host streams them into its cache and pulls at most 1.5x the bytes it touches; with the
 * record or the pack missing, damaged or of an unknown version, a fresh host still serves correct bytes;
 * gc never deletes the record or the pack and does not keep alive what they name.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefsOk, shOk } from './support/homefs-mount.js';
import { decodeHotSet } from '../src/transfer/hotset.js';
import { blockKey, hotsetKey, wakePackKey } from '../src/store/keys.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { testS3Url } from './support/s3.js';

const hashOf = (base64: string): string => hashBuffer(Buffer.from(base64, 'base64'));

const h = new TestHome('acme', 'hot');
let storeDir: string;
let recordFile: string;
let packFile: string;
/** The agent's session: a note, a grep through a repo, a large file. Prints what it read. */
const SESSION = 'cat notes.md && grep -rn needle repo | sort && sha256sum big.bin';
let expected: string;
let hostNo = 0;

async function waitWarm(mnt: string): Promise<Record<string, number | boolean>> {
  for (let i = 0; i < 600; i++) {
    const s = await h.status(mnt);
    const warm = (s.hotset as { warm: Record<string, number | boolean> | null }).warm;
    if (warm?.done) return warm;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the hot-set warm-up did not finish');
}

/** A fresh host wakes, runs the session, checks the bytes, sleeps; returns its warm-up report and status. */
async function freshWake(extra: string[] = []): Promise<{ warm: Record<string, number | boolean>; status: Record<string, unknown> }> {
  const mnt = await h.mount({ host: `fresh${hostNo++}`, extra });
  try {
    const warm = await waitWarm(mnt);
    assert.equal(await shOk(`cd ${mnt} && ${SESSION}`), expected, 'the mount serves the pushed bytes');
    return { warm, status: await h.status(mnt) };
  } finally {
    await h.sleep(mnt);
  }
}

before(async () => {
  storeDir = h.storeUrl.slice('file://'.length);
  recordFile = path.join(storeDir, hotsetKey('acme', 'hot'));
  packFile = path.join(storeDir, wakePackKey('acme', 'hot'));
  await shOk(`mkdir -p ${h.root}/src && cd ${h.root}/src && python3 - <<'PY'
import os, random
random.seed(7)
with open("notes.md", "w") as f: f.write("# notes\\nresume the port of the parser\\n")
for d in range(4):
    os.makedirs(f"repo/pkg{d}", exist_ok=True)
    for i in range(25):
        with open(f"repo/pkg{d}/m{i}.ts", "w") as f:
            body = "".join(random.choice("abcdefghij \\n") for _ in range(random.randint(500, 20000)))
            f.write(body + ("\\nneedle %d %d\\n" % (d, i) if i % 3 == 0 else "\\n"))
os.makedirs("other", exist_ok=True)
for i in range(40):
    with open(f"other/x{i}.bin", "wb") as f: f.write(os.urandom(30000))
with open("big.bin", "wb") as f: f.write(os.urandom(12 * 1024 * 1024))
PY`);
  await homefsOk(['push', path.join(h.root, 'src'), h.ref, '--store', h.storeUrl], { timeoutMs: 120_000 });
  expected = await shOk(`cd ${h.root}/src && ${SESSION}`);
});
after(async () => {
  await h.cleanup();
});

test('sleep records the session in first-access order with a wake pack of its small objects', async () => {
  const mnt = await h.mount({ host: 'recorder' });
  const warm = await waitWarm(mnt);
  assert.equal(warm.record, false, 'a home never mounted has no record');
  assert.equal(await shOk(`cd ${mnt} && ${SESSION}`), expected);
  await h.sleep(mnt);
  const rec = decodeHotSet(readFileSync(recordFile));
  assert.ok(rec.snapshot !== null && /^[0-9a-f]{64}$/.test(rec.snapshot));
  assert.equal(rec.entries[0]?.kind, 'meta', 'the root tree is read first');
  const blocks = rec.entries.filter((e) => e.kind === 'block');
  // notes.md, 100 repo files, 3 blocks of big.bin; other/ was never read
  assert.equal(blocks.length, 1 + 100 + 3);
  assert.equal(blocks.filter((e) => e.packed).length, 101, 'small blocks are packed, 4 MiB blocks are not');
  assert.equal(rec.packBytes, readFileSync(packFile).length);
  assert.equal(new Set(rec.entries.map((e) => `${e.kind}/${e.hash}`)).size, rec.entries.length, 'each object once');
});

/** Every packed block came from the wake pack; packed trees may have come from the namespace pack first. */
function assertFromPack(warm: Record<string, number | boolean>, rec: ReturnType<typeof decodeHotSet>): void {
  const packed = rec.entries.filter((e) => e.packed);
  const blocks = packed.filter((e) => e.kind === 'block').length;
  const n = Number(warm.fromPack);
  assert.ok(n >= blocks && n <= packed.length, `${n} objects from the wake pack, of ${packed.length} packed (${blocks} blocks)`);
}

test('a fresh host takes the hot set from the pack and pulls at most 1.5x the bytes it touches', async () => {
  const rec = decodeHotSet(readFileSync(recordFile));
  const { warm, status } = await freshWake();
  assert.equal(warm.record, true);
  assertFromPack(warm, rec);
  assert.equal(warm.packRejected, 0);
  const fetched = Number(status.bytesFetched);
  const touched = Number(status.bytesTouched);
  assert.ok(touched > 12 * 1024 * 1024, `touched ${touched}`);
  assert.ok(fetched <= 1.5 * touched, `pulled ${fetched} bytes for ${touched} touched`);
});

test('a fresh read-only mount warms from the record and the pack too, and leaves both as they were', async () => {
  const record = readFileSync(recordFile);
  const pack = readFileSync(packFile);
  const rec = decodeHotSet(record);
  const { warm } = await freshWake(['--read-only']);
  assert.equal(warm.record, true);
  assertFromPack(warm, rec);
  assert.equal(warm.packRejected, 0);
  assert.ok(readFileSync(recordFile).equals(record) && readFileSync(packFile).equals(pack), 'a read-only session records nothing');
});

test('a damaged wake pack is rejected object by object and the objects are fetched instead', async () => {
  const pack = readFileSync(packFile);
  for (let i = 100; i < pack.length; i += 4096) pack[i] = (pack[i] ?? 0) ^ 0xff;
  writeFileSync(packFile, pack);
  const { warm } = await freshWake();
  assert.equal(warm.record, true);
  assert.ok(Number(warm.packRejected) > 0, 'damaged objects were detected');
  // the sleep wrote a good pack again
  assert.equal((await freshWake()).warm.packRejected, 0);
});

test('a missing wake pack: every packed object is fetched on its own', async () => {
  rmSync(packFile);
  const { warm } = await freshWake();
  assert.equal(warm.record, true);
  assert.equal(warm.fromPack, 0);
  assert.ok(Number(warm.packRejected) > 100);
  assert.ok(existsSync(packFile), 'the sleep wrote the pack again');
});

test('a record that is damaged, of an unknown version, or missing is ignored', async () => {
  const good = readFileSync(recordFile);
  const hostile = Buffer.from(good);
  hostile[4] = 9; // version 9
  writeFileSync(recordFile, hostile);
  assert.equal((await freshWake()).warm.record, false);
  const truncated = readFileSync(recordFile).subarray(0, 60);
  writeFileSync(recordFile, truncated);
  assert.equal((await freshWake()).warm.record, false);
  rmSync(recordFile);
  assert.equal((await freshWake()).warm.record, false);
  assert.ok(existsSync(recordFile), 'the sleep wrote a record again');
});

test('a pack whose objects were swapped for other well-formed objects serves nothing wrong', async () => {
  // Same length, valid objects of the home, in the wrong places: every hash check fails.
  const rec = decodeHotSet(readFileSync(recordFile));
  const pack = readFileSync(packFile);
  writeFileSync(packFile, Buffer.concat([pack.subarray(pack.length >> 1), pack.subarray(0, pack.length >> 1)]));
  const { warm } = await freshWake();
  assert.ok(Number(warm.packRejected) > 0);
  assert.ok(Number(warm.fromPack) < rec.entries.filter((e) => e.packed).length);
});

test('gc keeps the record and the pack, and does not keep alive the blocks they name', async () => {
  const mnt = await h.mount({ host: 'gc' });
  await shOk(`cat ${mnt}/other/x1.bin > /dev/null && rm ${mnt}/other/x1.bin`);
  await homefsOk(['sync', mnt]);
  await h.sleep(mnt);
  const rec = decodeHotSet(readFileSync(recordFile));
  const gone = rec.entries.find((e) => e.kind === 'block' && e.size === 30000);
  assert.ok(gone, 'the record names the deleted file\'s block');
  await homefsOk(['gc', '--org', 'acme', '--grace', '0s', '--keep', '1', '--fence-wait', '0s', '--store', h.storeUrl], { timeoutMs: 60_000 });
  assert.equal(existsSync(path.join(storeDir, blockKey('acme', gone.hash))), false, 'gc deleted the unreferenced block');
  assert.ok(existsSync(recordFile) && existsSync(packFile), 'gc keeps the record and the pack');
  const { warm } = await freshWake();
  assert.equal(warm.record, true);
});

test('a seal records the hot set too, so a session killed before its sleep still leaves one', async () => {
  const mnt = await h.mount({ host: 'crash' });
  await waitWarm(mnt);
  await shOk(`cat ${mnt}/other/x2.bin > /dev/null && echo changed > ${mnt}/new.txt`);
  await homefsOk(['sync', mnt]);
  const x2 = hashOf(await shOk(`cat ${h.root}/src/other/x2.bin | base64 -w0`));
  const current = (): ReturnType<typeof decodeHotSet> => (existsSync(recordFile) ? decodeHotSet(readFileSync(recordFile)) : { snapshot: null, packBytes: 0, entries: [] });
  let rec = current();
  for (let i = 0; i < 200 && !rec.entries.some((e) => e.hash === x2); i++) {
    await new Promise((r) => setTimeout(r, 50));
    rec = current();
  }
  assert.ok(rec.entries.some((e) => e.hash === x2), 'the record written after the seal names the block read');
  assert.equal(rec.packBytes, 0, 'a seal writes no pack');
  await h.kill9(mnt);
  const { warm } = await freshWake(['--takeover']); // the killed daemon's lease is still live
  assert.equal(warm.record, true);
});

test('S3: a fresh host over the test Ceph takes the hot set from the pack with ranged GETs', async () => {
  const s3 = new TestHome('acme', 'hots3', await testS3Url());
  try {
    await homefsOk(['push', path.join(h.root, 'src'), s3.ref, '--store', s3.storeUrl], { timeoutMs: 120_000 });
    let mnt = await s3.mount({ host: 'first' });
    assert.equal(await shOk(`cd ${mnt} && ${SESSION}`), expected);
    await s3.sleep(mnt);
    mnt = await s3.mount({ host: 'second' });
    let warm: Record<string, unknown> | null = null;
    for (let i = 0; i < 600 && !warm?.done; i++) {
      warm = ((await s3.status(mnt)).hotset as { warm: Record<string, unknown> | null }).warm;
      if (!warm?.done) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(warm?.record, true);
    assert.ok(Number(warm?.fromPack) > 100, `objects from the pack: ${String(warm?.fromPack)}`);
    assert.equal(warm?.packRejected, 0);
    assert.equal(await shOk(`cd ${mnt} && ${SESSION}`), expected);
    await s3.sleep(mnt);
  } finally {
    await s3.cleanup();
  }
});

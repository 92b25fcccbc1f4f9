/**
 * A mount's cold reads from the push pack (home/packreads.ts) through real mounts over the test Ceph: a
 * fresh host that greps a pushed home takes its small blocks from pack windows instead of one GET each,
 * and with the pack damaged or gone it serves the same bytes from blocks/.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { TestHome, homefsOk, shOk } from './support/homefs-mount.js';
import { testS3Url } from './support/s3.js';
import { openStore } from '../src/store/open.js';
import { hotsetKey, pushPackKey, wakePackKey } from '../src/store/keys.js';

const SESSION = 'cat notes.md && grep -rn needle repo | sort && find repo -type f | sort | xargs cat | sha256sum';
const local = new TestHome('acme', 'prsrc');
let s3: TestHome;
let expected = '';

interface PackReport { state: string; served: number; rejected: number; windows: number }

/**
 * A fresh host mounts, waits for the pack index (or its absence), runs the session; returns the pack's
 * report. The previous session's hot set is deleted first: its wake pack would serve the same reads.
 */
async function freshSession(host: string): Promise<PackReport> {
  const store = await openStore(s3.storeUrl, { write: true });
  try {
    for (const key of [hotsetKey('acme', 'packreads'), wakePackKey('acme', 'packreads')]) await store.delete(key);
  } finally {
    await store.close();
  }
  const mnt = await s3.mount({ host });
  try {
    let report: PackReport | null = null;
    for (let i = 0; i < 400; i++) {
      report = (await s3.status(mnt)).pushpack as PackReport | null;
      if (report && report.state !== 'loading') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(await shOk(`cd ${mnt} && ${SESSION}`), expected, 'the mount serves the pushed bytes');
    return (await s3.status(mnt)).pushpack as PackReport;
  } finally {
    await s3.sleep(mnt);
  }
}

before(async () => {
  s3 = new TestHome('acme', 'packreads', await testS3Url());
  const src = path.join(local.root, 'src');
  await shOk(`mkdir -p ${src} && cd ${src} && python3 - <<'PY'
import os, random
random.seed(11)
with open("notes.md", "w") as f: f.write("# notes\\nthe pack serves cold reads\\n")
for d in range(5):
    os.makedirs(f"repo/pkg{d}/sub", exist_ok=True)
    for i in range(30):
        words = [random.choice(["alpha", "beta", "needle", "gamma"]) for _ in range(400 + i * 20)]
        with open(f"repo/pkg{d}/f{i:02}.txt", "w") as f: f.write(" ".join(words))
        with open(f"repo/pkg{d}/sub/g{i:02}.txt", "w") as f: f.write(f"{d} {i} needle\\n" * (i + 1))
PY`);
  expected = await shOk(`cd ${src} && ${SESSION}`);
  await homefsOk(['push', src, s3.ref, '--store', s3.storeUrl], { timeoutMs: 120_000 });
});

after(async () => {
  await s3?.cleanup();
  await local.cleanup();
});

test('S3: a fresh host greps a pushed home through pack windows, bytes right', async () => {
  const r = await freshSession('first');
  assert.equal(r.state, 'ready');
  assert.ok(r.served > 250, `blocks served from the pack: ${r.served}`);
  assert.ok(r.windows < r.served / 4, `windows ${r.windows} for ${r.served} blocks`);
  assert.equal(r.rejected, 0);
});

test('S3: with the pack damaged, then gone, a fresh host serves the same bytes from blocks/', async () => {
  const store = await openStore(s3.storeUrl, { write: true });
  try {
    const key = pushPackKey('acme', 'packreads');
    const pack = await store.get(key);
    const bad = Buffer.from(pack);
    for (let i = pack.length - 4096; i < pack.length; i++) bad[i] = (bad[i] as number) ^ 0x5a; // the last blocks' bytes
    await store.put(key, bad);
    const damaged = await freshSession('second');
    assert.equal(damaged.state, 'ready');
    assert.ok(damaged.rejected > 0, 'the damaged blocks were rejected, not served');
    await store.delete(key);
    const gone = await freshSession('third');
    assert.equal(gone.state, 'none');
    assert.equal(gone.served, 0);
  } finally {
    await store.close();
  }
});

/**
 * Lazy wake and store outages: a fresh host mounting a 1 GiB home fetches only what
 * it reads (plus metadata and the readahead bound); with the store gone, cached files stay readable,
 * uncached reads fail with EIO quickly, the daemon stays up, and everything resumes when the store returns.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefs, homefsOk, sh, shOk } from './support/homefs-mount.js';

let h: TestHome;
const MiB = 1024 * 1024;

function storeBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, name.name);
    total += name.isDirectory() ? storeBytes(p) : statSync(p).size;
  }
  return total;
}

before(async () => {
  h = new TestHome('acme', 'lazy');
  // 500 files of 2 MiB in 10 directories (1000 MiB) and one 64 MiB file
  await shOk(`mkdir -p ${h.root}/src && cd ${h.root}/src && python3 - <<'PY'
import os
for d in range(10):
    os.makedirs(f"d{d}", exist_ok=True)
    for f in range(50):
        with open(f"d{d}/f{f}.bin", "wb") as fh:
            fh.write(os.urandom(2 * 1024 * 1024))
with open("large.bin", "wb") as fh:
    fh.write(os.urandom(64 * 1024 * 1024))
PY`, { timeoutMs: 300_000 });
  await homefsOk(['push', path.join(h.root, 'src'), h.ref, '--store', h.storeUrl], { timeoutMs: 300_000 });
});
after(async () => {
  await h.cleanup();
});

test('a fresh host reading 3 files of a 1 GiB home fetches only those files and the metadata', async () => {
  const mnt = await h.mount({ host: 'fresh' });
  // All metadata: the trees and snapshots, and the namespace pack that holds the trees again with an index.
  const storeDir = h.storeUrl.slice('file://'.length);
  const meta = storeBytes(path.join(storeDir, 'acme', 'meta')) + statSync(path.join(storeDir, 'acme', 'homes', 'lazy', 'NSPACK')).size;
  const atMount = Number((await h.status(mnt)).bytesFetched);
  assert.ok(atMount <= meta, `mounting fetched ${atMount} bytes, more than all metadata (${meta})`);
  const sums = await shOk(`cd ${mnt} && sha256sum d0/f1.bin d5/f7.bin d9/f49.bin`);
  assert.equal(sums, await shOk(`cd ${h.root}/src && sha256sum d0/f1.bin d5/f7.bin d9/f49.bin`));
  const fetched = Number((await h.status(mnt)).bytesFetched);
  assert.ok(fetched >= 3 * 2 * MiB, `fetched ${fetched}`);
  assert.ok(fetched <= 3 * 2 * MiB + meta, `fetched ${fetched} bytes for 6 MiB of files + ${meta} of metadata`);

  // 1 MiB from the start of a 64 MiB file: the first block plus at most the readahead window (4 blocks)
  await shOk(`head -c 1048576 ${mnt}/large.bin > /dev/null`);
  const afterLarge = Number((await h.status(mnt)).bytesFetched) - fetched;
  assert.ok(afterLarge >= 4 * MiB && afterLarge <= 5 * 4 * MiB, `reading 1 MiB of a large file fetched ${afterLarge}`);
  await h.sleep(mnt);
});

test('store gone: cached files readable, uncached reads fail with EIO in bounded time, all resumes after', async () => {
  const mnt = await h.mount({ host: 'outage' });
  const storeDir = h.storeUrl.slice('file://'.length);
  await shOk(`cat ${mnt}/d1/f1.bin > /dev/null`);
  renameSync(storeDir, `${storeDir}.away`);
  try {
    // This file's pages only: a global drop_caches would also drop the dentries of mounts other tests hold.
    await shOk(`dd if=${mnt}/d1/f1.bin iflag=nocache count=0 status=none`);
    const cached = await sh(`cat ${mnt}/d1/f1.bin | sha256sum`);
    assert.equal(cached.code, 0, cached.stderr);
    assert.equal(cached.stdout, await shOk(`cat ${h.root}/src/d1/f1.bin | sha256sum`));
    const t0 = Date.now();
    const miss = await sh(`cat ${mnt}/d2/f2.bin > /dev/null`, { timeoutMs: 120_000 });
    assert.notEqual(miss.code, 0);
    assert.match(miss.stderr, /Input\/output error/);
    assert.ok(Date.now() - t0 < 90_000, 'EIO within the retry deadline');
    await shOk(`echo during-outage > ${mnt}/new.txt`);
    const sync = await homefs(['sync', mnt]);
    assert.notEqual(sync.code, 0, 'a seal cannot succeed without the store');
    assert.equal((await h.status(mnt)).state === 'active' || (await h.status(mnt)).state === 'parked', true, 'daemon still up');
  } finally {
    renameSync(`${storeDir}.away`, storeDir);
  }
  assert.equal(await shOk(`sha256sum < ${mnt}/d2/f2.bin`), await shOk(`sha256sum < ${h.root}/src/d2/f2.bin`));
  const snap = (await homefsOk(['sync', mnt])).trim();
  assert.match(snap, /^[0-9a-f]{64}$/);
  assert.equal(await shOk(`cat ${mnt}/new.txt`), 'during-outage\n');
  await h.sleep(mnt);
});

/**
 * A full local disk under the state directory: writes fail with ENOSPC (not EIO), the daemon stays up,
 * and what was written before is still there and still seals.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { TestHome, homefsOk, sh, shOk } from './support/homefs-mount.js';

let h: TestHome;
let small: string;
before(() => {
  h = new TestHome('acme', 'diskfull');
  small = h.tmpfs('small', '8m');
});
after(() => h.cleanup());

test('writes past a full state directory fail with ENOSPC and the home keeps working', async () => {
  const mnt = h.mountpoint();
  await homefsOk(['mount', h.ref, mnt, '--store', h.storeUrl, '--state-dir', path.join(small, 'state'), '--cache-dir', path.join(h.root, 'cache')]);
  h.mounts.add(mnt);
  await shOk(`echo kept > ${mnt}/kept.txt`);
  const r = await sh(`head -c 20000000 /dev/zero > ${mnt}/big.bin`);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /No space left on device/);
  await shOk(`rm -f ${mnt}/big.bin`);
  assert.equal(await shOk(`cat ${mnt}/kept.txt`), 'kept\n');
  assert.match((await homefsOk(['sync', mnt])).trim(), /^[0-9a-f]{64}$/);
  assert.equal((await h.status(mnt)).state === 'asleep', false);
});

test('cleanup unmounts a scratch tmpfs even while a daemon still has its state and log on it', async () => {
  const t = new TestHome('acme', 'tmpfs-cleanup');
  try {
    const dir = t.tmpfs('small', '8m');
    const mnt = t.mountpoint();
    await homefsOk(['mount', t.ref, mnt, '--store', t.storeUrl, '--state-dir', path.join(dir, 'state'), '--cache-dir', path.join(t.root, 'cache')]);
    t.mounts.add(mnt);
    await shOk(`echo x > ${mnt}/x.txt`);
    await t.cleanup();
    const mounted = (await shOk('cat /proc/self/mountinfo')).split('\n').filter((l) => l.includes(t.root));
    assert.deepEqual(mounted, []);
  } finally {
    await t.cleanup();
  }
});

/**
 * A full local disk under the state directory: writes fail with ENOSPC (not EIO), the daemon stays up,
 * and what was written before is still there and still seals.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefsOk, sh, shOk } from './support/homefs-mount.js';

let h: TestHome;
let small: string;
before(async () => {
  h = new TestHome('acme', 'diskfull');
  small = path.join(h.root, 'small');
  mkdirSync(small);
  await shOk(`mount -t tmpfs -o size=8m tmpfs ${small}`);
});
after(async () => {
  await h.cleanup();
  await sh(`umount ${small}`);
});

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

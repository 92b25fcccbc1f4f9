/**
 * The mounted home on the Ceph S3 store (a real RGW on 127.0.0.1): the agent workloads, kill -9 and a
 * remount on the same state directory, a fresh host taking over, and a second mount refused by the lease.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, homefs, shOk } from './support/homefs-mount.js';
import { testS3Url } from './support/s3.js';
import { checkWorkloads, gitWorkload, sqliteWorkload, tarWorkload } from './support/workloads.js';

let h: TestHome;
let mnt: string;
before(async () => {
  h = new TestHome('acme', 's3home', await testS3Url());
  // sqlite fsyncs on every commit: the workloads run with --fsync local; the crash test below checks
  // --fsync store on its own mount.
  mnt = await h.mount({ extra: ['--fsync', 'local'] });
});
after(async () => {
  await h.cleanup();
});

test('S3: git, tar round trip and sqlite inside the mount', async () => {
  await gitWorkload(h, mnt);
  await tarWorkload(h, mnt);
  await sqliteWorkload(h, mnt);
});

test('S3: a second read-write mount is refused while the lease is live', async () => {
  const d = h.hostDirs('intruder');
  const r = await homefs(['mount', h.ref, h.mountpoint('intruder'), '--store', h.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /mounted read-write/);
});

test('S3: kill -9, remount on the same state dir, then a fresh host takes over and sees everything', async () => {
  await shOk(`cd ${mnt} && echo before-kill > local.txt`);
  await h.kill9(mnt);
  mnt = await h.mount({ mnt, extra: ['--fsync', 'store'] });
  assert.equal(await shOk(`cat ${mnt}/local.txt`), 'before-kill\n', 'same state dir: everything written before the kill');
  await shOk(`cd ${mnt} && printf fsynced > f.txt && python3 -c "import os; fd=os.open('f.txt', os.O_RDONLY); os.fsync(fd)"`);
  await h.kill9(mnt);
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.equal(await shOk(`cat ${fresh}/f.txt ${fresh}/local.txt`), 'fsyncedbefore-kill\n', 'fresh host: every fsync under --fsync store');
  await checkWorkloads(fresh);
  await h.sleep(fresh);
});

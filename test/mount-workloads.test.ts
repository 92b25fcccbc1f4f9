/**
 * Real agent workloads inside a mounted home on the file store: git, a 5,000-file
 * tar round trip and sqlite, each checked again from a fresh host. The S3 variant is mount-s3.test.ts.
 */
import { after, before, test } from 'node:test';
import { TestHome } from './support/homefs-mount.js';
import { checkWorkloads, gitWorkload, sqliteWorkload, tarWorkload } from './support/workloads.js';

let h: TestHome;
let mnt: string;
before(async () => {
  h = new TestHome('acme', 'work');
  mnt = await h.mount();
});
after(async () => {
  await h.cleanup();
});

test('git clone of a local repo, commit, gc and git fsck are clean inside the mount', () => gitWorkload(h, mnt));
test('tar x of a 5,000-file archive and tar c back are byte-identical', () => tarWorkload(h, mnt));
test('sqlite: 1,000 transactions in WAL mode, then integrity_check ok', () => sqliteWorkload(h, mnt));
test('a fresh host sees all of it after sleep', async () => {
  await h.sleep(mnt);
  await checkWorkloads(await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh') }));
});

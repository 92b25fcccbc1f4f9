/**
 * A home woken on another host shows the same st_ino for the same file (trees record the numbers a mount
 * serves: model/inos.ts). git's index records st_ino: with numbers that change at every wake, `git status`
 * on a fresh host takes every tracked file for modified and reads all of them from the store.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, shOk } from './support/homefs-mount.js';

const h = new TestHome('acme', 'inos');
after(() => h.cleanup());

test('a file keeps its inode number across hosts, and git status on a fresh host reads no file content', async () => {
  const mnt1 = await h.mount({ host: 'one' });
  await shOk(`cd ${mnt1} && mkdir -p repo/src && cd repo && git init -q && for i in $(seq 1 150); do head -c 20000 /dev/urandom | base64 > src/f$i.txt; done && ln src/f1.txt hard && git add -A && git -c user.email=a@b -c user.name=a commit -qm init`);
  // Files created in a session get numbers of the created range, which the seal records: their creator and
  // every host after it serve the same ones.
  const stat = (mnt: string): Promise<string> => shOk(`cd ${mnt}/repo && stat -c '%i %n' src/f2.txt src/f150.txt hard . src && ls -i src | sed -n '2,4p'`);
  const first = await stat(mnt1);
  await h.sleep(mnt1);

  const mnt2 = await h.mount({ host: 'two' });
  assert.equal(await stat(mnt2), first, 'the creator\'s inode numbers on the next host');
  assert.equal((await shOk(`cd ${mnt2}/repo && git status --porcelain`)).trim(), '', 'nothing changed');
  const before = await stat(mnt2);
  await h.sleep(mnt2);

  const mnt3 = await h.mount({ host: 'three' });
  assert.equal(await stat(mnt3), before, 'the same inode numbers on another host');
  const fetched0 = Number((await h.status(mnt3)).bytesFetched);
  assert.equal((await shOk(`cd ${mnt3}/repo && git status --porcelain`)).trim(), '', 'nothing changed');
  const fetched = Number((await h.status(mnt3)).bytesFetched) - fetched0;
  // The index and git's metadata, not the ~4 MB of tracked sources.
  assert.ok(fetched < 1_000_000, `git status on a fresh host fetched ${fetched} bytes`);
  await h.sleep(mnt3);
});

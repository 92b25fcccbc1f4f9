/**
 * Directory loads held in memory (inodes/loads.ts) and kill -9: on a fresh host a `find` loads every
 * directory without writing the journal; changes made after it (a new file deep down, a chmod of a loaded
 * file and of a loaded directory, a rename across directories, a removal, a hard link) survive a kill -9
 * of the daemon, and the remount on the same state directory serves the same tree, numbers included.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, shOk } from './support/homefs-mount.js';

let h: TestHome;
before(() => {
  h = new TestHome('acme', 'loads');
});
after(async () => {
  await h.cleanup();
});

const listing = (mnt: string): Promise<string> => shOk(`cd ${mnt} && find . -printf '%p %y %m %n %s %i\\n' | sort && cat a/b/c/new d/moved d/hard`);

test('changes after in-memory directory loads survive kill -9', async () => {
  const first = await h.mount();
  await shOk(`cd ${first} && mkdir -p a/b/c d e/f && for i in 1 2 3; do echo $i > a/b/c/f$i; echo $i > e/f/g$i; done
    echo top > t && echo dd > d/x && ln d/x e/linked`);
  await h.sleep(first);

  const mnt = await h.mount({ host: 'fresh' });
  assert.match(await shOk(`find ${mnt} | wc -l`), /^1[0-9]\n$/);
  await shOk(`cd ${mnt} && echo new > a/b/c/new && chmod 600 a/b/c/f1 && chmod 700 e/f && mv a/b/c/f2 d/moved &&
    rm e/f/g3 && ln e/linked d/hard`);
  const want = await listing(mnt);
  await h.kill9(mnt);
  const again = await h.mount({ host: 'fresh', mnt });
  assert.equal(await listing(again), want);
  await h.sleep(again);
});

/**
 * The git-index prefetch through a real mount over the test Ceph (the agent resuming on a fresh host): on a fresh host
 * the first lookup of a repo's `.git/index` prefetches the small tracked files of its work tree that git
 * will read (their stat data differs from the index's: here a copied repo), so reading them afterwards
 * needs no store fetch, and git sees the pushed repo clean.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { TestHome, homefsOk, shOk } from './support/homefs-mount.js';
import { testS3Url } from './support/s3.js';

let h: TestHome;

before(async () => {
  h = new TestHome('acme', 'git', await testS3Url());
  await shOk(`mkdir -p ${h.root}/src/repo && cd ${h.root}/src/repo && git init -q && for d in a b c; do mkdir -p $d/x;
    for i in $(seq 1 20); do echo "$d $i" > $d/f$i.txt; echo "$d x $i" > $d/x/g$i.txt; done; done && echo untracked > ../notes.md &&
    git add -A && git -c user.name=t -c user.email=t@e commit -qm init && cd .. && cp -a repo copy && rm -rf repo && mv copy repo`);
  // A repo whose index matches its files (as an agent's own git status keeps it): 30 files of 5,000 bytes.
  await shOk(`mkdir -p ${h.root}/src/fresh && cd ${h.root}/src/fresh && git init -q && for i in $(seq 1 30); do head -c 3750 /dev/urandom | base64 -w0 > f$i.txt; done &&
    sleep 1.1 && git add -A && git -c user.name=t -c user.email=t@e commit -qm init && git update-index -q --refresh`);
  // A copied repo (new inode numbers and ctimes: its index no longer matches, as for one sealed before trees
  // recorded inode numbers): git status reads every tracked file, so the prefetch has work to do.
  // No push pack: these checks are of the git-index prefetch, which the pack's windows would pre-empt.
  await homefsOk(['push', path.join(h.root, 'src'), h.ref, '--store', h.storeUrl, '--no-pack'], { timeoutMs: 120_000 });
});
after(async () => {
  await h.cleanup();
});

async function settledMisses(mnt: string): Promise<{ misses: number; fetched: number }> {
  let last = -1;
  for (let i = 0; i < 200; i++) {
    const s = await h.status(mnt);
    const fetched = Number(s.bytesFetched);
    if (fetched === last) return { misses: Number(s.cacheMisses), fetched };
    last = fetched;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error('the prefetch never settled');
}

test('without a lookup of .git/index nothing is prefetched (a first mount: no hot set yet)', async () => {
  const mnt = await h.mount({ host: 'other' });
  try {
    await shOk(`ls ${mnt}/repo/a > /dev/null`);
    const before = await settledMisses(mnt);
    await shOk(`cat ${mnt}/repo/a/f1.txt > /dev/null`);
    assert.equal(Number((await h.status(mnt)).cacheMisses), before.misses + 1, 'a cold read fetches');
  } finally {
    await h.sleep(mnt);
  }
});

test('the first lookup of .git/index prefetches the tracked files; reading them then fetches nothing', async () => {
  const mnt = await h.mount({ host: 'fresh' });
  try {
    await shOk(`stat ${mnt}/repo/.git/index > /dev/null`);
    await settledMisses(mnt);
    const files = (await shOk(`cd ${mnt}/repo && git ls-files`)).trim().split('\n'); // reads files of .git/ cold
    assert.equal(files.length, 120);
    const before = await settledMisses(mnt);
    const bodies = await shOk(`cd ${mnt}/repo && cat ${files.join(' ')}`);
    assert.equal(bodies.split('\n').filter((l) => l).length, 120);
    const afterRead = await h.status(mnt);
    assert.equal(Number(afterRead.cacheMisses), before.misses, 'every tracked file was prefetched');
    assert.equal(await shOk(`cd ${mnt}/repo && git status --porcelain`), '', 'git sees the pushed repo clean');
  } finally {
    await h.sleep(mnt);
  }
});

test('an index that matches: git status fetches no tracked file; the first cold read of one prefetches the others', async () => {
  const mnt = await h.mount({ host: 'matching' });
  try {
    await shOk(`stat ${mnt}/fresh/.git/index > /dev/null`);
    const start = await settledMisses(mnt);
    assert.equal(await shOk(`cd ${mnt}/fresh && git status --porcelain`), '', 'clean');
    const afterStatus = await settledMisses(mnt);
    assert.ok(afterStatus.fetched - start.fetched < 30_000, `git status fetched ${afterStatus.fetched - start.fetched} bytes: git's own files, not the 150 kB of tracked files`);
    await shOk(`cat ${mnt}/fresh/f7.txt > /dev/null`);
    const afterOne = await settledMisses(mnt);
    assert.equal(afterOne.misses, afterStatus.misses + 1, 'the first read is cold');
    assert.ok(afterOne.fetched - afterStatus.fetched >= 30 * 5000, 'it prefetched the other tracked files');
    await shOk(`cd ${mnt}/fresh && cat f*.txt > /dev/null`);
    assert.equal(Number((await h.status(mnt)).cacheMisses), afterOne.misses, 'reading them fetches nothing more');
  } finally {
    await h.sleep(mnt);
  }
});

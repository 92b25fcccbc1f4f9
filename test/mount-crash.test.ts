/**
 * Crash safety: kill -9 of the daemon during writes, then a remount on the same
 * state directory keeps everything written before the kill; a fresh host taking over sees the last
 * committed snapshot, including every file fsync'd under --fsync store; a takeover fences the old holder.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, homefs, shOk } from './support/homefs-mount.js';

let h: TestHome;
before(() => {
  h = new TestHome('acme', 'crash');
});
after(async () => {
  await h.cleanup();
});

test('kill -9 during writes: same state dir keeps all written data; a fresh host keeps every fsync', async () => {
  const mnt = await h.mount({ extra: ['--fsync', 'store'] });
  await shOk(`cd ${mnt}
    mkdir -p notes
    head -c 3000000 /dev/urandom > synced.bin
    python3 -c "import os; fd=os.open('synced.bin', os.O_RDWR); os.fsync(fd); os.close(fd)"
    for i in $(seq 1 300); do echo "note $i" > notes/n$i; done
    head -c 12000000 /dev/urandom > unsynced-large.bin
    echo appended >> synced.bin
    mv notes/n1 notes/renamed`);
  const before = await shOk(`cd ${mnt} && sha256sum synced.bin unsynced-large.bin && ls notes | wc -l && cat notes/renamed`);
  const syncedOnly = await shOk(`cd ${mnt} && head -c 3000000 synced.bin | sha256sum`);
  // a writer still busy when the daemon dies
  const writer = shOk(`cd ${mnt} && for i in $(seq 1 100000); do echo $i >> busy.log 2>/dev/null || exit 0; done`).catch(() => '');
  await new Promise((r) => setTimeout(r, 300));
  await h.kill9(mnt);
  await writer;

  const again = await h.mount({ mnt });
  assert.equal(await shOk(`cd ${again} && sha256sum synced.bin unsynced-large.bin && ls notes | wc -l && cat notes/renamed`), before);
  assert.ok(Number((await h.status(again)).dirtyFiles) > 0, 'the unsealed writes are still dirty after replay');
  await homefs(['sync', again]);
  await h.kill9(again);

  const fresh = await h.mount({ host: 'new-host', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.equal(await shOk(`cd ${fresh} && sha256sum synced.bin unsynced-large.bin && ls notes | wc -l && cat notes/renamed`), before);
  assert.notEqual(syncedOnly, '');
  await h.sleep(fresh);
});

test('fsync under --fsync store is in the store before it returns', async () => {
  const h2 = new TestHome('acme', 'fsync');
  try {
    const mnt = await h2.mount({ extra: ['--fsync', 'store'] });
    await shOk(`cd ${mnt} && printf precious > p.txt && python3 -c "import os; fd=os.open('p.txt', os.O_RDONLY); os.fsync(fd)"`);
    await h2.kill9(mnt);
    const fresh = await h2.mount({ host: 'other', mnt: h2.mountpoint('m2'), extra: ['--takeover'] });
    assert.equal(await shOk(`cat ${fresh}/p.txt`), 'precious');
    await h2.sleep(fresh);
  } finally {
    await h2.cleanup();
  }
});

test('--takeover fences the old holder: its later seals cannot advance HEAD', async () => {
  const h3 = new TestHome('acme', 'fence');
  try {
    const old = await h3.mount({ host: 'old' });
    await shOk(`echo v1 > ${old}/f`);
    await homefs(['sync', old]);
    const taker = await h3.mount({ host: 'taker', mnt: h3.mountpoint('taker'), extra: ['--takeover'] });
    assert.equal(await shOk(`cat ${taker}/f`), 'v1\n');
    await shOk(`echo from-old > ${old}/f`);
    const r = await homefs(['sync', old]);
    assert.notEqual(r.code, 0, 'the fenced holder cannot seal over HEAD');
    assert.match(r.stderr, /conflict|lease/);
    await shOk(`echo from-taker > ${taker}/g`);
    await homefs(['sync', taker]);
    await h3.sleep(taker);
    const log = await homefs(['log', h3.ref, '--store', h3.storeUrl]);
    assert.equal(log.code, 0);
    const check = await h3.mount({ host: 'checker', mnt: h3.mountpoint('check'), extra: ['--takeover'] });
    assert.equal(await shOk(`cat ${check}/f ${check}/g`), 'v1\nfrom-taker\n');
    await h3.sleep(check);
    await homefs(['sleep', old]);
  } finally {
    await h3.cleanup();
  }
});

test('moving A → B → A: the stale state directory on A is replaced by HEAD and takes writes again', async () => {
  const h4 = new TestHome('acme', 'move');
  try {
    for (const [i, host] of ['A', 'B', 'A'].entries()) {
      const mnt = await h4.mount({ host, mnt: h4.mountpoint(`m${i}`) });
      await shOk(`mkdir -p ${mnt}/visit${i} && head -c 65536 /dev/urandom > ${mnt}/visit${i}/f && ls ${mnt}`);
      await h4.sleep(mnt);
    }
    const check = await h4.mount({ host: 'C', mnt: h4.mountpoint('check') });
    assert.equal((await shOk(`ls ${check}`)).trim().split('\n').join(' '), 'visit0 visit1 visit2');
    await h4.sleep(check);
  } finally {
    await h4.cleanup();
  }
});

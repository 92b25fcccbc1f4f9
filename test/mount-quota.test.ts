/**
 * Size limits through a real mount: a truncate, fallocate or write past the
 * largest file a home holds answers EFBIG, never EIO (a write under the writeback cache: at fsync); a quota counts the home's file bytes exactly, so deleting frees
 * space again, before and after a seal, across a remount and after kill -9.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, homefsOk, sh, shOk } from './support/homefs-mount.js';

const h = new TestHome('acme', 'quota');
after(() => h.cleanup());

const MiB = 1024 * 1024;

/** Used bytes as statfs reports them (what df shows). */
async function used(mnt: string): Promise<number> {
  const out = await shOk(`python3 -c "import os; s=os.statvfs('${mnt}'); print((s.f_blocks - s.f_bfree) * s.f_frsize)"`);
  return Number(out.trim());
}

/** The errno name a Python call on the mount fails with, or 'ok'. */
async function errnoOf(py: string): Promise<string> {
  const r = await sh(`python3 -c "
import errno, os
try:
    ${py}
    print('ok')
except OSError as e:
    print(errno.errorcode[e.errno])
"`);
  return r.stdout.trim();
}

test('truncate and write past the largest file answer EFBIG', async () => {
  const mnt = await h.mount({ mnt: h.mountpoint('big') });
  await shOk(`touch ${mnt}/f`);
  assert.equal(await errnoOf(`os.truncate('${mnt}/f', 999999999999999)`), 'EFBIG');
  assert.equal(await errnoOf(`fd = os.open('${mnt}/f', os.O_WRONLY); os.ftruncate(fd, 999999999999999)`), 'EFBIG');
  assert.equal(await errnoOf(`fd = os.open('${mnt}/f', os.O_WRONLY); os.posix_fallocate(fd, 0, 2**41)`), 'EFBIG');
  // Under the writeback cache the kernel accepts the write into its page cache; the error arrives with fsync.
  assert.equal(await errnoOf(`fd = os.open('${mnt}/f', os.O_WRONLY); os.pwrite(fd, b'x', 2**40); os.fsync(fd)`), 'EFBIG');
  assert.equal(await errnoOf(`os.truncate('${mnt}/f', 2**30)`), 'ok', 'a 1 GiB sparse file is fine');
  assert.equal(Number(await shOk(`stat -c %s ${mnt}/f`)), 2 ** 30);
  await h.sleep(mnt);
});

test('a quota frees what is deleted: before and after a seal, across remount and kill -9', async () => {
  let mnt = await h.mount({ mnt: h.mountpoint('q'), extra: ['--quota', '10M'], ref: 'acme/quota2', host: 'q1' });
  // Under the writeback cache a write that passes the quota fails when the kernel writes it back: at fsync.
  const write8 = (name: string): Promise<string> => errnoOf(`f = open('${mnt}/${name}', 'wb'); f.write(b'x' * ${8 * MiB}); f.flush(); os.fsync(f.fileno())`);
  assert.equal(await write8('a'), 'ok');
  assert.ok((await used(mnt)) >= 8 * MiB);
  await shOk(`rm ${mnt}/a`);
  assert.ok((await used(mnt)) < MiB, `after rm: ${await used(mnt)} bytes used`);
  assert.equal(await write8('b'), 'ok', 'the space of a deleted file is free again');
  assert.equal(await write8('c'), 'ENOSPC', 'the quota still holds');
  await shOk(`rm -f ${mnt}/c`);

  await homefsOk(['sync', mnt]);
  await shOk(`rm ${mnt}/b`);
  await homefsOk(['sync', mnt]);
  assert.ok((await used(mnt)) < MiB, `after seal, rm, seal: ${await used(mnt)} bytes used`);
  assert.equal(await write8('d'), 'ok');
  await h.sleep(mnt);

  mnt = await h.mount({ mnt: h.mountpoint('q'), extra: ['--quota', '10M'], ref: 'acme/quota2', host: 'other' });
  const afterWake = await used(mnt);
  assert.ok(afterWake >= 8 * MiB && afterWake < 9 * MiB, `a fresh host counts the sealed bytes exactly: ${afterWake}`);
  await shOk(`rm ${mnt}/d`);
  assert.equal(await write8('e'), 'ok');
  await h.kill9(mnt);

  mnt = await h.mount({ mnt: h.mountpoint('q'), extra: ['--quota', '10M'], ref: 'acme/quota2', host: 'other' });
  const afterKill = await used(mnt);
  assert.ok(afterKill >= 8 * MiB && afterKill < 9 * MiB, `unsealed bytes count after kill -9: ${afterKill}`);
  assert.equal(await write8('f'), 'ENOSPC');
  await shOk(`rm ${mnt}/e`);
  assert.equal(await write8('f'), 'ok');
  await h.sleep(mnt);
});

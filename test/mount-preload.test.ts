/**
 * Small files go into the kernel's page cache at their first open for reading (fs/preload.ts), through
 * real mounts: the reader's read then sends no READ (homefs_fuse_ops_total), and what it reads is the
 * file. Checked for an inline file (the writeback path keeps new small files in their records), for
 * sealed files whose blocks are in the cache directory of a remount, and for a block file of a file://
 * store; not for a file another open holds, nor past the size limit; and the bytes stay right after a write.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefsOk, shOk } from './support/homefs-mount.js';
import { PRELOAD_MAX } from '../src/fs/preload.js';
import { testS3Url } from './support/s3.js';

const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

async function reads(mnt: string): Promise<number> {
  const text = await homefsOk(['status', mnt, '--metrics']);
  return Number(/^homefs_fuse_ops_total\{op="read"[^}]*\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

async function preloaded(h: TestHome, mnt: string): Promise<{ files: number; bytes: number }> {
  return ((await h.status(mnt)).fuse as { preloaded: { files: number; bytes: number } }).preloaded;
}

/** `cat` of each path in one process each, through python so that nothing else opens them. */
async function readAll(mnt: string, names: string[]): Promise<string[]> {
  const out = await shOk(`cd ${mnt} && python3 -c "
import sys, hashlib
for n in sys.argv[1:]:
    with open(n, 'rb') as f: print(hashlib.sha256(f.read()).hexdigest())
" ${names.join(' ')}`);
  return out.trim().split('\n');
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

test('an inline file is read from the page cache its open filled; a write after it reads back right', async () => {
  const h = new TestHome('acme', 'inline');
  homes.push(h);
  const mnt = await h.mount({ extra: ['--fuse-passthrough', 'off', '--fsync', 'local'] });
  const small = randomBytes(5000);
  writeFileSync(path.join(h.root, 'small'), small);
  // Written through the mount (kept in the daemon's record: a new file of at most 8 KiB), then its pages
  // dropped from the kernel's cache, so that a read must either ask or find what an open put there.
  await shOk(`python3 -c "
import os
fd = os.open('${mnt}/a', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, open('${h.root}/small', 'rb').read())
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
"`);
  const r0 = await reads(mnt);
  assert.deepEqual(await readAll(mnt, ['a']), [sha(small)]);
  assert.equal(await reads(mnt), r0, 'no READ: the open put the file in the page cache');
  assert.equal((await preloaded(h, mnt)).files, 1);
  await shOk(`printf xyz | dd of=${mnt}/a bs=1 seek=10 conv=notrunc status=none`);
  const changed = Buffer.from(small);
  changed.write('xyz', 10);
  assert.deepEqual(await readAll(mnt, ['a']), [sha(changed)], 'the write is seen');
  await h.sleep(mnt);
});

test("a remount preloads sealed files from its cache; not a writer's open, a held file or a large one", async () => {
  const h = new TestHome('acme', 'sealed', await testS3Url()); // (small blocks of a file:// store skip the cache directory)
  homes.push(h);
  const src = path.join(h.root, 'src');
  mkdirSync(src);
  const files: Record<string, Buffer> = { s1: randomBytes(20_000), s2: randomBytes(30_000), s3: randomBytes(100), big: randomBytes(PRELOAD_MAX + 1) };
  for (const [n, b] of Object.entries(files)) writeFileSync(path.join(src, n), b);
  await homefsOk(['push', src, h.ref, '--store', h.storeUrl, '--no-pack']);
  // The first mount fetches every block into the cache directory; the remount (same host) finds them there.
  let mnt = await h.mount();
  await readAll(mnt, Object.keys(files));
  await h.sleep(mnt);
  mnt = await h.mount();
  // (the cache's files in the kernel's caches, as a remount right after finds them: read at once)
  await shOk(`find ${h.hostDirs('host1').cache} -type f -exec cat {} + > /dev/null`);
  const r0 = await reads(mnt);
  assert.deepEqual(await readAll(mnt, ['s1', 's2']), [sha(files.s1 as Buffer), sha(files.s2 as Buffer)]);
  assert.equal(await reads(mnt), r0, 'no READ for sealed files whose blocks the cache has');
  assert.deepEqual(await readAll(mnt, ['big']), [sha(files.big as Buffer)]);
  assert.ok((await reads(mnt)) > r0, 'a file past the limit is read on demand');
  // s3 held open (O_DIRECT: not preloaded itself) while another open reads it: not preloaded, read right.
  const held = await shOk(`cd ${mnt} && python3 -c "
import hashlib, os
fd = os.open('s3', os.O_RDONLY | os.O_DIRECT)
with open('s3', 'rb') as g: print(hashlib.sha256(g.read()).hexdigest())
os.close(fd)
"`);
  assert.equal(held.trim(), sha(files.s3 as Buffer));
  assert.equal((await preloaded(h, mnt)).files, 2, 's1 and s2 only');
  await h.sleep(mnt);
});

test("a file:// store's own files serve the preload: no cache directory needed", async () => {
  const h = new TestHome('acme', 'local');
  homes.push(h);
  const src = path.join(h.root, 'src');
  mkdirSync(src);
  const body = randomBytes(12_345);
  writeFileSync(path.join(src, 'note.md'), body);
  await homefsOk(['push', src, h.ref, '--store', h.storeUrl]);
  const mnt = await h.mount();
  await shOk(`find ${path.join(h.root, 'store')} -type f -exec cat {} + > /dev/null`); // (in the kernel's caches)
  const r0 = await reads(mnt);
  assert.deepEqual(await readAll(mnt, ['note.md']), [sha(body)]);
  assert.equal(await reads(mnt), r0, "no READ: the open read the block from the store's file at once");
  assert.equal((await preloaded(h, mnt)).files, 1);
  await h.sleep(mnt);
});

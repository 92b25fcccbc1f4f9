/**
 * Pull's batched file writes and metadata (transfer/filewriter.ts over the homefs_files addon): contents,
 * modes and nanosecond times land as asked (times before 1970 too), many files in few batches, a failed
 * file fails `drain` with a Node-style errno error while the others are written, nothing is written
 * through a symlink, and `setMeta` sets a symlink's times without following it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileWriter, setMeta } from '../src/transfer/filewriter.js';

let work = '';
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'homefs-filewriter-'));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

test('FileWriter: 2,000 files with their bytes, modes and nanosecond times; progress per file', async () => {
  const dir = join(work, 'many');
  await mkdir(dir);
  let written = 0;
  let bytes = 0;
  const w = new FileWriter((n) => {
    written++;
    bytes += n;
  }, { parallel: 2, batchFiles: 300, batchBytes: 64 * 1024, maxQueuedBytes: 256 * 1024 });
  const expect: Array<{ name: string; data: Buffer; mode: number; mtimeNs: bigint }> = [];
  for (let i = 0; i < 2000; i++) {
    const data = Buffer.alloc(i % 7 === 0 ? 0 : 100 + (i % 50) * 97, i % 251);
    const mode = [0o644, 0o600, 0o755, 0o400, 0o4755][i % 5] as number;
    const mtimeNs = i % 3 === 0 ? -1_234_567_891n - BigInt(i) : 1_700_000_000_123_456_789n + BigInt(i) * 1_000_000_001n;
    expect.push({ name: `f${i}`, data, mode, mtimeNs });
    await w.write(join(dir, `f${i}`), data, { mode, mtimeNs });
  }
  await w.drain();
  assert.equal(written, 2000);
  assert.equal(bytes, expect.reduce((n, e) => n + e.data.length, 0));
  for (const e of expect) {
    const p = join(dir, e.name);
    const st = await lstat(p, { bigint: true }); // (before reading it: relatime would move the atime)
    assert.equal(Number(st.mode & 0o7777n), e.mode, `${e.name} mode`);
    assert.equal(st.mtimeNs, e.mtimeNs, `${e.name} mtime`);
    assert.equal(st.atimeNs, e.mtimeNs, `${e.name} atime`);
    assert.deepEqual(await readFile(p), e.data, e.name);
  }
});

test('FileWriter: without meta a file is 0600 with the time of its writing', async () => {
  const p = join(work, 'plain');
  const w = new FileWriter();
  const t0 = Date.now();
  await w.write(p, Buffer.from('x'));
  await w.drain();
  const st = await lstat(p);
  assert.equal(st.mode & 0o7777, 0o600);
  assert.ok(st.mtimeMs >= t0 - 1000, 'mtime not set');
});

test('FileWriter: an existing path or a symlink fails drain as EEXIST naming it; the other files are written', async () => {
  const dir = join(work, 'fail');
  await mkdir(dir);
  await writeFile(join(dir, 'taken'), 'old');
  await symlink(join(work, 'outside'), join(dir, 'link'));
  const w = new FileWriter();
  await w.write(join(dir, 'a'), Buffer.from('a'));
  await w.write(join(dir, 'taken'), Buffer.from('new'));
  await w.write(join(dir, 'link'), Buffer.from('through'));
  await w.write(join(dir, 'b'), Buffer.from('b'));
  await assert.rejects(w.drain(), (e: NodeJS.ErrnoException) => {
    assert.equal(e.code, 'EEXIST');
    assert.equal(e.syscall, 'open');
    assert.match(e.message, /^EEXIST: file already exists, open '.*\/taken'$/);
    return true;
  });
  assert.equal(await readFile(join(dir, 'taken'), 'utf8'), 'old', 'an existing file is not written');
  assert.deepEqual((await readdir(work)).includes('outside'), false, 'nothing written through the symlink');
  assert.equal(await readFile(join(dir, 'a'), 'utf8'), 'a');
  await assert.rejects(w.write(join(dir, 'c'), Buffer.from('c')), /EEXIST/, 'a writer that failed takes no more files');
});

test('FileWriter: a file in a missing directory is ENOENT', async () => {
  const w = new FileWriter();
  await w.write(join(work, 'nope', 'f'), Buffer.from('x'));
  await assert.rejects(w.drain(), { code: 'ENOENT', syscall: 'open' });
});

test('setMeta: modes and times of directories and files, a symlink\'s times without following it, errors named', async () => {
  const dir = join(work, 'meta');
  await mkdir(join(dir, 'sub'), { recursive: true });
  await writeFile(join(dir, 'target'), 't');
  await symlink('target', join(dir, 'ln'));
  const t = 1_600_000_000_987_654_321n;
  await setMeta([
    { path: join(dir, 'ln'), meta: { mtimeNs: t } },
    { path: join(dir, 'sub'), meta: { mode: 0o711, mtimeNs: t + 1n } },
    { path: join(dir, 'target'), meta: { mode: 0o640 } },
  ]);
  const ln = await lstat(join(dir, 'ln'), { bigint: true });
  assert.equal(ln.mtimeNs, t);
  const target = await lstat(join(dir, 'target'), { bigint: true });
  assert.notEqual(target.mtimeNs, t, 'the symlink was not followed');
  assert.equal(Number(target.mode & 0o7777n), 0o640);
  const sub = await lstat(join(dir, 'sub'), { bigint: true });
  assert.equal(Number(sub.mode & 0o7777n), 0o711);
  assert.equal(sub.mtimeNs, t + 1n);
  await assert.rejects(setMeta([{ path: join(dir, 'gone'), meta: { mode: 0o600 } }]), { code: 'ENOENT', syscall: 'chmod' });
});

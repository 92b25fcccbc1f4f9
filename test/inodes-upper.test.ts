/**
 * Upper files keep at most a few hundred fds open and close idle ones. A request must hold its fd from the
 * open to the end of its I/O: a fd closed under it fails with EBADF, or worse, its number is reused by the
 * next open and the request reads or writes another file. Small reads whose file is in the kernel's caches
 * are served at once, and must return what the pool would. A look at a file's size and times (what a
 * passthrough writer changed) sees what stat(2) sees, to the nanosecond.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpperFiles, timeNs } from '../src/inodes/upper.js';

test('hundreds of files read and written at once each get their own bytes while idle fds are closed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-upper-'));
  const upper = new UpperFiles(dir);
  try {
    const n = 700; // well past the idle-fd cap, so trims run while requests are in flight
    const body = (i: number): Buffer => Buffer.from(`file ${i} `.repeat(50));
    await Promise.all(Array.from({ length: n }, (_, i) => upper.write(i + 10, 0, body(i))));
    for (let round = 0; round < 3; round++) {
      const got = await Promise.all(Array.from({ length: n }, (_, i) => upper.read(i + 10, 0, body(i).length)));
      got.forEach((b, i) => assert.ok(b.equals(body(i)), `file ${i} read back another file's bytes`));
      await Promise.all(Array.from({ length: n }, (_, i) => upper.write(i + 10, 0, body(i))));
    }
  } finally {
    await upper.closeAll();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('small reads served from the kernel caches return the same bytes as the pool, zeros past the end of the upper file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-upper-'));
  let upper = new UpperFiles(dir);
  try {
    const body = Buffer.from('0123456789'.repeat(100));
    await upper.write(5, 0, body);
    assert.ok((await upper.read(5, 10, 20)).equals(body.subarray(10, 30)), 'an open file');
    await upper.closeAll();
    upper = new UpperFiles(dir); // no fd open: the name is looked up in the kernel's cache
    const now = upper.read(5, 990, 10);
    assert.notEqual(await Promise.race([now, Promise.resolve('pending')]), 'pending', 'served at once, not by the pool');
    assert.ok((await now).equals(body.subarray(990, 1000)));
    const past = await upper.read(5, 995, 20); // 5 bytes left in the upper file: the rest is a hole (zeros)
    assert.ok(past.subarray(0, 5).equals(body.subarray(995)));
    assert.ok(past.subarray(5).equals(Buffer.alloc(15)));
    const into = Buffer.alloc(64, 0xff);
    const got = await upper.read(5, 0, 8, into);
    assert.equal(got.buffer, into.buffer, 'read into the buffer given');
    assert.equal(got.toString(), '01234567');
    // A file never written: the pool creates it empty (as before), so its bytes are zeros.
    assert.ok((await upper.read(6, 0, 10)).equals(Buffer.alloc(10)));
  } finally {
    await upper.closeAll();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('statNow sees the size and times stat(2) sees, to the nanosecond, with and without an open fd', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-upper-'));
  let upper = new UpperFiles(dir);
  try {
    assert.equal(upper.statNow(3), undefined, 'no upper file');
    await upper.write(3, 0, Buffer.alloc(12345, 1));
    utimesSync(upper.path(3), 1_700_000_000.123456, 1_700_000_001.987654); // ns a double cannot hold exactly
    for (const open of [true, false]) {
      const st = upper.statNow(3);
      const ref = statSync(upper.path(3), { bigint: true });
      assert.ok(st, `statNow with ${open ? 'an open fd' : 'no fd'}`);
      assert.equal(st.size, 12345);
      assert.equal(timeNs(st.mtimeS, st.mtimeNsec), ref.mtimeNs);
      assert.equal(timeNs(st.ctimeS, st.ctimeNsec), ref.ctimeNs);
      await upper.closeAll();
      upper = new UpperFiles(dir);
    }
  } finally {
    await upper.closeAll();
    rmSync(dir, { recursive: true, force: true });
  }
});

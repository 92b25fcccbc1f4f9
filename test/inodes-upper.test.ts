/**
 * Upper files keep at most a few hundred fds open and close idle ones. A request must hold its fd from the
 * open to the end of its I/O: a fd closed under it fails with EBADF, or worse, its number is reused by the
 * next open and the request reads or writes another file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpperFiles } from '../src/inodes/upper.js';

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

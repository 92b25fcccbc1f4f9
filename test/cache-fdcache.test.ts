/**
 * The file handle cache behind disk range reads: handles are shared, bounded, and never closed under a
 * read in flight.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FdCache } from '../src/cache/fdcache.js';
import { preadRange } from '../src/cache/diskfiles.js';
import { withTempDir } from './support/cache-store.js';

test('a handle is shared while cached, closed only once dropped and released', async () => {
  await withTempDir(async (dir) => {
    const p = join(dir, 'f');
    await writeFile(p, 'hello world');
    const fds = new FdCache(2);
    const a = await fds.acquire('k', p);
    const b = await fds.acquire('k', p);
    assert.ok(a && b);
    assert.equal(a.fh, b.fh, 'one open file for one key');
    assert.equal(a.size, 11);
    fds.invalidate('k');
    a.release();
    assert.deepEqual(await preadRange(b.fh, b.size, 6, 100), Buffer.from('world'), 'still readable while in use');
    b.release();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(b.fh.fd, -1, 'closed after the last release');
    assert.equal(fds.size, 0);
    assert.equal(await fds.acquire('missing', join(dir, 'nope')), undefined);
  });
});

test('at most `max` handles stay open, least recently used closed first', async () => {
  await withTempDir(async (dir) => {
    const fds = new FdCache(2);
    const leases = [];
    for (const name of ['a', 'b', 'c']) {
      await writeFile(join(dir, name), name);
      const l = await fds.acquire(name, join(dir, name));
      assert.ok(l);
      l.release();
      leases.push(l);
    }
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(fds.size, 2);
    assert.equal(leases[0]?.fh.fd, -1);
    assert.notEqual(leases[2]?.fh.fd, -1);
    await fds.closeAll();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(leases[2]?.fh.fd, -1);
  });
});

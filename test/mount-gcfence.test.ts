/**
 * The gc/dedup race through a real mount and a real `homefs gc` process: a seal deduplicates a new file
 * against a block that has been garbage for two days while a gc is announced; the gc deletes the block; the
 * seal waits for the gc to end, finds the block gone, uploads it again from the mount's upper file, and only
 * then writes HEAD. The sealed home verifies complete.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hashBuffer } from '../src/hash/blake3.js';
import { ObjectStore } from '../src/format/objects.js';
import { FileStore } from '../src/store/file.js';
import { blockKey, gcEpochKey } from '../src/store/keys.js';
import { TestHome, homefs, homefsOk, shOk } from './support/homefs-mount.js';

const h = new TestHome('acme', 'gcrace');
after(() => h.cleanup());

test('a seal that overlaps a gc re-uploads the block the gc deleted and lands a complete snapshot', async () => {
  const mnt = await h.mount();
  await shOk(`echo first > ${mnt}/note.md`);
  await homefsOk(['sync', mnt]);

  const storeDir = h.storeUrl.slice('file://'.length);
  const garbage = randomBytes(100 * 1024);
  const hash = hashBuffer(garbage);
  const store = await new FileStore(storeDir).init();
  await new ObjectStore(store, 'acme').putBlock(hash, garbage);
  const blockFile = path.join(storeDir, blockKey('acme', hash));
  const old = new Date(Date.now() - 2 * 86_400_000);
  utimesSync(blockFile, old, old);
  const local = path.join(h.root, 'garbage.bin');
  writeFileSync(local, garbage);
  await shOk(`cp ${local} ${mnt}/copy.bin`);

  const gc = homefs(['gc', '--org', 'acme', '--grace', '24h', '--fence-wait', '5s', '--store', h.storeUrl], { timeoutMs: 60_000 });
  const epochFile = path.join(storeDir, gcEpochKey('acme', 0));
  for (let i = 0; i < 500 && !existsSync(epochFile); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(existsSync(epochFile), 'the gc announced its epoch');

  const snap = (await homefsOk(['sync', mnt], { timeoutMs: 60_000 })).trim();
  const g = await gc;
  assert.equal(g.code, 0, g.stderr);
  assert.match(g.stdout, /freed 100.0 KiB \(1 objects\)/, 'the gc deleted the reused block after the seal had checked it');
  assert.ok(existsSync(blockFile), 'the seal uploaded it again');
  assert.match(snap, /^[0-9a-f]{64}$/);
  const v = await homefs(['verify', h.ref, '--full', '--store', h.storeUrl]);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.equal((await shOk(`cmp ${local} ${mnt}/copy.bin && echo same`)).trim(), 'same');
  await store.close();
});

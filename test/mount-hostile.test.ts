/**
 * A hostile tree met while a mounted home loads a directory: the tree hashes right (so it is not corrupt
 * in transit) but does not decode (an entry name with a '/'). The directory answers EIO, the rest of the
 * home keeps working, and the daemon counts it as a corrupt object, not as a bug of its own.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hashBuffer } from '../src/hash/blake3.js';
import { encodeTree } from '../src/format/codec.js';
import { commitSnapshot } from '../src/format/commit.js';
import { readHead } from '../src/format/heads.js';
import { ObjectStore } from '../src/format/objects.js';
import { FileStore } from '../src/store/file.js';
import { metaKey } from '../src/store/keys.js';
import { TestHome, homefsOk, sh } from './support/homefs-mount.js';

let h: TestHome;

before(async () => {
  h = new TestHome('acme', 'hostile');
  const src = path.join(h.root, 'src');
  mkdirSync(path.join(src, 'sub'), { recursive: true });
  writeFileSync(path.join(src, 'ok.txt'), 'fine\n');
  writeFileSync(path.join(src, 'sub', 'x'), 'x\n');
  await homefsOk(['push', src, h.ref, '--store', h.storeUrl]);

  // A tree whose only entry is named "zz/marker": valid bytes except for the name, stored under its hash.
  const store = await new FileStore(path.join(h.root, 'store')).init();
  const objects = new ObjectStore(store, h.org);
  const good = encodeTree({ entries: [{ name: 'zz_marker', kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 0n, ctimeNs: 0n, blocks: [] }] });
  const at = good.indexOf('zz_marker');
  assert.ok(at > 0);
  const bad = Buffer.from(good);
  bad.write('zz/marker', at, 'utf8');
  const badHash = hashBuffer(bad);
  await store.put(metaKey(h.org, badHash), bad);

  const head = await readHead(store, h.org, h.home);
  assert.ok(head);
  const snap = await objects.getSnapshot(head.snapshot);
  const root = await objects.getTree(snap.root);
  const entries = root.entries.map((e) => (e.name === 'sub' ? { ...e, tree: badHash } : e));
  const rootHash = await objects.putTree({ entries });
  await commitSnapshot(objects, h.home, head.gen, { root: rootHash, parent: head.snapshot, stats: snap.stats, reason: 'test' });
  await store.close();
});

after(async () => {
  await h.cleanup();
});

test('a directory whose tree does not decode answers EIO and is counted as corrupt', async () => {
  const mnt = await h.mount();
  const ls = await sh(`ls ${mnt}/sub`);
  assert.notEqual(ls.code, 0, 'listing the hostile directory fails');
  assert.match(ls.stderr, /Input\/output error/);
  assert.equal((await sh(`cat ${mnt}/ok.txt`)).stdout, 'fine\n', 'the rest of the home is served');
  const metrics = await homefsOk(['status', mnt, '--metrics']);
  assert.match(metrics, /^homefs_errors_total\{kind="corrupt"[^}]*\} [1-9]/m);
  assert.doesNotMatch(metrics, /^homefs_errors_total\{kind="fuse"[^}]*\}/m, 'not reported as a bug of the daemon');
  await h.sleep(mnt);
});

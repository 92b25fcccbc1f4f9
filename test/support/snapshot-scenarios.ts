/**
 * The "Done when" scenarios for push/pull, written once against any Store so that the file store
 * test and the Ceph S3 test run exactly the same checks.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, unlinkSync } from 'node:fs';
import { chmod, link, lstat, mkdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_EXCLUDES } from '../../src/config.js';
import { blockKey, metaKey } from '../../src/store/keys.js';
import type { Store } from '../../src/store/store.js';
import { readHead } from '../../src/format/heads.js';
import { ObjectStore } from '../../src/format/objects.js';
import { pullSnapshot } from '../../src/transfer/pull.js';
import { pushDirectory } from '../../src/transfer/push.js';
import { fileContent, resolvePath } from '../../src/transfer/walk.js';
import { CorruptObjectError, HeadConflictError } from '../../src/util/errors.js';
import { describeTree, describeXattrs, FIFO_NAME, makeHomeTree } from './snapshot-tree.js';

const isRoot = process.getuid?.() === 0;
const scrap = (line: string): boolean => line.includes('__pycache__') || line.includes('.pyc');

async function countKeys(store: Store, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of store.list(prefix)) n++;
  return n;
}

/** push → pull bit for bit and metadata; re-push, second home and other org dedup; block layout. */
export async function roundTripScenario(store: Store, work: string, org: string, org2: string): Promise<void> {
  const src = join(work, 'src');
  await makeHomeTree(src, { chown: isRoot });
  await chmod(src, 0o750);
  const first = await pushDirectory(src, store, org, 'alice', { excludes: DEFAULT_EXCLUDES });
  assert.equal(first.gen, 0);
  assert.equal(first.parent, null);
  assert.equal(first.excluded, 2, 'the __pycache__ dir and x.pyc are excluded');
  assert.ok(first.blocksNew > 0 && first.blocksNew === first.blocks, `${first.blocksNew} new of ${first.blocks}`);
  assert.ok(first.bytesUploaded >= 28 * 1024 * 1024);

  const objects = new ObjectStore(store, org);
  const snap = await objects.getSnapshot(first.snapshot);
  const big = await resolvePath(objects, snap.root, 'big-20m.bin');
  assert.equal(big.entry?.blocks?.length, 5, 'a 20 MiB file is 5 blocks');
  assert.equal((await resolvePath(objects, snap.root, 'exact-8m.bin')).entry?.blocks?.length, 1, 'an 8 MiB file is 1 block');
  assert.equal((await resolvePath(objects, snap.root, 'empty1')).entry?.blocks?.length, 0);
  const hardA = (await resolvePath(objects, snap.root, 'hard-a')).entry;
  const hardB = (await resolvePath(objects, snap.root, 'projects/hard-b')).entry;
  assert.ok(hardA?.link !== undefined && hardA.link === hardB?.link);

  const out = join(work, 'out');
  await pullSnapshot(store, org, first.snapshot, out);
  execFileSync('diff', ['-r', '--no-dereference', '-x', FIFO_NAME, '-x', '__pycache__', '-x', '*.pyc', src, out]);
  assert.deepEqual(await describeTree(out), (await describeTree(src)).filter((l) => !scrap(l)));
  const [rootSrc, rootOut] = [await lstat(src, { bigint: true }), await lstat(out, { bigint: true })];
  assert.equal(rootOut.mode & 0o7777n, 0o750n, 'the root directory keeps its mode');
  assert.equal(rootOut.mtimeNs, rootSrc.mtimeNs, 'and its mtime');
  const xattrs = describeXattrs(out);
  assert.deepEqual(xattrs, describeXattrs(src).filter((l) => !scrap(l)));
  assert.ok(xattrs.some((l) => l.includes('user.origin')), 'xattrs were restored');
  assert.equal(readdirSync(work).filter((n) => n.includes('homefs-pull')).length, 0, 'no temporary directory left');

  const again = await pushDirectory(src, store, org, 'alice', { excludes: DEFAULT_EXCLUDES });
  assert.equal(again.blocksNew, 0, 're-push uploads 0 blocks');
  assert.equal(again.bytesUploaded, 0);
  assert.equal(again.gen, 1);
  assert.equal(again.parent, first.snapshot);
  assert.equal(again.filesReused, 50, 'files unchanged since HEAD are not read again (50 file inodes)');
  assert.equal(again.bytesHashed, 0);
  const rehashed = await pushDirectory(src, store, org, 'alice', { excludes: DEFAULT_EXCLUDES, rehash: true });
  assert.equal(rehashed.filesReused, 0);
  assert.equal(rehashed.bytesHashed, first.bytesHashed);
  assert.equal(rehashed.blocksNew, 0);

  const bob = await pushDirectory(src, store, org, 'bob', { excludes: DEFAULT_EXCLUDES });
  assert.equal(bob.blocksNew, 0, 'a second home with the same content in the same org uploads 0 blocks');
  assert.equal(bob.gen, 0);

  const other = await pushDirectory(src, store, org2, 'alice', { excludes: DEFAULT_EXCLUDES });
  assert.equal(other.blocksNew, first.blocksNew, 'another org stores its own copy');
  assert.equal(await countKeys(store, `${org2}/blocks/`), await countKeys(store, `${org}/blocks/`));
  const someBlock = big.entry?.blocks?.[0] as string;
  assert.equal((await store.has([blockKey(org2, someBlock)])).size, 1);
}

/** A file rewritten with the same size and its mtime set back is still noticed (ctime moved). */
export async function changeDetectionScenario(store: Store, work: string, org: string): Promise<void> {
  const src = join(work, 'chg');
  await mkdir(src, { recursive: true });
  const f = join(src, 'notes.txt');
  await writeFile(f, 'version one\n');
  const { mtime } = await stat(f);
  const first = await pushDirectory(src, store, org, 'chg', { xattrs: false });
  await new Promise((r) => setTimeout(r, 20));
  await writeFile(f, 'version two\n');
  await utimes(f, mtime, mtime);
  const second = await pushDirectory(src, store, org, 'chg', { xattrs: false });
  assert.equal(second.filesReused, 0);
  assert.notEqual(second.snapshot, first.snapshot);
  const objects = new ObjectStore(store, org);
  const entry = (await resolvePath(objects, (await objects.getSnapshot(second.snapshot)).root, 'notes.txt')).entry ?? assert.fail();
  const chunks: Buffer[] = [];
  for await (const c of fileContent(objects, entry, 'notes.txt')) chunks.push(c);
  assert.equal(Buffer.concat(chunks).toString(), 'version two\n');
  const third = await pushDirectory(src, store, org, 'chg', { xattrs: false });
  assert.equal(third.filesReused, 1);
  assert.equal(third.blocksNew, 0);
}

/** Files deleted between the scan and their reading (a live home) are left out, not fatal. */
export async function vanishingScenario(store: Store, work: string, org: string): Promise<void> {
  const src = join(work, 'live');
  await mkdir(src, { recursive: true });
  await writeFile(join(src, 'keep.txt'), 'keep\n');
  await writeFile(join(src, 'gone.tmp1'), 'gone\n');
  await writeFile(join(src, 'h1'), 'linked\n');
  await link(join(src, 'h1'), join(src, 'h2'));
  let deleted = false;
  const res = await pushDirectory(src, store, org, 'live', {
    xattrs: false,
    onProgress: (p) => {
      if (p.phase !== 'content' || deleted) return;
      deleted = true;
      unlinkSync(join(src, 'gone.tmp1'));
      unlinkSync(join(src, 'h1'));
    },
  });
  assert.ok(deleted);
  assert.equal(res.vanished, 2);
  assert.equal(res.files, 2);
  const objects = new ObjectStore(store, org);
  const root = (await objects.getSnapshot(res.snapshot)).root;
  assert.deepEqual((await objects.getTree(root)).entries.map((e) => e.name), ['h2', 'keep.txt']);
  const h2 = (await resolvePath(objects, root, 'h2')).entry ?? assert.fail();
  const chunks: Buffer[] = [];
  for await (const c of fileContent(objects, h2, 'h2')) chunks.push(c);
  assert.equal(Buffer.concat(chunks).toString(), 'linked\n');
}

/** A corrupted block makes pull and cat fail naming the path; nothing appears at the destination. */
export async function corruptionScenario(store: Store, work: string, org: string): Promise<void> {
  const src = join(work, 'csrc');
  await mkdir(join(src, 'docs'), { recursive: true });
  await writeFile(join(src, 'docs/report.txt'), 'the quarterly numbers\n');
  await writeFile(join(src, 'ok.txt'), 'fine\n');
  const res = await pushDirectory(src, store, org, 'corrupt', { xattrs: false });
  const objects = new ObjectStore(store, org);
  const snap = await objects.getSnapshot(res.snapshot);
  const entry = (await resolvePath(objects, snap.root, 'docs/report.txt')).entry;
  const hash = entry?.blocks?.[0] as string;
  await store.put(blockKey(org, hash), Buffer.from('the quarterly numbers, tampered\n'));

  const dest = join(work, 'cout');
  await assert.rejects(pullSnapshot(store, org, res.snapshot, dest), (e: unknown) => e instanceof CorruptObjectError && e.message.includes('docs/report.txt'));
  assert.equal(existsSync(dest), false, 'a failed pull leaves nothing at the destination');
  assert.equal(readdirSync(work).filter((n) => n.includes('homefs-pull')).length, 0);
  const read = async (): Promise<void> => {
    for await (const _ of fileContent(objects, entry ?? assert.fail(), 'docs/report.txt')) void _;
  };
  await assert.rejects(read(), (e: unknown) => e instanceof CorruptObjectError && e.message.includes('docs/report.txt'));

  // A well-formed block of another length is not this file's content: a tree claiming so is refused.
  const okHash = (await resolvePath(objects, snap.root, 'ok.txt')).entry?.blocks?.[0] as string;
  const lying = { ...(entry ?? assert.fail()), name: 'short.txt', size: 3, blocks: [okHash] };
  const root = await objects.putTree({ entries: [lying] });
  const id = await objects.putSnapshot({ ...snap, root, parent: res.snapshot });
  await assert.rejects(pullSnapshot(store, org, id, dest), /block .* of short\.txt holds 5 bytes where the snapshot expects 3/);
  assert.equal(existsSync(dest), false);
}

/** Two pushes from the same HEAD: one wins, one HeadConflictError, both snapshots' objects stay. */
export async function concurrentPushScenario(store: Store, work: string, org: string): Promise<void> {
  const a = join(work, 'ca');
  const b = join(work, 'cb');
  await mkdir(a, { recursive: true });
  await mkdir(b, { recursive: true });
  await writeFile(join(a, 'f'), 'from a\n');
  await writeFile(join(b, 'f'), 'from b\n');
  const base = await pushDirectory(a, store, org, 'race', { xattrs: false });
  const head = await readHead(store, org, 'race');
  assert.deepEqual(head, { gen: base.gen, snapshot: base.snapshot });
  await writeFile(join(a, 'g'), 'a again\n');
  const results = await Promise.allSettled([
    pushDirectory(a, store, org, 'race', { xattrs: false, fromHead: head }),
    pushDirectory(b, store, org, 'race', { xattrs: false, fromHead: head }),
  ]);
  const won = results.filter((r) => r.status === 'fulfilled');
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  assert.equal(won.length, 1, 'exactly one push wins');
  assert.equal(lost.length, 1);
  const err = lost[0]?.reason as unknown;
  assert.ok(err instanceof HeadConflictError, `loser gets HeadConflictError, got ${String(err)}`);
  assert.match(err.message, /conflict: HEAD of .*\/race moved/);
  const winner = (won[0] as PromiseFulfilledResult<{ snapshot: string; gen: number }>).value;
  assert.deepEqual(await readHead(store, org, 'race'), { gen: base.gen + 1, snapshot: winner.snapshot });
  const objects = new ObjectStore(store, org);
  for (const id of [winner.snapshot, err.snapshot]) {
    const s = await objects.getSnapshot(id);
    assert.equal(s.parent, base.snapshot);
    assert.equal((await store.has([metaKey(org, s.root)])).size, 1);
  }
  let conflicts = 0;
  for await (const o of store.list(`${org}/homes/race/conflicts/`)) {
    conflicts++;
    assert.equal((await store.get(o.key)).toString(), err.snapshot);
  }
  assert.equal(conflicts, 1, 'the losing snapshot is recorded under conflicts/');
}

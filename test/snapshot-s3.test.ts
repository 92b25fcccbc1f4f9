/**
 * The push/pull "Done when" scenarios against a real S3-compatible store: the single-node Ceph RGW of
 * test/support/s3.ts (each test on its own fresh prefix). Same checks as snapshot-roundtrip.test.ts, which
 * runs them against the file store; the HEAD race here proves create-if-absent on a real server. On S3,
 * push writes the push pack and pull takes the small blocks from it by default.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { pullSnapshot } from '../src/transfer/pull.js';
import { pushDirectory } from '../src/transfer/push.js';
import { testS3Url } from './support/s3.js';
import { concurrentPushScenario, corruptionScenario, roundTripScenario } from './support/snapshot-scenarios.js';

async function withS3(fn: (store: Store, work: string) => Promise<void>): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'homefs-snap-s3-'));
  const store = await openStore(await testS3Url(), { write: true });
  try {
    await fn(store, work);
  } finally {
    await store.close();
    await rm(work, { recursive: true, force: true });
  }
}

test('ceph s3: push → pull round trip, dedup, block layout', { timeout: 300_000 }, () => withS3((s, w) => roundTripScenario(s, w, 'acme', 'other')));
test('ceph s3: a corrupted block fails pull and cat naming the path', { timeout: 300_000 }, () => withS3((s, w) => corruptionScenario(s, w, 'acme')));
test('ceph s3: concurrent pushes from one HEAD, one conflict, both snapshots kept', { timeout: 300_000 }, () =>
  withS3((s, w) => concurrentPushScenario(s, w, 'acme')),
);
test('ceph s3: push writes the push pack, pull takes the small blocks from it', { timeout: 300_000 }, () =>
  withS3(async (store, work) => {
    const src = join(work, 'src');
    await mkdir(join(src, 'd'), { recursive: true });
    for (let i = 0; i < 20; i++) await writeFile(join(src, 'd', `f${i}`), `file ${i}\n`.repeat(i + 1));
    await writeFile(join(src, 'big'), Buffer.alloc(300 * 1024, 1));
    const pushed = await pushDirectory(src, store, 'acme', 'pp', { xattrs: false });
    assert.deepEqual([pushed.pushPack?.written, pushed.pushPack?.blocks], [true, 20]);
    const out = join(work, 'out');
    const pulled = await pullSnapshot(store, 'acme', pushed.snapshot, out, { home: 'pp', xattrs: false });
    execFileSync('diff', ['-r', src, out]);
    assert.deepEqual([pulled.pushPack.used, pulled.pushPack.blocks, pulled.pushPack.fallbacks, pulled.pushPack.requests], [true, 20, 0, 1]);
  }),
);

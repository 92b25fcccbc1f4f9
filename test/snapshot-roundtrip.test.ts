/**
 * push → pull against the file store (the embedded default): the "Done when" round trip, dedup,
 * block layout, corruption and the HEAD race. The same scenarios run against Ceph in snapshot-s3.test.ts.
 */
import { test } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStore } from '../src/store/file.js';
import { vanishingScenario, changeDetectionScenario, concurrentPushScenario, corruptionScenario, roundTripScenario } from './support/snapshot-scenarios.js';

async function withStore(fn: (store: FileStore, work: string) => Promise<void>): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'homefs-snap-'));
  const store = await new FileStore(join(work, 'store')).init();
  try {
    await fn(store, work);
  } finally {
    await store.close();
    await rm(work, { recursive: true, force: true });
  }
}

test('file store: push → pull round trip, dedup, block layout', () => withStore((s, w) => roundTripScenario(s, w, 'acme', 'other')));
test('file store: a rewritten file with its mtime set back is re-hashed', () => withStore((s, w) => changeDetectionScenario(s, w, 'acme')));
test('file store: files deleted during a push are left out', () => withStore((s, w) => vanishingScenario(s, w, 'acme')));
test('file store: a corrupted block fails pull and cat naming the path', () => withStore((s, w) => corruptionScenario(s, w, 'acme')));
test('file store: concurrent pushes from one HEAD, one conflict', () => withStore((s, w) => concurrentPushScenario(s, w, 'acme')));

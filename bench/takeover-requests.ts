/**
 * Store requests of one wake (`chooseBase`, home/base.ts) from a fresh state directory, counted by kind
 * (not a test): what a takeover's fence and log replay cost (issue 12, the fencing race). Scenarios over an
 * in-memory store holding one sealed HEAD (a snapshot with the log feature):
 * - `takeover, log empty`: `--takeover` (a claimant), nothing fsync'd since HEAD;
 * - `takeover, 1 segment`: a claimant, one segment of another host pending;
 * - `wake, log empty` and `wake, 1 segment`: the lease was released (not a claimant).
 * A wake that finds another host's expired lease is a claimant: it costs what a takeover does.
 *
 * Run: npm run -s build && node dist/bench/takeover-requests.js
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { chooseBase } from '../src/home/base.js';
import { homePaths } from '../src/home/paths.js';
import { advanceHead } from '../src/snapshot/heads.js';
import { ObjectStore } from '../src/snapshot/objects.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import { MemoryStore } from '../src/store/memory.js';
import type { ObjectInfo } from '../src/store/store.js';
import { putLogSnapshot, writeSegment } from '../test/support/logseed.js';

/** Counts requests as `op kind` (kind: heads, log, meta, block, other). */
class CountingStore extends ForwardingStore {
  readonly counts = new Map<string, number>();
  private count(op: string, key: string): void {
    const part = key.split('/');
    const kind = part[1] === 'homes' ? (part[3] ?? 'other') : (part[1] ?? 'other');
    const k = `${op} ${kind}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
  }
  override get(key: string): Promise<Buffer> {
    this.count('GET', key);
    return super.get(key);
  }
  override put(key: string, data: Buffer): Promise<void> {
    this.count('PUT', key);
    return super.put(key, data);
  }
  override putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    this.count('PUT-if-absent', key);
    return super.putIfAbsent(key, data);
  }
  override list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    this.count('LIST', prefix);
    return super.list(prefix, limit);
  }
}

const ORG = 'bench';
const HOME = 'alice';
/** A store with HEAD 0 (an empty root) and, if `pending`, one segment of log 0 written by another host. */
async function seeded(pending: boolean): Promise<MemoryStore> {
  const store = new MemoryStore();
  await advanceHead(store, ORG, HOME, null, await putLogSnapshot(store, ORG, HOME));
  if (pending) await writeSegment(store, ORG, HOME, 0, 0, 'old holder', 'fsync\'d by the old holder');
  return store;
}

async function wake(name: string, claimant: boolean, pending: boolean): Promise<void> {
  const store = new CountingStore(await seeded(pending));
  const dir = await mkdtemp(join(tmpdir(), 'homefs-takeover-requests-'));
  try {
    const paths = homePaths(ORG, HOME, join(dir, 'state'), join(dir, 'cache'));
    const choice = await chooseBase(new ObjectStore(store, ORG), ORG, HOME, paths, claimant, pino({ level: 'silent' }), () => Promise.resolve(), 'new host');
    await choice.journal.close();
    const total = [...store.counts.values()].reduce((a, b) => a + b, 0);
    const detail = [...store.counts.entries()].sort().map(([k, v]) => `${k} ${v}`).join(', ');
    console.log(`${name.padEnd(22)} ${String(total).padStart(3)} requests (${detail})`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await wake('takeover, log empty', true, false);
await wake('takeover, 1 segment', true, true);
await wake('wake, log empty', false, false);
await wake('wake, 1 segment', false, true);

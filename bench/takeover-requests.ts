/**
 * Store requests of one wake (`chooseBase`, home/base.ts) from a fresh state directory, counted by kind
 * (not a test): what a takeover's fence and log replay cost (the fencing race). Scenarios over an
 * in-memory store holding one sealed HEAD (a snapshot with the log feature):
 * - `takeover, log empty`: `--takeover` (a claimant), nothing fsync'd since HEAD;
 * - `takeover, 1 segment`: a claimant, one segment of another host pending;
 * - `wake, log empty` and `wake, 1 segment`: the lease was released (not a claimant).
 * A wake that finds another host's expired lease is a claimant: it costs what a takeover does. Each request
 * waits 20 ms, so the fastest of 5 wall times over 20 ms is about the round trips in sequence (plus local work).
 *
 * Run: npm run -s build && node dist/bench/takeover-requests.js
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { chooseBase } from '../src/home/base.js';
import { homePaths } from '../src/home/paths.js';
import { advanceHead } from '../src/format/heads.js';
import { ObjectStore } from '../src/format/objects.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import { MemoryStore } from '../src/store/memory.js';
import type { ObjectInfo } from '../src/store/store.js';
import { putLogSnapshot, writeSegment } from '../test/support/logseed.js';

/** A request's round trip in this bench: the wake's wall time over it is about its round trips in sequence. */
const RTT_MS = 20;
const rtt = (): Promise<void> => new Promise((r) => setTimeout(r, RTT_MS));

/** Counts requests as `op kind` (kind: heads, log, meta, block, other); each one waits `RTT_MS` first. */
class CountingStore extends ForwardingStore {
  readonly counts = new Map<string, number>();
  private async count(op: string, key: string): Promise<void> {
    const part = key.split('/');
    const kind = part[1] === 'homes' ? (part[3] ?? 'other') : (part[1] ?? 'other');
    const k = `${op} ${kind}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
    await rtt();
  }
  override async get(key: string): Promise<Buffer> {
    await this.count('GET', key);
    return super.get(key);
  }
  override async put(key: string, data: Buffer): Promise<void> {
    await this.count('PUT', key);
    return super.put(key, data);
  }
  override async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    await this.count('PUT-if-absent', key);
    return super.putIfAbsent(key, data);
  }
  override async *list(prefix: string, limit?: number): AsyncIterable<ObjectInfo> {
    await this.count('LIST', prefix);
    yield* super.list(prefix, limit);
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

/** One wake from a fresh state directory: its requests and its wall time. */
async function wakeOnce(claimant: boolean, pending: boolean): Promise<{ ms: number; counts: Map<string, number> }> {
  const store = new CountingStore(await seeded(pending));
  const dir = await mkdtemp(join(tmpdir(), 'homefs-takeover-requests-'));
  try {
    const paths = homePaths(ORG, HOME, join(dir, 'state'), join(dir, 'cache'));
    const started = performance.now();
    const choice = await chooseBase(new ObjectStore(store, ORG), ORG, HOME, paths, claimant, pino({ level: 'silent' }), () => Promise.resolve(), 'new host');
    const ms = performance.now() - started;
    await choice.journal.close();
    return { ms, counts: store.counts };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Prints the requests of one wake and its fastest wall time of 5 (in round trips). */
async function wake(name: string, claimant: boolean, pending: boolean): Promise<void> {
  const runs = [];
  for (let i = 0; i < 5; i++) runs.push(await wakeOnce(claimant, pending));
  const counts = runs[0]?.counts ?? new Map<string, number>();
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const detail = [...counts.entries()].sort().map(([k, v]) => `${k} ${v}`).join(', ');
  const ms = Math.min(...runs.map((r) => r.ms));
  console.log(`${name.padEnd(22)} ${String(total).padStart(3)} requests, ${(ms / RTT_MS).toFixed(1)} round trips of ${RTT_MS} ms (${detail})`);
}

await wake('takeover, log empty', true, false);
await wake('takeover, 1 segment', true, true);
await wake('wake, log empty', false, false);
await wake('wake, 1 segment', false, true);

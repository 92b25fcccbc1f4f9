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
import { hashBuffer } from '../src/hash/blake3.js';
import { chooseBase } from '../src/home/base.js';
import { homePaths } from '../src/home/paths.js';
import { encodeSnapshot, encodeTree } from '../src/snapshot/codec.js';
import { advanceHead } from '../src/snapshot/heads.js';
import { createEntry, encodeSegment } from '../src/snapshot/homelog.js';
import { ObjectStore } from '../src/snapshot/objects.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import { logKey, metaKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';
import type { ObjectInfo } from '../src/store/store.js';

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
const TIME = '2026-12-01T00:00:00.000Z';

/** A store with HEAD 0 (an empty root) and, if `pending`, one segment of log 0 written by another host. */
async function seeded(pending: boolean): Promise<MemoryStore> {
  const store = new MemoryStore();
  const put = async (data: Buffer): Promise<string> => {
    const id = hashBuffer(data);
    await store.put(metaKey(ORG, id), data);
    return id;
  };
  const emptyRoot = await put(encodeTree({ entries: [] }));
  const head = await put(encodeSnapshot({ root: emptyRoot, parent: null, home: `${ORG}/${HOME}`, time: TIME, host: 'h', stats: { files: 0, dirs: 1, bytes: 0 }, features: ['log'] }));
  await advanceHead(store, ORG, HOME, null, head);
  if (pending) {
    const data = Buffer.from('fsync\'d by the old holder');
    const bh = hashBuffer(data);
    const tree = encodeTree({ entries: [{ name: 'f', kind: 'file', mode: 0o644, uid: 0, gid: 0, size: data.length, mtimeNs: 1n, ctimeNs: 1n, blocks: [bh] }] });
    const snap = encodeSnapshot({ root: hashBuffer(tree), parent: head, home: `${ORG}/${HOME}`, time: TIME, host: 'h', stats: { files: 1, dirs: 1, bytes: data.length }, features: ['log'] });
    const seg = encodeSegment({
      home: `${ORG}/${HOME}`, gen: 0, seq: 0, writer: 'old holder', snapshot: hashBuffer(snap), time: TIME, chain: [],
      objects: [{ kind: 'block', hash: bh, data }, { kind: 'meta', hash: hashBuffer(tree), data: tree }, { kind: 'meta', hash: hashBuffer(snap), data: snap }],
    });
    await createEntry(store, logKey(ORG, HOME, 0, 0), seg);
  }
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

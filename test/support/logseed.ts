/**
 * Seeding a store with what a home's fsync log holds (fsynclog/homelog.ts), for tests and benches of readers
 * and wakes: a snapshot object with the `log` feature, and a whole segment holding a one-file snapshot.
 */
import { hashBuffer } from '../../src/hash/blake3.js';
import { encodeSnapshot, encodeTree } from '../../src/format/codec.js';
import { createEntry, encodeSegment, type Segment } from '../../src/fsynclog/homelog.js';
import { logKey, metaKey } from '../../src/store/keys.js';
import type { Store } from '../../src/store/store.js';

const TIME = '2026-12-01T00:00:00.000Z';

/** Stores a snapshot of an empty root (the tree too) that requires the log; returns its id. */
export async function putLogSnapshot(store: Store, org: string, home: string, extra: { logTail?: { gen: number; seq: number }; host?: string } = {}): Promise<string> {
  const tree = encodeTree({ entries: [] });
  await store.put(metaKey(org, hashBuffer(tree)), tree);
  const snap = encodeSnapshot({
    root: hashBuffer(tree), parent: null, home: `${org}/${home}`, time: TIME, host: extra.host ?? 'h', stats: { files: 0, dirs: 1, bytes: 0 },
    features: extra.logTail ? ['log', 'log-tail'] : ['log'], ...(extra.logTail ? { logTail: extra.logTail } : {}),
  });
  const id = hashBuffer(snap);
  await store.put(metaKey(org, id), snap);
  return id;
}

/** Writes segment `seq` of log `gen` (a snapshot whose root holds file `f` with `content`); false if the key was taken. */
export async function writeSegment(store: Store, org: string, home: string, gen: number, seq: number, writer: string, content: string): Promise<{ segment: Segment; created: boolean }> {
  const data = Buffer.from(content);
  const bh = hashBuffer(data);
  const tree = encodeTree({ entries: [{ name: 'f', kind: 'file', mode: 0o644, uid: 0, gid: 0, size: data.length, mtimeNs: 1n, ctimeNs: 1n, blocks: [bh] }] });
  const snap = encodeSnapshot({ root: hashBuffer(tree), parent: null, home: `${org}/${home}`, time: TIME, host: 'h', stats: { files: 1, dirs: 1, bytes: data.length }, features: ['log'] });
  const segment: Segment = {
    home: `${org}/${home}`, gen, seq, writer, snapshot: hashBuffer(snap), time: TIME, chain: [],
    objects: [{ kind: 'block', hash: bh, data }, { kind: 'meta', hash: hashBuffer(tree), data: tree }, { kind: 'meta', hash: hashBuffer(snap), data: snap }],
  };
  return { segment, created: await createEntry(store, logKey(org, home, gen, seq), encodeSegment(segment)) };
}

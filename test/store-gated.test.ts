/**
 * The store a mount opens with the create-if-absent probe running alongside (store/gated.ts, probe.ts's
 * startProbe): reads answer before the probe has, writes wait for it, a store that fails the probe takes no
 * write at all (each fails with the probe's one-line reason), and closing waits for the probe's clean-up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForwardingStore } from '../src/store/forwarding.js';
import { GatedStore } from '../src/store/gated.js';
import { MemoryStore } from '../src/store/memory.js';
import { startProbe } from '../src/store/probe.js';
import { UserError } from '../src/util/errors.js';
import { collect } from './support/store-conformance.js';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A store whose create-if-absent overwrites: the probe must refuse it. */
class OverwritingStore extends ForwardingStore {
  override async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    await this.inner.put(key, data);
    return true;
  }
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 10));

test('reads answer before the gate opens; writes wait for it', async () => {
  const mem = new MemoryStore();
  await mem.put('org/a', Buffer.from('a'));
  const gate = deferred();
  const s = new GatedStore(mem, gate.promise);
  assert.equal((await s.get('org/a')).toString(), 'a');
  assert.equal((await s.getRange('org/a', 0, 1)).toString(), 'a');
  assert.deepEqual([...(await s.has(['org/a', 'org/b']))], ['org/a']);
  assert.deepEqual((await collect(s.list('org/'))).map((o) => o.key), ['org/a']);
  let done = 0;
  const writes = [s.put('org/b', Buffer.from('b')), s.putIfAbsent('org/c', Buffer.from('c')), s.delete('org/a')].map((p) => p.then(() => done++));
  await tick();
  assert.equal(done, 0, 'no write before the gate');
  assert.deepEqual((await collect(mem.list('org/'))).map((o) => o.key), ['org/a'], 'nothing written yet');
  gate.resolve();
  await Promise.all(writes);
  assert.deepEqual((await collect(mem.list('org/'))).map((o) => o.key), ['org/b', 'org/c']);
});

test('a store that fails the probe takes no write: each fails with the probe\'s reason; close waits for its clean-up', async () => {
  const mem = new MemoryStore();
  const bad = new OverwritingStore(mem);
  const probe = startProbe(bad);
  const s = new GatedStore(bad, probe.confirmed, probe.settled);
  for (const write of [() => s.put('org/lease', Buffer.from('x')), () => s.putIfAbsent('org/heads/0', Buffer.from('x')), () => s.delete('org/x')]) {
    await assert.rejects(write(), (e: unknown) => {
      assert.ok(e instanceof UserError, String(e));
      assert.match(e.message, /does not enforce create-if-absent/);
      return true;
    });
  }
  await s.close();
  assert.deepEqual(await collect(mem.list('')), [], 'no write landed, and the probe key is gone');
});

test('on a store that enforces create-if-absent the gate opens after two conditional writes, before the clean-up lands', async () => {
  const mem = new MemoryStore();
  let deletes = 0;
  const slowDelete = new (class extends ForwardingStore {
    override async delete(key: string): Promise<void> {
      await tick();
      deletes++;
      await this.inner.delete(key);
    }
  })(mem);
  const probe = startProbe(slowDelete);
  const s = new GatedStore(slowDelete, probe.confirmed, probe.settled);
  await s.put('org/lease', Buffer.from('mine'));
  assert.equal(deletes, 0, 'the write did not wait for the probe key\'s delete');
  await s.close();
  assert.equal(deletes, 1);
  assert.deepEqual((await collect(mem.list(''))).map((o) => o.key), ['org/lease']);
});

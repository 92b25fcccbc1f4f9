/**
 * `Lease.confirmed` (home/lease.ts): a log segment is written only within the lease TTL of a look that
 * showed the lease still this holder's. Right after acquiring it is confirmed; once the last look is older
 * than the TTL it looks again, and a lease taken over meanwhile makes it answer false (lost). `foundOther`
 * says whether acquiring found another holder's lease (a claimant, home/base.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lease } from '../src/home/lease.js';
import { leaseKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';

test('confirmed(): true after acquire; past the TTL it looks again and sees a takeover', async () => {
  const store = new MemoryStore();
  const ttlMs = 40;
  let lostTo: string | null = null;
  const lease = new Lease(store, 'acme', 'alice', 'token-a', '/mnt', ttlMs, (by) => {
    lostTo = by.token;
  });
  await lease.acquire(false);
  try {
    assert.equal(await lease.confirmed(), true);
    await store.put(leaseKey('acme', 'alice'), Buffer.from(JSON.stringify({ token: 'token-b', host: 'h2', pid: 1, mountpoint: '/m', expiresAt: Date.now() + 60_000 })));
    await new Promise((r) => setTimeout(r, ttlMs * 2));
    assert.equal(await lease.confirmed(), false, 'past the TTL it looks again and finds the lease taken');
    assert.equal(lease.lost, true);
    assert.equal(lostTo, 'token-b');
  } finally {
    lease.stop();
  }
});

test('acquire(): foundOther tells a wake whether another holder\'s lease (live or expired, not released) was there', async () => {
  const store = new MemoryStore();
  const make = (token: string): Lease => new Lease(store, 'acme', 'alice', token, '/mnt', 60_000, () => undefined);
  const first = make('token-a');
  await first.acquire(false);
  first.stop();
  assert.equal(first.foundOther, false, 'no lease before');
  await store.put(leaseKey('acme', 'alice'), Buffer.from(JSON.stringify({ token: 'token-a', host: 'h1', pid: 1, mountpoint: '/m', expiresAt: Date.now() - 1000 })));
  const second = make('token-b');
  await second.acquire(false);
  second.stop();
  assert.equal(second.foundOther, true, "another host's expired lease: it may still write");
  await second.release();
  const third = make('token-c');
  await third.acquire(false);
  third.stop();
  assert.equal(third.foundOther, false, 'a released lease');
  const again = make('token-c');
  await again.acquire(false);
  again.stop();
  assert.equal(again.foundOther, false, 'its own lease (the same state directory)');
});

test('acquire(): onClear runs once the look allows the claim, before the lease is written; never for a refused claim', async () => {
  const store = new MemoryStore();
  const key = leaseKey('acme', 'alice');
  const seen: Array<boolean> = [];
  const a = new Lease(store, 'acme', 'alice', 'token-a', '/mnt', 60_000, () => undefined);
  await a.acquire(false, () => void store.has([key]).then((s) => seen.push(s.has(key))));
  a.stop();
  assert.deepEqual(seen, [false], 'called once, while no lease was written yet');
  const b = new Lease(store, 'acme', 'alice', 'token-b', '/mnt', 60_000, () => undefined);
  let called = false;
  await assert.rejects(b.acquire(false, () => void (called = true)), /mounted read-write/);
  assert.equal(called, false, 'a live lease of another holder: no HEAD read for a claim that fails');
  await b.acquire(true, () => void (called = true));
  b.stop();
  assert.equal(called, true, '--takeover claims it');
});

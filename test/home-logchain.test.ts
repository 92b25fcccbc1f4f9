/**
 * The chain a log segment may rely on (home/logchain.ts): only segments that landed count; a chain
 * replaced meanwhile (a seal's tail starts a new one) is not extended by a late landing; a log whose HEAD
 * does not allow chains, or a full chain, gives a whole segment.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chainFor, chainLanded, newChain, type LogState } from '../src/home/logchain.js';
import { MAX_CHAIN } from '../src/fsynclog/homelog.js';

test('segments that landed are relied on by the next; a replaced chain ignores late landings', () => {
  const l: LogState = { gen: 3, nextSeq: 0, chained: true, chain: newChain(0) };
  const c0 = chainFor(l, 0);
  assert.deepEqual(c0.seqs, [], 'the first segment is whole');
  chainLanded(l, c0, 0, ['acme/blocks/aa/x']);
  const c1 = chainFor(l, 1);
  assert.deepEqual(c1.seqs, [0]);
  assert.ok(c1.keys.has('acme/blocks/aa/x'));
  // segment 1 fails: nothing recorded; segment 2 relies on 0 only
  assert.deepEqual(chainFor(l, 2).seqs, [0]);
  l.chain = newChain(3); // a seal's tail starts at 3
  chainLanded(l, c1, 2, ['acme/meta/bb/y']);
  assert.deepEqual(chainFor(l, 3).seqs, [], 'a landing on the old chain does not leak into the tail');
});

test('no chains under a HEAD without log-chain; a full chain starts again with a whole segment', () => {
  const old: LogState = { gen: 1, nextSeq: 0, chained: false, chain: newChain(0) };
  const c = chainFor(old, 0);
  chainLanded(old, c, 0, ['k']);
  assert.deepEqual(chainFor(old, 1).seqs, [], 'every segment is whole');
  const l: LogState = { gen: 1, nextSeq: 0, chained: true, chain: newChain(0) };
  for (let q = 0; q < MAX_CHAIN; q++) chainLanded(l, chainFor(l, q), q, [`k${q}`]);
  const next = chainFor(l, MAX_CHAIN);
  assert.deepEqual(next.seqs, [], 'after 64 the next segment is whole');
  assert.equal(next.floor, MAX_CHAIN);
});

/**
 * InoMap (util/inomap.ts) against a Map: random sets, overwrites and removals of the numbers a home's
 * inodes take (derived, created and counter ranges), through growth and shrinking.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InoMap } from '../src/util/inomap.js';

test('an InoMap agrees with a Map through random sets, overwrites and removals', () => {
  let seed = 12345;
  const rand = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  // A pool of keys from each range, so that keys come back (overwrites, removals of present keys).
  const pool = Array.from({ length: 3000 }, (_, i) =>
    i % 3 === 0 ? 2 ** 40 + Math.floor(rand() * 2 ** 45) : i % 3 === 1 ? 2 ** 52 + 2 ** 51 + i : 1 + i);
  const m = new InoMap();
  const ref = new Map<number, number>();
  for (let step = 0; step < 40_000; step++) {
    const k = pool[Math.floor(rand() * pool.length)] as number;
    // Mostly sets for the first half (growth), mostly removals for the second (shrinking).
    if (rand() < (step < 20_000 ? 0.7 : 0.2)) {
      const v = 2 ** 40 + step;
      m.set(k, v);
      ref.set(k, v);
    } else {
      assert.equal(m.delete(k), ref.delete(k));
    }
    if (step % 997 === 0) {
      assert.equal(m.size, ref.size);
      for (const key of pool) assert.equal(m.get(key), ref.get(key), `key ${key} at step ${step}`);
    }
  }
  for (const key of pool) {
    assert.equal(m.has(key), ref.has(key));
    assert.equal(m.get(key), ref.get(key));
  }
  assert.throws(() => m.set(0, 1), RangeError);
  assert.throws(() => m.set(2 ** 53, 1), RangeError);
});

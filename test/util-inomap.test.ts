/**
 * InoMap and InoTable (util/inomap.ts) against a Map: random sets, overwrites and removals of the numbers a
 * home's inodes take (derived, created and counter ranges), through growth and shrinking.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InoMap, InoTable } from '../src/util/inomap.js';

/** The operations both tables have, on values of type V. */
interface Table<V> {
  readonly size: number;
  has(k: number): boolean;
  get(k: number): V | undefined;
  set(k: number, v: V): unknown;
  delete(k: number): boolean;
}

function agreesWithMap<V>(m: Table<V>, value: (step: number) => V): void {
  let seed = 12345;
  const rand = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  // A pool of keys from each range, so that keys come back (overwrites, removals of present keys).
  const pool = Array.from({ length: 3000 }, (_, i) =>
    i % 3 === 0 ? 2 ** 40 + Math.floor(rand() * 2 ** 45) : i % 3 === 1 ? 2 ** 52 + 2 ** 51 + i : 1 + i);
  const ref = new Map<number, V>();
  for (let step = 0; step < 40_000; step++) {
    const k = pool[Math.floor(rand() * pool.length)] as number;
    // Mostly sets for the first half (growth), mostly removals for the second (shrinking).
    if (rand() < (step < 20_000 ? 0.7 : 0.2)) {
      const v = value(step);
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
  // 0 marks an empty slot: never a key.
  assert.equal(m.has(0), false);
  assert.equal(m.get(0), undefined);
  assert.equal(m.delete(0), false);
  assert.throws(() => m.set(0, value(0)), RangeError);
  assert.throws(() => m.set(2 ** 53, value(0)), RangeError);
}

test('an InoMap agrees with a Map through random sets, overwrites and removals', () => {
  agreesWithMap(new InoMap(), (step) => 2 ** 40 + step);
});

test('an InoTable agrees with a Map through random sets, overwrites and removals', () => {
  agreesWithMap(new InoTable<{ step: number }>(), (step) => ({ step }));
});

/**
 * The inode number ranges (model/inos.ts): pushed numbers keep the source's low 32 bits (what git's index
 * compares), created numbers never repeat within a journal, and the ranges do not overlap.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CREATED_INO_BASE, DERIVED_INO_BASE, INO_LIMIT, PUSHED_INO_BASE, createdIno, isDerivedIno, isPortableIno, pushedIno } from '../src/model/inos.js';

test('a pushed number keeps the low 32 bits of the source st_ino and lies in the pushed range', () => {
  for (const st of [1n, 12n, 2n ** 32n - 1n, 2n ** 32n + 5n, 2n ** 51n + 7n, 2n ** 64n - 1n]) {
    const n = pushedIno(st);
    assert.equal(BigInt(n) & 0xffffffffn, st & 0xffffffffn, `st_ino ${st}`);
    assert.ok(n >= PUSHED_INO_BASE && n < CREATED_INO_BASE && Number.isSafeInteger(n));
    assert.ok(isPortableIno(n) && !isDerivedIno(n));
  }
});

test('created numbers lie in the created range and do not repeat for consecutive counter values, even across the wrap', () => {
  for (const base of [0, 12345, 2 ** 51 - 3]) {
    const seen = new Set<number>();
    for (let c = 2; c < 2000; c++) {
      const n = createdIno(base, c);
      assert.ok(n >= CREATED_INO_BASE && n < INO_LIMIT && Number.isSafeInteger(n));
      assert.ok(isPortableIno(n) && !isDerivedIno(n));
      seen.add(n);
    }
    assert.equal(seen.size, 1998);
  }
});

test('counter numbers are never portable; derived ones are', () => {
  assert.equal(isPortableIno(1), false);
  assert.equal(isPortableIno(DERIVED_INO_BASE - 1), false);
  assert.ok(isPortableIno(DERIVED_INO_BASE) && isDerivedIno(DERIVED_INO_BASE));
  assert.equal(isPortableIno(INO_LIMIT), false);
  assert.equal(isPortableIno(DERIVED_INO_BASE + 0.5), false);
});

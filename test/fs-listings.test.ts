/**
 * Listings (src/fs/listings.ts): readdir cookies that carry a listing id, so a walk continues the listing it
 * started whatever changes meanwhile; listings go at the end of a walk and beyond the cap, oldest first.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Listings, type Listed } from '../src/fs/listings.js';

function lister(names: string[]): () => Listed {
  return () => names.map((n, i): [string, number] => [n, 100 + i]);
}

test('a walk continues its own listing: later changes to the directory do not shift it', () => {
  const l = new Listings();
  const names = ['a', 'b', 'c', 'd'];
  const first = l.at(7, 0, lister(names));
  assert.equal(first.pos, 0);
  const after3 = first.cookie(3); // after ".", "..", "a"
  names.splice(0, 2); // "a" and "b" removed: a fresh listing would put "d" where "b" was
  const next = l.at(7, after3, lister(names));
  assert.equal(next.pos, 3);
  assert.deepEqual(next.entries.map(([n]) => n), ['a', 'b', 'c', 'd']);
  assert.equal(next.cookie(4), first.cookie(4), 'same listing, same cookies');
});

test('offset 0 starts a new listing; two walks of one directory do not share one', () => {
  const l = new Listings();
  const a = l.at(7, 0, lister(['x']));
  const b = l.at(7, 0, lister(['x', 'y']));
  assert.notEqual(a.cookie(1), b.cookie(1));
  assert.deepEqual(l.at(7, a.cookie(2), lister([])).entries.map(([n]) => n), ['x']);
  assert.deepEqual(l.at(7, b.cookie(2), lister([])).entries.map(([n]) => n), ['x', 'y']);
});

test('a cookie of another directory, of a finished walk or of an evicted listing continues a fresh listing at its position', () => {
  const l = new Listings(2);
  const a = l.at(1, 0, lister(['old']));
  assert.deepEqual(l.at(2, a.cookie(2), lister(['fresh'])).entries.map(([n]) => n), ['fresh'], 'other directory');
  const b = l.at(1, 0, lister(['old']));
  b.done();
  const afterDone = l.at(1, b.cookie(3), lister(['fresh']));
  assert.deepEqual(afterDone.entries.map(([n]) => n), ['fresh'], 'finished walk');
  assert.equal(afterDone.pos, 3);
  const c = l.at(3, 0, lister(['c']));
  l.at(4, 0, lister(['d']));
  l.at(5, 0, lister(['e']));
  assert.ok(l.size <= 2, 'capped');
  assert.deepEqual(l.at(3, c.cookie(2), lister(['c2'])).entries.map(([n]) => n), ['c2'], 'evicted, oldest first');
});

test('cookies stay exact doubles below 2^53 and never 0', () => {
  const l = new Listings(4);
  let max = 0;
  for (let i = 0; i < 3000; i++) {
    const w = l.at(1, 0, lister(['a']));
    max = Math.max(max, w.cookie(2 ** 31));
    assert.ok(w.cookie(1) > 0);
  }
  assert.ok(Number.isSafeInteger(max));
});

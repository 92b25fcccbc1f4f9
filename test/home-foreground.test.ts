/**
 * home/foreground.ts: the foreground counts as busy from the FUSE request rate of the last complete window,
 * and goes back to idle once a window passes with few requests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Foreground } from '../src/home/foreground.js';

test('busy while requests flow faster than the threshold, idle in the window after they stop', () => {
  let now = 0;
  const fg = new Foreground({ windowMs: 100, requestsPerSec: 200 }, () => now);
  assert.equal(fg.busy(), false, 'nothing yet');
  for (let i = 0; i < 30; i++) fg.request(); // 300/s over the first window
  now = 100;
  assert.equal(fg.busy(), true, '300 requests a second');
  now = 150;
  assert.equal(fg.busy(), true, 'the reading holds until the next window completes');
  for (let i = 0; i < 10; i++) fg.request(); // 100/s over the second window
  now = 200;
  assert.equal(fg.busy(), false, '100 requests a second is not busy');
  now = 5000;
  assert.equal(fg.busy(), false, 'a long quiet is not busy');
});

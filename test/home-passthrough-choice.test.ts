/**
 * Whether a mount asks the kernel for FUSE passthrough (home/mountconfig.ts `passthroughWanted`): only
 * where it can work and the mount's own promises allow it, each refusal with the reason status shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { passthroughWanted } from '../src/home/mountconfig.js';
import { CAP_SYS_ADMIN } from '../src/util/caps.js';

const EXT4 = 0xef53;
const OVERLAYFS = 0x794c7630;
const base = { fusePassthrough: 'auto' as const, readOnly: false, quotaBytes: 0 };
const root = (c: number): boolean => c === CAP_SYS_ADMIN;
const on = (type: number) => (): number => type;

test('auto asks on a plain filesystem with CAP_SYS_ADMIN, and nowhere else', () => {
  assert.deepEqual(passthroughWanted(base, root, '/state/upper', on(EXT4)), { ask: true, why: '' });
  assert.equal(passthroughWanted({ ...base, fusePassthrough: 'off' }, root, '/s', on(EXT4)).why, '--fuse-passthrough off');
  assert.equal(passthroughWanted({ ...base, readOnly: true }, root, '/s', on(EXT4)).why, 'a read-only mount');
  assert.match(passthroughWanted({ ...base, quotaBytes: 1 }, root, '/s', on(EXT4)).why, /^a quota is set/);
  assert.equal(passthroughWanted(base, () => false, '/s', on(EXT4)).why, 'no CAP_SYS_ADMIN');
  assert.equal(passthroughWanted(base, () => undefined, '/s', on(EXT4)).ask, false, 'capabilities unknown: not asked');
  const overlay = passthroughWanted(base, root, '/s', on(OVERLAYFS));
  assert.equal(overlay.ask, false);
  assert.match(overlay.why, /stacked filesystem \(0x794c7630\)/);
  const unknown = passthroughWanted(base, root, '/s', () => {
    throw new Error('ENOENT');
  });
  assert.equal(unknown.ask, false);
});

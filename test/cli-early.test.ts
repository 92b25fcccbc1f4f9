/**
 * Which command lines start the mount daemon early (cli/early.ts): a background mount only; never a
 * foreground daemon, a help request, HOMEFS_STORE=false, another command, or a daemon that was itself
 * started early.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EARLY_ENV, INTERNAL_EXIT, wantsEarlyDaemon } from '../src/cli/early.js';
import { ExitCode } from '../src/util/exit-codes.js';

test('a background mount starts its daemon early; nothing else does', () => {
  assert.equal(wantsEarlyDaemon(['mount', 'acme/a', '/mnt'], {}), true);
  assert.equal(wantsEarlyDaemon(['mount', 'acme/a', '/mnt', '--store', 'file:///s', '--read-only'], {}), true);
  assert.equal(wantsEarlyDaemon(['mount', 'acme/a', '/mnt', '--foreground'], {}), false);
  assert.equal(wantsEarlyDaemon(['mount', '--help'], {}), false);
  assert.equal(wantsEarlyDaemon(['mount', 'acme/a', '-h'], {}), false);
  assert.equal(wantsEarlyDaemon(['mount', '--', 'acme/a', '/mnt'], {}), false);
  assert.equal(wantsEarlyDaemon(['push', 'dir', 'acme/a'], {}), false);
  assert.equal(wantsEarlyDaemon([], {}), false);
  assert.equal(wantsEarlyDaemon(['mount', 'acme/a', '/mnt'], { HOMEFS_STORE: 'false' }), false);
  assert.equal(wantsEarlyDaemon(['mount', 'acme/a', '/mnt'], { COVEY_HOME_STORE: 'false' }), false);
  assert.equal(wantsEarlyDaemon(['mount', 'acme/a', '/mnt'], { [EARLY_ENV]: '1' }), false);
});

test("the command's copy of the internal-error exit code is the CLI's", () => {
  assert.equal(INTERNAL_EXIT, ExitCode.internal);
});

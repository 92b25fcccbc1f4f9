/**
 * Which command lines start the mount daemon early (cli/early.ts): a background mount only; never a
 * foreground daemon, a help request, HOMEFS_STORE=false, another command, or a daemon that was itself
 * started early. And the daemon's environment: glibc's malloc asks for huge pages unless told otherwise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { daemonEnv, EARLY_ENV, HUGE_PAGES_TUNABLE, INTERNAL_EXIT, wantsEarlyDaemon } from '../src/cli/early.js';
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

test("the daemon's malloc asks for huge pages, unless GLIBC_TUNABLES already says how", () => {
  assert.equal(daemonEnv({ PATH: '/bin' }).GLIBC_TUNABLES, HUGE_PAGES_TUNABLE);
  assert.equal(daemonEnv({ PATH: '/bin' }).PATH, '/bin');
  assert.equal(daemonEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }).GLIBC_TUNABLES, `glibc.malloc.arena_max=2:${HUGE_PAGES_TUNABLE}`);
  assert.equal(daemonEnv({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }).GLIBC_TUNABLES, 'glibc.malloc.hugetlb=0');
  assert.equal(daemonEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2' }).GLIBC_TUNABLES, 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2');
  const env = { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' };
  daemonEnv(env);
  assert.equal(env.GLIBC_TUNABLES, 'glibc.malloc.arena_max=2', 'the caller\'s environment is left as it was');
});

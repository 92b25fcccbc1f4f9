/** The kernel's setuid/setgid rule (fs/setid.ts), case by case, with the caller's groups given. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { clearedSetidMode, procGroups } from '../src/fs/setid.js';

const nobody = { uid: 65534, gid: 65533, pid: 1 };
const root = { uid: 0, gid: 0, pid: 1 };
const groups = (list: number[]) => () => list;

test('a chown of a non-directory loses setuid whoever calls it', () => {
  for (const kind of ['file', 'fifo', 'socket', 'blockdev', 'chardev']) {
    assert.equal(clearedSetidMode({ kind, mode: 0o4755, gid: 0 }, root, true), 0o755, kind);
    assert.equal(clearedSetidMode({ kind, mode: 0o4755, gid: 0 }, nobody, true, groups([])), 0o755, kind);
  }
});

test('a directory keeps both bits', () => {
  assert.equal(clearedSetidMode({ kind: 'dir', mode: 0o6775, gid: 5 }, nobody, true, groups([])), undefined);
});

test('setgid goes with group execute, for root too', () => {
  assert.equal(clearedSetidMode({ kind: 'fifo', mode: 0o6555, gid: 65533 }, root, true), 0o555);
  assert.equal(clearedSetidMode({ kind: 'file', mode: 0o2775, gid: 65533 }, nobody, false, groups([])), 0o775);
});

test('setgid without group execute stays for root and for members, through supplementary groups too', () => {
  assert.equal(clearedSetidMode({ kind: 'file', mode: 0o6444, gid: 7 }, root, true), 0o2444);
  assert.equal(clearedSetidMode({ kind: 'file', mode: 0o6444, gid: 65533 }, nobody, true, groups([])), 0o2444);
  assert.equal(clearedSetidMode({ kind: 'socket', mode: 0o6444, gid: 7 }, nobody, true, groups([3, 7])), 0o2444);
  assert.equal(clearedSetidMode({ kind: 'socket', mode: 0o2444, gid: 7 }, nobody, true, groups([3, 7])), undefined);
});

test('setgid without group execute goes for an outsider, and when the groups cannot be read', () => {
  assert.equal(clearedSetidMode({ kind: 'file', mode: 0o6444, gid: 0 }, nobody, true, groups([65532])), 0o444);
  assert.equal(clearedSetidMode({ kind: 'chardev', mode: 0o2444, gid: 0 }, nobody, true, () => null), 0o444);
});

test('a flagged write or truncate by root is treated as unprivileged (the kernel flags only callers without CAP_FSETID)', () => {
  assert.equal(clearedSetidMode({ kind: 'file', mode: 0o2644, gid: 9 }, root, false, groups([])), 0o644);
});

test('nothing to clear is undefined', () => {
  assert.equal(clearedSetidMode({ kind: 'file', mode: 0o755, gid: 0 }, root, true), undefined);
});

test('procGroups reads a process\'s supplementary groups, and gives null for no process', async () => {
  // A child with known groups (root may set them; as another user, only its own are checked).
  const want = process.getuid?.() === 0 ? [11, 12] : null;
  const script = want ? `import os, sys, time; os.setgroups([${want.join(',')}]); print(flush=True); sys.stdin.read()` : 'import sys; print(flush=True); sys.stdin.read()';
  const child = spawn('python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await once(child.stdout, 'data');
    const got = procGroups(child.pid ?? 0);
    assert.ok(Array.isArray(got));
    if (want) assert.deepEqual(got, want);
  } finally {
    child.stdin.end();
    await once(child, 'exit');
  }
  assert.equal(procGroups(0), null);
  assert.equal(procGroups(2 ** 30), null);
});

/**
 * The binding's request-handle rules, with the mount served by this very process (so the mount is only
 * ever touched from child processes, asynchronously): a second reply throws, a reply after unmount is
 * dropped silently, unmount() is idempotent and answers pending requests, getattr of the root works with
 * a minimal ops object, and mount options become one escaped -o list.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { rmSync } from 'node:fs';
import { constants as os } from 'node:os';
import { mount, mountArgs } from '../src/fuse/index.js';
import type { Attr, Ops, Req, Session } from '../src/fuse/types.js';
import { fuseAvailable, tempMountpoint, isMounted, forceUnmount } from './support/fuse-mount-helpers.js';

const skip = fuseAvailable();

function run(cmd: string, args: string[]): Promise<{ code: number | null; err: string }> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d: Buffer) => { err += d; });
    c.on('exit', (code) => resolve({ code, err }));
  });
}

const rootAttr: Attr = {
  ino: 1, mode: 0o040755, nlink: 2, uid: 0, gid: 0, rdev: 0, size: 0, blocks: 0, blksize: 4096,
  atimeSec: 0, atimeNsec: 0, mtimeSec: 0, mtimeNsec: 0, ctimeSec: 0, ctimeNsec: 0,
};

test('mount options: defaults, flags, commas escaped', () => {
  assert.deepEqual(mountArgs({}), ['-o', 'fsname=homefs,subtype=homefs,auto_unmount']);
  assert.deepEqual(mountArgs({ fsname: 'a,b', allowOther: true, defaultPermissions: true, readOnly: true, autoUnmount: false }),
    ['-o', 'fsname=a\\,b,subtype=homefs,allow_other,default_permissions,ro']);
});

test('second reply throws, late reply after unmount is dropped, unmount is idempotent', { skip }, async () => {
  const m = tempMountpoint('inproc');
  let s: Session | undefined;
  let secondReplyError: unknown;
  let pending: Req | undefined;
  const ops = {
    getattr(req: Req): void { s?.attr(req, rootAttr, 0); },
    lookup(req: Req, _parent: number, name: string): void {
      if (name === 'late') { pending = req; return; }  // answered never, then after unmount
      s?.err(req, os.errno.ENOENT);
      try { s?.err(req, os.errno.ENOENT); } catch (e) { secondReplyError = e; }
    },
  } as unknown as Ops;
  s = mount(m, ops, { handleSignals: false });
  try {
    const r1 = await run('stat', [path.join(m, 'twice')]);
    assert.notEqual(r1.code, 0);
    assert.match(r1.err, /No such file or directory/);
    assert.match(String(secondReplyError), /answered twice/);
    const root = await run('stat', [m]);
    assert.equal(root.code, 0, root.err);

    const late = run('stat', [path.join(m, 'late')]);
    while (!pending) await new Promise((r) => setTimeout(r, 10));
    s.unmount();
    s.unmount();
    const r2 = await late;
    assert.notEqual(r2.code, 0, 'the pending lookup was answered (EIO) by unmount');
    assert.equal(isMounted(m), false);
    s.err(pending, os.errno.ENOENT);  // late: silently dropped, no throw
    assert.equal(s.invalEntry(1, 'x') < 0, true);
  } finally { s.unmount(); forceUnmount(m); if (!isMounted(m)) rmSync(m, { recursive: true, force: true }); }
});

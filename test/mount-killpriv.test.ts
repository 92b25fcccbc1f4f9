/**
 * FUSE_HANDLE_KILLPRIV_V2 (native/src/session.c, src/fs/adapter.ts), through a real mount driven from other
 * processes: the kernel stops asking for security.capability before every write(2) and for the attributes
 * before a chown, and the mount itself clears setuid/setgid where the kernel flags a write or truncate by a
 * caller without CAP_FSETID; the cleared mode is journaled like any other change and reaches the snapshot.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, homefsOk, run } from './support/homefs-mount.js';

const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

/** Counters of the mount's FUSE requests: per op as JS saw them, plus getxattr answered in the binding. */
async function counts(mnt: string): Promise<{ getxattr: number; getattr: number; setattr: number }> {
  const text = await homefsOk(['status', mnt, '--metrics']);
  const get = (re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
  return {
    getxattr: get(/^homefs_fuse_native_replies_total\{op="getxattr"[^}]*\} (\d+)$/m) + get(/^homefs_fuse_ops_total\{op="getxattr"[^}]*\} (\d+)$/m),
    getattr: get(/^homefs_fuse_ops_total\{op="getattr"[^}]*\} (\d+)$/m),
    setattr: get(/^homefs_fuse_ops_total\{op="setattr"[^}]*\} (\d+)$/m),
  };
}

async function py(mnt: string, code: string, asNobody = false): Promise<string> {
  const drop = asNobody ? 'os.setgroups([]); os.setgid(65534); os.setuid(65534)\n' : '';
  const r = await run('python3', ['-c', `import os, stat\n${drop}${code}`], { cwd: mnt });
  if (r.code !== 0) throw new Error(`python3 failed (${r.code}): ${r.stderr}`);
  return r.stdout.trim();
}

test('200 write(2)s to one file ask for security.capability at most once, and a chown asks for no attributes', async () => {
  const h = new TestHome('acme', 'killpriv-count');
  homes.push(h);
  const mnt = await h.mount();
  await py(mnt, `open('f', 'w').close()`);
  const c0 = await counts(mnt);
  await py(mnt, `fd = os.open('f', os.O_WRONLY)\nfor i in range(200): os.write(fd, b'x' * 100)\nos.close(fd)`);
  const c1 = await counts(mnt);
  // Without KILLPRIV_V2 the kernel checks security.capability before each of the 200 writes.
  assert.ok(c1.getxattr - c0.getxattr <= 1, `${c1.getxattr - c0.getxattr} getxattr requests for 200 writes`);
  await py(mnt, `os.chown('f', 1000, 1000)`);
  const c2 = await counts(mnt);
  // Without it the kernel re-reads the attributes (a getattr) to compute the mode it would clear itself.
  assert.equal(c2.getattr - c1.getattr, 0, 'getattr requests for a chown');
  assert.equal(c2.setattr - c1.setattr, 1, 'setattr requests for a chown');
  assert.equal(await py(mnt, `print(os.path.getsize('f'), os.stat('f').st_uid)`), '20000 1000');
  await h.sleep(mnt);
});

test('setuid/setgid cleared by an unprivileged write and truncate are journaled and reach the next host', async () => {
  const h = new TestHome('acme', 'killpriv-kept');
  homes.push(h);
  const mnt = await h.mount({ mnt: h.mountpoint('a'), host: 'a', extra: ['--allow-other'] });
  await py(mnt, `
for n in ('w', 't', 'root'):
  with open(n, 'wb') as f: f.write(b'abc')
  os.chmod(n, 0o6777)`);
  await py(mnt, `
with open('w', 'ab') as f: f.write(b'd')
os.truncate('t', 1)`, true);
  await py(mnt, `with open('root', 'ab') as f: f.write(b'd')`);
  const modes = `print(*[oct(stat.S_IMODE(os.stat(n).st_mode)) + ':' + str(os.path.getsize(n)) for n in ('w', 't', 'root')])`;
  assert.equal(await py(mnt, modes), '0o777:4 0o777:1 0o6777:4');
  await h.sleep(mnt);
  const mnt2 = await h.mount({ mnt: h.mountpoint('b'), host: 'b' });
  assert.equal(await py(mnt2, modes), '0o777:4 0o777:1 0o6777:4');
  await h.sleep(mnt2);
});

/**
 * getxattr answered in the binding (native/src/noxattr.c, src/fs/noxattrs.ts), through a real mount driven
 * from other processes: an inode with no xattrs gets its getxattr answered ENODATA without entering JS,
 * and the moment it gains one (setxattr by any of its names) the value is what getxattr returns.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, homefsOk, run, shOk } from './support/homefs-mount.js';

const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});
function home(name: string): TestHome {
  const h = new TestHome('acme', name);
  homes.push(h);
  return h;
}

/** getxattr requests answered by the binding, and those that reached JS, so far. */
async function counts(mnt: string): Promise<{ native: number; js: number }> {
  const text = await homefsOk(['status', mnt, '--metrics']);
  const get = (re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
  return {
    native: get(/^homefs_fuse_native_replies_total\{op="getxattr"[^}]*\} (\d+)$/m),
    js: get(/^homefs_fuse_ops_total\{op="getxattr"[^}]*\} (\d+)$/m),
  };
}

/** Runs python3 with `os` and a `get(path, name)` that returns the value or the errno name. */
async function py(mnt: string, code: string): Promise<string> {
  const prelude = 'import os, errno\ndef get(p, n):\n  try: return os.getxattr(p, n).decode()\n  except OSError as e: return errno.errorcode[e.errno]\n';
  const r = await run('python3', ['-c', prelude + code], { cwd: mnt });
  if (r.code !== 0) throw new Error(`python3 failed (${r.code}): ${r.stderr}`);
  return r.stdout.trim();
}

test('getxattr of a file with no xattrs is answered by the binding, until setxattr gives it one', async () => {
  const h = home('noxattr-set');
  const mnt = await h.mount();
  await shOk(`cd ${mnt} && echo x > f && mkdir d`);
  const c0 = await counts(mnt);
  assert.equal(await py(mnt, `print(*[get(p, 'user.a') for p in ['f'] * 5 + ['d']])`), 'ENODATA ENODATA ENODATA ENODATA ENODATA ENODATA');
  const c1 = await counts(mnt);
  assert.equal(c1.js, c0.js, 'no getxattr of a created file or directory reached JS');
  assert.ok(c1.native >= c0.native + 6, `the binding answered ${c1.native - c0.native} getxattr, expected 6`);

  // The revoke: without it the binding would go on answering ENODATA for f.
  assert.equal(await py(mnt, `os.setxattr('f', 'user.a', b'one'); os.setxattr('d', 'user.a', b'dir'); print(get('f', 'user.a'), get('d', 'user.a'), get('f', 'user.b'))`), 'one dir ENODATA');
  assert.equal(await py(mnt, `print(os.listxattr('f'))`), "['user.a']");
  // Removing the last one leaves the inode to JS (correct either way).
  assert.equal(await py(mnt, `os.removexattr('f', 'user.a'); print(get('f', 'user.a'), os.listxattr('f'))`), 'ENODATA []');
  await h.sleep(mnt);
});

test('a hard link and a rename over a marked file: setxattr through any name is seen through every name', async () => {
  const h = home('noxattr-links');
  const mnt = await h.mount();
  await shOk(`cd ${mnt} && echo x > g && echo y > old`);
  const c0 = await counts(mnt);
  assert.equal(await py(mnt, `print(get('g', 'user.k'), get('old', 'user.k'))`), 'ENODATA ENODATA');
  assert.ok((await counts(mnt)).native >= c0.native + 2, 'answered by the binding');
  // Same inode under a second name: the link's entry reply marks it again; setxattr must still revoke.
  assert.equal(await py(mnt, `os.link('g', 'h'); print(get('h', 'user.k')); os.setxattr('h', 'user.k', b'v'); print(get('g', 'user.k'), get('h', 'user.k'))`), 'ENODATA\nv v');
  // A file with an xattr renamed over a marked one: the name now has the xattr.
  assert.equal(await py(mnt, `open('new', 'w').close(); os.setxattr('new', 'user.k', b'n'); os.rename('new', 'old'); print(get('old', 'user.k'))`), 'n');
  // Unlink a marked file and create others: a new file never inherits the answer (its own inode, revoked on removal).
  assert.equal(await py(mnt, `
os.unlink('g'); os.unlink('h')
for i in range(20):
  open(f'n{i}', 'w').close(); get(f'n{i}', 'user.k'); os.setxattr(f'n{i}', 'user.k', str(i).encode())
print(all(get(f'n{i}', 'user.k') == str(i) for i in range(20)))`), 'True');
  await h.sleep(mnt);
});

test('on another host, files from the snapshot: the ones with xattrs show them, the others are answered by the binding', async () => {
  const h = home('noxattr-snap');
  const mnt = await h.mount({ mnt: h.mountpoint('snap1'), host: 'a' });
  await shOk(`cd ${mnt} && mkdir s && echo 1 > s/with && echo 2 > s/without`);
  await py(mnt, `os.setxattr('s/with', 'user.tag', b'kept')`);
  await h.sleep(mnt);
  const mnt2 = await h.mount({ mnt: h.mountpoint('snap2'), host: 'b' });
  const c0 = await counts(mnt2);
  assert.equal(await py(mnt2, `print(*[get('s/with', 'user.tag') for _ in range(3)], *[get('s/without', 'user.tag') for _ in range(3)])`), 'kept kept kept ENODATA ENODATA ENODATA');
  const c1 = await counts(mnt2);
  assert.ok(c1.native >= c0.native + 3, 'the file without xattrs is answered by the binding');
  assert.equal(c1.js - c0.js, 3, 'the file with an xattr is answered by JS, every time');
  await h.sleep(mnt2);
});

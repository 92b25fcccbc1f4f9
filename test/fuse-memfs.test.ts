/**
 * The FUSE binding end to end: MemFs (test/support/memfs.ts) served by a separate process on a real mount,
 * driven from this process with Node's fs, coreutils and small python3 syscall scripts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fuseAvailable, startMemfsServer, tempMountpoint, type Server } from './support/fuse-mount-helpers.js';
import { BEHIND_UNLINK, BEHIND_WRITE, STATS_XATTR } from './support/memfs.js';

const skip = fuseAvailable();
let srv: Server;
let m: string;

function py(code: string, ...args: string[]): string {
  const r = spawnSync('python3', ['-c', code, ...args], { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 0, `python failed: ${r.stderr}`);
  return r.stdout.trim();
}
function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
function code(fn: () => unknown): string | undefined {
  try { fn(); return undefined; } catch (e) { return (e as NodeJS.ErrnoException).code; }
}
function stats(): Record<string, number> {
  return JSON.parse(py(`import os,sys; print(os.getxattr(sys.argv[1], '${STATS_XATTR}').decode())`, m)) as Record<string, number>;
}

before(async () => {
  if (skip) return;
  m = tempMountpoint('memfs');
  srv = await startMemfsServer(m, { fs: { timeout: 60 } });  // long enough that the stat loop below never outlives the cache
});
after(async () => { if (srv) await srv.stop(); });

test('files: create, write, read, stat, truncate, append, unlink, with inode numbers above 2^32', { skip }, () => {
  const f = path.join(m, 'a.txt');
  fs.writeFileSync(f, 'hello world');
  assert.equal(fs.readFileSync(f, 'utf8'), 'hello world');
  const st = fs.statSync(f, { bigint: true });
  assert.ok(st.ino > 2n ** 32n, `ino ${st.ino}`);
  assert.equal(st.size, 11n);
  assert.equal(Number(st.mode) & 0o777, 0o644);
  fs.truncateSync(f, 5);
  assert.equal(fs.readFileSync(f, 'utf8'), 'hello');
  fs.appendFileSync(f, '!!');
  assert.equal(fs.readFileSync(f, 'utf8'), 'hello!!');
  fs.writeFileSync(f, 'x');  // O_TRUNC arrives as setattr(size=0)
  assert.equal(fs.readFileSync(f, 'utf8'), 'x');
  const big = Buffer.alloc(3 * 1024 * 1024 + 17);
  for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
  fs.writeFileSync(path.join(m, 'big'), big);
  assert.ok(fs.readFileSync(path.join(m, 'big')).equals(big));
  fs.unlinkSync(f);
  assert.equal(code(() => fs.statSync(f)), 'ENOENT');
  assert.equal(code(() => fs.unlinkSync(f)), 'ENOENT');
  assert.equal(code(() => fs.readFileSync(path.join(m, 'nope'))), 'ENOENT');
  assert.equal(code(() => fs.writeFileSync(path.join(m, 'big', 'x'), '')), 'ENOTDIR');
  assert.equal(code(() => fs.openSync(path.join(m, 'big'), fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY)), 'EEXIST');
  fs.unlinkSync(path.join(m, 'big'));
});

test('directories: mkdir, rmdir, readdir, errno paths', { skip }, () => {
  const d = path.join(m, 'dir');
  fs.mkdirSync(d, { mode: 0o750 });
  assert.equal(fs.statSync(d).mode & 0o777, 0o750);
  assert.equal(code(() => fs.mkdirSync(d)), 'EEXIST');
  fs.writeFileSync(path.join(d, 'f'), '1');
  fs.mkdirSync(path.join(d, 'sub'));
  assert.deepEqual(fs.readdirSync(d).sort(), ['f', 'sub']);
  assert.equal(fs.statSync(d).nlink, 3);
  assert.equal(code(() => fs.rmdirSync(d)), 'ENOTEMPTY');
  assert.equal(code(() => fs.rmdirSync(path.join(d, 'f'))), 'ENOTDIR');
  assert.equal(code(() => fs.unlinkSync(path.join(d, 'sub'))), 'EISDIR');
  assert.equal(code(() => fs.rmdirSync(path.join(d, 'none'))), 'ENOENT');
  fs.rmSync(d, { recursive: true });
  assert.equal(code(() => fs.statSync(d)), 'ENOENT');
});

test('symlinks, hard links, mknod (fifo), chmod, chown, access', { skip }, () => {
  const t = path.join(m, 'target');
  fs.writeFileSync(t, 'T');
  fs.symlinkSync('target', path.join(m, 'sl'));
  assert.equal(fs.readlinkSync(path.join(m, 'sl')), 'target');
  assert.equal(fs.readFileSync(path.join(m, 'sl'), 'utf8'), 'T');
  assert.ok(fs.lstatSync(path.join(m, 'sl')).isSymbolicLink());
  assert.equal(code(() => fs.readlinkSync(t)), 'EINVAL');
  fs.linkSync(t, path.join(m, 'hard'));
  assert.equal(fs.statSync(t).nlink, 2);
  assert.equal(fs.statSync(t).ino, fs.statSync(path.join(m, 'hard')).ino);
  assert.equal(code(() => fs.linkSync(t, path.join(m, 'hard'))), 'EEXIST');
  sh('mkfifo', [path.join(m, 'fifo')]);
  assert.ok(fs.statSync(path.join(m, 'fifo')).isFIFO());
  fs.chmodSync(t, 0o600);
  assert.equal(fs.statSync(t).mode & 0o7777, 0o600);
  fs.chownSync(t, 1234, 5678);
  assert.equal(fs.statSync(t).uid, 1234);
  assert.equal(fs.statSync(t).gid, 5678);
  fs.accessSync(t, fs.constants.R_OK);
  for (const n of ['target', 'sl', 'hard', 'fifo']) fs.unlinkSync(path.join(m, n));
});

test('times: touch -m -d and touch -a separately, nanosecond mtime round trip', { skip }, () => {
  const f = path.join(m, 'times');
  fs.writeFileSync(f, '');
  sh('touch', ['-m', '-d', '2001-02-03 04:05:06.123456789 UTC', f]);
  let st = fs.statSync(f, { bigint: true });
  assert.equal(st.mtimeNs, 981173106123456789n);
  const atimeBefore = st.atimeNs;
  assert.notEqual(atimeBefore, st.mtimeNs);
  sh('touch', ['-a', '-d', '1999-12-31 23:59:59.987654321 UTC', f]);
  st = fs.statSync(f, { bigint: true });
  assert.equal(st.atimeNs, 946684799987654321n);
  assert.equal(st.mtimeNs, 981173106123456789n, 'touch -a must not change mtime');
  // utimensat with UTIME_NOW for mtime only (setattr MTIME_NOW), atime kept
  py('import os,sys; os.utime(sys.argv[1], ns=(946684799987654321, 0)); os.utime(sys.argv[1])', f);
  st = fs.statSync(f, { bigint: true });
  assert.ok(st.mtimeNs > 1_700_000_000n * 1_000_000_000n, 'utime(now) sets the current time');
  // arbitrary nanoseconds round trip through utimensat
  py('import os,sys; os.utime(sys.argv[1], ns=(1234567890000000001, 1234567890999999999))', f);
  st = fs.statSync(f, { bigint: true });
  assert.equal(st.atimeNs, 1234567890000000001n);
  assert.equal(st.mtimeNs, 1234567890999999999n);
  fs.unlinkSync(f);
});

test('rename: plain, over a file, across directories, RENAME_NOREPLACE, RENAME_EXCHANGE', { skip }, () => {
  const a = path.join(m, 'ra'), b = path.join(m, 'rb'), d = path.join(m, 'rd');
  fs.writeFileSync(a, 'A'); fs.writeFileSync(b, 'B'); fs.mkdirSync(d);
  const renameat2 = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), int(sys.argv[3]))
print(0 if r == 0 else os.strerror(ctypes.get_errno()))`;
  assert.equal(py(renameat2, a, b, '1'), os_strerror('EEXIST'));
  assert.equal(py(renameat2, a, b, '2'), '0');
  assert.equal(fs.readFileSync(a, 'utf8'), 'B');
  assert.equal(fs.readFileSync(b, 'utf8'), 'A');
  assert.equal(py(renameat2, a, path.join(m, 'missing'), '2'), os_strerror('ENOENT'));
  assert.equal(py(renameat2, a, path.join(m, 'rc'), '1'), '0');
  assert.equal(fs.readFileSync(path.join(m, 'rc'), 'utf8'), 'B');
  fs.renameSync(path.join(m, 'rc'), b);  // replaces b
  assert.equal(fs.readFileSync(b, 'utf8'), 'B');
  assert.equal(code(() => fs.statSync(path.join(m, 'rc'))), 'ENOENT');
  fs.renameSync(b, path.join(d, 'moved'));
  assert.equal(fs.readFileSync(path.join(d, 'moved'), 'utf8'), 'B');
  fs.mkdirSync(path.join(m, 'full')); fs.writeFileSync(path.join(m, 'full', 'x'), '');
  fs.mkdirSync(path.join(m, 'empty'));
  assert.equal(code(() => fs.renameSync(path.join(m, 'empty'), path.join(m, 'full'))), 'ENOTEMPTY');
  fs.rmSync(path.join(m, 'full'), { recursive: true }); fs.rmSync(path.join(m, 'empty'), { recursive: true });
  fs.rmSync(d, { recursive: true });
});

function os_strerror(c: string): string {
  return py(`import os, errno; print(os.strerror(errno.${c}))`);
}

test('xattrs: set, get, list, remove, create/replace flags, ENODATA', { skip }, () => {
  const f = path.join(m, 'x');
  fs.writeFileSync(f, '');
  const out = py(`
import os, sys, errno
f = sys.argv[1]
os.setxattr(f, 'user.a', b'one')
os.setxattr(f, 'user.b', b'\\x00two')
r = [os.getxattr(f, 'user.a').decode(), sorted(os.listxattr(f)), len(os.getxattr(f, 'user.b'))]
def err(fn):
    try: fn(); return 'ok'
    except OSError as e: return errno.errorcode[e.errno]
r.append(err(lambda: os.setxattr(f, 'user.a', b'x', os.XATTR_CREATE)))
r.append(err(lambda: os.setxattr(f, 'user.c', b'x', os.XATTR_REPLACE)))
os.setxattr(f, 'user.a', b'uno', os.XATTR_REPLACE)
r.append(os.getxattr(f, 'user.a').decode())
os.removexattr(f, 'user.a')
r.append(err(lambda: os.getxattr(f, 'user.a')))
r.append(err(lambda: os.removexattr(f, 'user.a')))
r.append(sorted(os.listxattr(f)))
print(repr(r))`, f);
  assert.equal(out, "['one', ['user.a', 'user.b'], 4, 'EEXIST', 'ENODATA', 'uno', 'ENODATA', 'ENODATA', ['user.b']]");
  fs.unlinkSync(f);
});

test('unlink of an open file keeps its data until close; the inode is freed after', { skip }, () => {
  const f = path.join(m, 'open-unlinked');
  const fd = fs.openSync(f, 'w+');
  fs.writeSync(fd, 'still here');
  fs.unlinkSync(f);
  assert.equal(code(() => fs.statSync(f)), 'ENOENT');
  const b = Buffer.alloc(10);
  assert.equal(fs.readSync(fd, b, 0, 10, 0), 10);
  assert.equal(b.toString(), 'still here');
  assert.equal(fs.fstatSync(fd).nlink, 0);
  fs.writeSync(fd, '!', 10);
  assert.equal(fs.fstatSync(fd).size, 11);
  fs.closeSync(fd);
});

test('mmap: shared writes reach the file, file contents are visible through the mapping', { skip }, () => {
  const f = path.join(m, 'mapped');
  fs.writeFileSync(f, Buffer.alloc(8192, 'a'));
  const out = py(`
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
mm = mmap.mmap(fd, 8192)
first = mm[0:4]
mm[4096:4101] = b'HELLO'
mm.flush(); mm.close(); os.close(fd)
print(first.decode())`, f);
  assert.equal(out, 'aaaa');
  const data = fs.readFileSync(f);
  assert.equal(data.subarray(4096, 4101).toString(), 'HELLO');
  assert.equal(data.length, 8192);
  fs.unlinkSync(f);
});

test('fsync, fdatasync, fallocate, lseek SEEK_DATA/SEEK_HOLE, copy_file_range, statfs', { skip }, () => {
  const a = path.join(m, 'ops-a'), b = path.join(m, 'ops-b');
  fs.writeFileSync(a, '0123456789');
  fs.writeFileSync(b, '');
  const out = py(`
import os, sys, errno
a, b = sys.argv[1], sys.argv[2]
fd = os.open(a, os.O_RDWR); fb = os.open(b, os.O_RDWR)
os.fsync(fd); os.fdatasync(fd)
r = [os.lseek(fd, 2, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE)]
try: os.lseek(fd, 10, os.SEEK_DATA); r.append('no error')
except OSError as e: r.append(errno.errorcode[e.errno])
os.posix_fallocate(fd, 0, 100); r.append(os.fstat(fd).st_size)
r.append(os.copy_file_range(fd, fb, 3, 4, 0))
os.close(fd); os.close(fb)
dfd = os.open(os.path.dirname(a), os.O_RDONLY); os.fsync(dfd); os.close(dfd)
s = os.statvfs(a); r += [s.f_bsize, s.f_namemax]
print(repr(r))`, a, b);
  assert.equal(out, "[2, 10, 'ENXIO', 100, 3, 4096, 255]");
  assert.equal(fs.readFileSync(b, 'utf8'), '456');
  fs.unlinkSync(a); fs.unlinkSync(b);
});

test('10,000-entry directory: readdir lists every entry once, readdirplus fills the stat cache', { skip }, () => {
  const d = path.join(m, 'many');
  fs.mkdirSync(d);
  // Create through the kernel: 10,000 creates from a single python process (faster than 10,000 syscalls from here).
  py(`
import os, sys
d = sys.argv[1]
for i in range(10000): os.close(os.open(os.path.join(d, 'file-%05d' % i), os.O_CREAT | os.O_WRONLY, 0o644))`, d);
  const s0 = stats();
  const names = fs.readdirSync(d);
  assert.equal(names.length, 10000);
  assert.equal(new Set(names).size, 10000);
  assert.equal(names.filter((n) => /^file-\d{5}$/.test(n)).length, 10000);
  for (const n of names) fs.lstatSync(path.join(d, n));
  const s1 = stats();
  assert.ok(s1.readdirplus! > s0.readdirplus!, 'readdirplus was used');
  // the entries came with the listing: stat needed (almost) no lookups
  assert.ok(s1.lookups! - s0.lookups! < 100, `lookups after readdirplus: ${s1.lookups! - s0.lookups!}`);
  fs.rmSync(d, { recursive: true });
  assert.equal(code(() => fs.statSync(d)), 'ENOENT');
});

test('cache notifications: invalInode drops cached pages and attributes, invalEntry a cached name', { skip }, () => {
  // The server's timeouts are 60 s and files are opened with keep_cache: without the notifications the
  // kernel would keep serving the old bytes and the removed name.
  const f = path.join(m, 'cached');
  fs.writeFileSync(f, 'old');
  assert.equal(fs.readFileSync(f, 'utf8'), 'old');
  py(`import os,sys; os.setxattr(sys.argv[1], '${BEHIND_WRITE}', b'new content')`, f);
  assert.equal(stats().lastInval, 0);
  assert.equal(fs.readFileSync(f, 'utf8'), 'new content');
  assert.equal(fs.statSync(f).size, 11);
  const d = path.join(m, 'inval-dir');
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'gone'), '');
  assert.ok(fs.statSync(path.join(d, 'gone')).isFile());
  py(`import os,sys; os.setxattr(sys.argv[1], '${BEHIND_UNLINK}', b'gone')`, d);
  assert.equal(stats().lastInval, 0);
  assert.equal(code(() => fs.statSync(path.join(d, 'gone'))), 'ENOENT');
  fs.unlinkSync(f); fs.rmdirSync(d);
});

/**
 * A separate process that serves MemFs on a mountpoint, for tests that drive a real mount from another
 * process (the serving process must never do I/O on its own mount). Started by fuse-mount-helpers.ts with
 * HOMEFS_MEMFS_SERVER=1; prints "ready <pid>" once mounted; unmounts on SIGTERM/SIGINT (the binding's exit
 * hooks). Extra options come as JSON in HOMEFS_MEMFS_OPTS ({ fs, mount, omit }). Without the variable it does nothing, so a
 * test runner that picks it up as a test file just sees it exit.
 */
import { mount } from '../../src/fuse/index.js';
import { MemFs, type MemFsOptions } from './memfs.js';
import type { MountOptions, Ops } from '../../src/fuse/types.js';

if (process.env['HOMEFS_MEMFS_SERVER'] === '1') {
  const mnt = process.argv[2];
  if (!mnt) { process.stderr.write('usage: memfs-server <mountpoint>\n'); process.exit(2); }
  const o = JSON.parse(process.env['HOMEFS_MEMFS_OPTS'] ?? '{}') as { fs?: MemFsOptions; mount?: MountOptions; omit?: string[] };
  const fs = new MemFs(o.fs);
  // `omit`: serve without these ops (they must then answer ENOSYS), through an object that shadows them.
  const ops = Object.create(fs) as Record<string, unknown>;
  for (const k of o.omit ?? []) ops[k] = undefined;
  const s = mount(mnt, ops as unknown as Ops, { fsname: 'memfs', ...o.mount });
  fs.attach(s);
  s.onUnmounted((reason) => { process.stdout.write(`unmounted ${reason}\n`); process.exit(0); });
  process.stdout.write(`ready ${process.pid}\n`);
}

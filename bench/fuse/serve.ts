/**
 * Benchmark server process: `node serve.js loopback|memfs|fuse-native <backing dir> <mountpoint>`.
 * Prints "ready" once mounted; unmounts on SIGTERM. Run by bench/fuse/run.ts, one process per mount, so
 * that the benchmark driver never does I/O on a mount its own process serves.
 */
import { mount } from '../../src/fuse/index.js';
import type { Ops } from '../../src/fuse/types.js';
import { Loopback } from './loopback.js';
import { MemFs } from '../../test/support/memfs.js';
import { fuseNativeOps, loadFuseNative } from './fuse-native-loopback.js';

const [kind, src, mnt] = process.argv.slice(2);
if (!kind || !src || !mnt) { process.stderr.write('usage: serve loopback|memfs|fuse-native <src> <mnt>\n'); process.exit(2); }

if (kind === 'fuse-native') {
  const Fuse = loadFuseNative();
  if (typeof Fuse === 'string') { process.stderr.write(`${Fuse}\n`); process.exit(3); }
  const f = new Fuse(mnt, fuseNativeOps(src), { force: true, autoUnmount: true });
  f.mount((err) => {
    if (err) { process.stderr.write(`fuse-native mount failed: ${err.message}\n`); process.exit(1); }
    process.stdout.write('ready\n');
  });
  const stop = (): void => f.unmount(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  const fs = kind === 'memfs' ? new MemFs() : new Loopback(src);
  const s = mount(mnt, fs as unknown as Ops, { fsname: `bench-${kind}` });
  fs.attach(s);
  process.stdout.write('ready\n');
}

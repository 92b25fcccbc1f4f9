/**
 * File-system micro-workloads run as a child process against a directory on the system under test (native
 * disk, bindfs, rclone, homefs), timing themselves so node's start-up is not part of the result. Prints one
 * JSON object. Uses synchronous fs calls on purpose: this process never serves a mount.
 *
 *   fsops seqwrite <file> <bytes>   write pseudo-random data in 1 MiB writes, then fsync
 *   fsops write <file> <bytes>      the same without the fsync
 *   fsops seqread <file>            read the whole file in 1 MiB reads
 *   fsops randread <file> <count>   4 KiB preads at random 4 KiB-aligned offsets
 *   fsops meta <dir> <n>            create n files (100 bytes each), stat each, delete each
 *   fsops readlist <root> <list>    read every file named (one relative path a line) in <list>
 */
import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, readSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Prng } from '../prng.js';

const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const MiB = 1 << 20;

function seqwrite(file: string, bytes: number, sync: boolean): object {
  const rng = new Prng(`seqwrite/${file}/${Date.now()}`);
  const chunks = [rng.bytes(MiB), rng.bytes(MiB)];
  const t0 = now();
  const fd = openSync(file, 'w');
  for (let off = 0, i = 0; off < bytes; off += MiB, i++) {
    const c = chunks[i % 2] as Buffer;
    c.writeDoubleLE(off, 0); // every 4 MiB block distinct: no dedup shortcut for homefs
    writeSync(fd, c, 0, Math.min(MiB, bytes - off));
  }
  const tw = now();
  if (sync) fsyncSync(fd);
  closeSync(fd);
  const t1 = now();
  return { ms: t1 - t0, writeMs: tw - t0, fsyncMs: t1 - tw, bytes };
}

function seqread(file: string): object {
  const buf = Buffer.allocUnsafe(MiB);
  const t0 = now();
  const fd = openSync(file, 'r');
  let total = 0;
  for (;;) {
    const n = readSync(fd, buf, 0, MiB, null);
    if (n === 0) break;
    total += n;
  }
  closeSync(fd);
  return { ms: now() - t0, bytes: total };
}

function randread(file: string, count: number): object {
  const fd = openSync(file, 'r');
  const blocks = Math.floor(fstatSync(fd).size / 4096);
  const rng = new Prng('randread');
  const offs = rng.bytes(4 * count);
  const buf = Buffer.allocUnsafe(4096);
  const t0 = now();
  for (let i = 0; i < count; i++) readSync(fd, buf, 0, 4096, (offs.readUInt32LE(4 * i) % blocks) * 4096);
  const ms = now() - t0;
  closeSync(fd);
  return { ms, count, iops: (count / ms) * 1000 };
}

function meta(dir: string, n: number): object {
  mkdirSync(dir, { recursive: true });
  const data = Buffer.alloc(100, 120);
  const names: string[] = [];
  for (let i = 0; i < n; i++) names.push(join(dir, `f${i}`));
  const t0 = now();
  for (const p of names) {
    const fd = openSync(p, 'wx');
    writeSync(fd, data);
    closeSync(fd);
  }
  const t1 = now();
  for (const p of names) statSync(p);
  const t2 = now();
  for (const p of names) unlinkSync(p);
  const t3 = now();
  return { createMs: t1 - t0, statMs: t2 - t1, deleteMs: t3 - t2 };
}

function readlist(root: string, list: string): object {
  const files = readFileSync(list, 'utf8').split('\n').filter(Boolean);
  const buf = Buffer.allocUnsafe(MiB);
  let total = 0;
  const t0 = now();
  for (const f of files) {
    const fd = openSync(join(root, f), 'r');
    for (;;) {
      const k = readSync(fd, buf, 0, MiB, null);
      if (k === 0) break;
      total += k;
    }
    closeSync(fd);
  }
  return { ms: now() - t0, bytes: total, files: files.length };
}

const [op, a, b] = process.argv.slice(2);
let out: object;
switch (op) {
  case 'seqwrite': out = seqwrite(a ?? '', Number(b), true); break;
  case 'write': out = seqwrite(a ?? '', Number(b), false); break;
  case 'seqread': out = seqread(a ?? ''); break;
  case 'randread': out = randread(a ?? '', Number(b)); break;
  case 'meta': out = meta(a ?? '', Number(b)); break;
  case 'readlist': out = readlist(a ?? '', b ?? ''); break;
  default:
    process.stderr.write(`fsops: unknown op '${op}'\n`);
    process.exit(2);
}
process.stdout.write(`${JSON.stringify(out)}\n`);

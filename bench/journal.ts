/**
 * Cost of the mount's journal: one commit per change (an inode record plus a dirent, as a create does, and
 * the commit a serial caller's request pays before its reply), reads of inode records, and a range scan of
 * a large directory. The journal's directory is under $TMPDIR (tmpfs or a disk: run it on both).
 * Usage: node dist/bench/journal.js [count=20000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cleanContent } from '../src/inodes/filestate.js';
import { Journal } from '../src/inodes/journal.js';

const n = Number(process.argv[2] ?? 20_000);
const dir = mkdtempSync(path.join(tmpdir(), 'homefs-journal-bench-'));
const j = new Journal(dir);
const us = (t0: bigint, count: number): string => (Number(process.hrtime.bigint() - t0) / 1e3 / count).toFixed(2);

let t0 = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
for (let i = 0; i < n; i++) {
  j.txn(() => {
    const ino = j.allocIno();
    j.put({ ino, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: i, atimeNs: 1n, mtimeNs: 1n, ctimeNs: 1n, nlink: 1, parents: [1], content: cleanContent(['a'.repeat(64)], i) });
    j.setChild(1, `name-${i}`, ino);
  });
  j.commit();
}
const cpu1 = process.cpuUsage(cpu0);
console.log(`change committed (inode + dirent): ${us(t0, n)} µs each over ${n}, CPU ${((cpu1.user + cpu1.system) / n).toFixed(1)} µs`);
t0 = process.hrtime.bigint();
await j.close();
const cpu2 = process.cpuUsage(cpu0);
console.log(`close (what is left to write into LMDB): ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1)} ms; CPU per change incl. close ${((cpu2.user + cpu2.system) / n).toFixed(1)} µs`);
const fresh = new Journal(dir);
t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) fresh.get(i + 2);
console.log(`inode read from LMDB (cold in-memory cache): ${us(t0, n)} µs each`);
t0 = process.hrtime.bigint();
const size = fresh.children(1).size;
console.log(`directory of ${size} entries loaded by range scan: ${us(t0, size)} µs per entry`);
await fresh.close();
rmSync(dir, { recursive: true, force: true });

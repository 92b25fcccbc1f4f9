/**
 * Push benchmark (not a test): generates a home of about 20k files and 1 GiB (a few large files, many
 * small ones, in nested directories; random, incompressible content), then in one run measures
 * `homefs push` to a fresh file store, the re-push of the unchanged tree, and `restic backup` of the same
 * tree into a fresh repository followed by its re-backup (and, for reference, the push into a memory store:
 * the cost of the walk, reads and hashing without durable writes). Reports files/s, MB/s and homefs/restic ratios.
 * The page cache is dropped before every measured run (as root; otherwise it is whatever it is, and the
 * output says so), so each run reads the tree from disk, as a first sync of a grown home does.
 *
 * Run: npx tsc -p . && node dist/bench/push.js [workdir=/tmp/homefs-bench] [files=20000] [MiB=1024]
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileStore } from '../src/store/file.js';
import { MemoryStore } from '../src/store/memory.js';
import type { Store } from '../src/store/store.js';
import { pushDirectory, type PushResult } from '../src/transfer/push.js';

const work = process.argv[2] ?? '/tmp/homefs-bench';
const nFiles = Number(process.argv[3] ?? 20000);
const totalMiB = Number(process.argv[4] ?? 1024);
const MiB = 1024 * 1024;
const tree = join(work, `tree-${nFiles}-${totalMiB}`);

/** Deterministic PRNG so that the generated tree's shape is the same in every run. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function generate(): Promise<{ files: number; bytes: number }> {
  const marker = join(tree, '.complete');
  const large = [200, 100, 50, 30, 20, 20, 9, 8, 5, 3].map((m) => Math.round((m * totalMiB) / 1024) * MiB);
  const largeBytes = large.reduce((a, b) => a + b, 0);
  const nSmall = nFiles - large.length;
  const smallAvg = Math.max(0, (totalMiB * MiB - largeBytes) / nSmall);
  if (!existsSync(marker)) {
    await rm(tree, { recursive: true, force: true });
    const rand = rng(42);
    const pool = randomBytes(64 * MiB);
    for (let i = 0; i < large.length; i++) {
      await mkdir(join(tree, 'data'), { recursive: true });
      await writeFile(join(tree, 'data', `large-${i}.bin`), randomBytes(large[i] as number));
    }
    for (let i = 0; i < nSmall; i++) {
      const dir = join(tree, `proj${i % 20}`, `mod${Math.floor(i / 20) % 10}`);
      if (i < 200) await mkdir(dir, { recursive: true });
      const size = Math.floor(rand() * 2 * smallAvg);
      const off = Math.floor(rand() * (pool.length - size));
      await writeFile(join(dir, `f${i}.txt`), pool.subarray(off, off + size));
    }
    await writeFile(marker, '');
  }
  const out = execFileSync('du', ['-sb', '--exclude=.complete', tree], { encoding: 'utf8' });
  const files = Number(execFileSync('sh', ['-c', `find '${tree}' -type f ! -name .complete | wc -l`], { encoding: 'utf8' }).trim());
  return { files, bytes: Number(out.split('\t')[0]) };
}

const canDrop = process.getuid?.() === 0;
function dropCaches(): void {
  if (canDrop) execFileSync('sh', ['-c', 'sync; echo 3 > /proc/sys/vm/drop_caches']);
}

interface Row {
  name: string;
  seconds: number;
  filesPerSec: number;
  mbPerSec: number;
  detail?: string;
}

function row(name: string, seconds: number, files: number, bytes: number, detail?: string): Row {
  return { name, seconds, filesPerSec: files / seconds, mbPerSec: bytes / 1e6 / seconds, ...(detail ? { detail } : {}) };
}

async function homefsPush(store: Store, label: string, files: number, bytes: number): Promise<{ row: Row; res: PushResult }> {
  dropCaches();
  const t0 = performance.now();
  const res = await pushDirectory(tree, store, 'bench', 'home', { excludes: [] });
  const s = (performance.now() - t0) / 1000;
  return { row: row(label, s, files, bytes, `${res.blocksNew}/${res.blocks} blocks new, ${(res.bytesUploaded / MiB).toFixed(0)} MiB uploaded`), res };
}

function resticBackup(repo: string, label: string, files: number, bytes: number): Row {
  const env = { ...process.env, RESTIC_PASSWORD: 'bench', RESTIC_REPOSITORY: repo, RESTIC_CACHE_DIR: join(work, 'restic-cache') };
  dropCaches();
  const t0 = performance.now();
  const out = execFileSync('restic', ['backup', '--json', '--quiet', tree], { env, encoding: 'utf8', maxBuffer: 64 * MiB });
  const s = (performance.now() - t0) / 1000;
  const summary = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).find((o) => o.message_type === 'summary');
  return row(label, s, files, bytes, summary ? `${String(summary.data_added)} bytes added` : undefined);
}

const { files, bytes } = await generate();
console.log(`tree: ${tree}: ${files} files, ${(bytes / MiB).toFixed(0)} MiB; page cache ${canDrop ? 'dropped before each run' : 'NOT dropped (not root)'}`);
const storeDir = join(work, 'store');
const repo = join(work, 'restic');
await rm(storeDir, { recursive: true, force: true });
await rm(repo, { recursive: true, force: true });
await rm(join(work, 'restic-cache'), { recursive: true, force: true });
execFileSync('restic', ['init', '--quiet'], { env: { ...process.env, RESTIC_PASSWORD: 'bench', RESTIC_REPOSITORY: repo } });
const store = await new FileStore(storeDir).init();

const rows: Row[] = [];
// The same push into memory: what the walk, reads and hashing cost without the file store's durable writes.
rows.push((await homefsPush(new MemoryStore(), 'homefs push (memory store)', files, bytes)).row);
rows.push((await homefsPush(store, 'homefs push (empty file store)', files, bytes)).row);
rows.push(resticBackup(repo, 'restic backup (empty repo)', files, bytes));
rows.push((await homefsPush(store, 'homefs re-push (unchanged)', files, bytes)).row);
rows.push(resticBackup(repo, 'restic re-backup (unchanged)', files, bytes));
await store.close();

for (const r of rows) {
  console.log(`${r.name.padEnd(32)} ${r.seconds.toFixed(2).padStart(7)} s  ${r.filesPerSec.toFixed(0).padStart(7)} files/s  ${r.mbPerSec.toFixed(0).padStart(5)} MB/s  ${r.detail ?? ''}`);
}
const ratio = (a: Row, b: Row): string => (b.seconds / a.seconds).toFixed(2);
console.log(`first push: homefs is ${ratio(rows[1] as Row, rows[2] as Row)}x restic's speed; re-push: ${ratio(rows[3] as Row, rows[4] as Row)}x`);
console.log(JSON.stringify({ files, bytes, cpus: (await import('node:os')).cpus().length, rows }));

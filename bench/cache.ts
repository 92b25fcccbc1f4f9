/**
 * Block cache benchmark (not a test): latency of `read()` of a cached 4 KiB range served from memory and
 * from disk (one pread on a kept file handle, what BlockCache does), next to the alternatives considered for
 * disk ranges (open+fstat+pread+close per read; reading the whole 4 MiB block), and `get()` throughput for memory
 * hits, disk hits (re-verified) and store misses (MemoryStore, so the fetch itself costs ~nothing).
 *
 *
 * Then the local cost of a cold small object (target <= 1 ms): `get()` of `small` distinct
 * 4 KiB objects that are only in a zero-latency store, each counted until its disk file is written
 * (`flush()`), one at a time and 64 at a time; and the first range read of a file found on disk at start
 * (not yet trusted by this process: hashed whole once).
 *
 * Run: npx tsc -p . && node dist/bench/cache.js [blocks=32] [small=2000]
 */
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { BlockCache } from '../src/cache/blockcache.js';
import { hashBuffer } from '../src/hash/blake3.js';
import { blockKey } from '../src/store/keys.js';
import { MemoryStore } from '../src/store/memory.js';

const ORG = 'bench';
const BLOCK = 4 * 1024 * 1024;
const RANGE = 4096;

interface Result {
  name: string;
  p50us: number;
  p99us: number;
  opsPerSec: number;
  mbPerSec?: number;
}

async function timeSerial(name: string, n: number, fn: (i: number) => Promise<number>, warmup = true): Promise<Result> {
  if (warmup) for (let i = 0; i < Math.min(200, n); i++) await fn(i);
  const lat: number[] = [];
  let bytes = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const s = process.hrtime.bigint();
    bytes += await fn(i);
    lat.push(Number(process.hrtime.bigint() - s) / 1000);
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort((a, b) => a - b);
  const pick = (q: number): number => Math.round((lat[Math.min(lat.length - 1, Math.floor(q * lat.length))] ?? 0) * 10) / 10;
  return { name, p50us: pick(0.5), p99us: pick(0.99), opsPerSec: Math.round(n / secs), mbPerSec: Math.round(bytes / secs / 1e6) };
}

async function timeParallel(name: string, n: number, width: number, fn: (i: number) => Promise<number>): Promise<Result> {
  let next = 0;
  let bytes = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) {
      const got = await fn(next++);
      bytes += got;
    }
  }));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  return { name, p50us: NaN, p99us: NaN, opsPerSec: Math.round(n / secs), mbPerSec: Math.round(bytes / secs / 1e6) };
}

/** Cold small objects: fetch from a zero-latency store, verify, insert (memory and disk), flushed. */
async function coldSmall(dir: string, n: number): Promise<Result[]> {
  const store = new MemoryStore();
  const hashes: string[] = [];
  for (let i = 0; i < 2 * n; i++) {
    const data = randomBytes(4096);
    const h = hashBuffer(data);
    hashes.push(h);
    await store.put(blockKey(ORG, h), data);
  }
  const cache = new BlockCache({ dir: join(dir, 'small'), store, org: ORG, maxBytes: 8 * 1024 ** 3 });
  await cache.init();
  const out: Result[] = [];
  const serial = await timeSerial('cold 4 KiB get(), one at a time, until on disk', n, async (i) => {
    const got = (await cache.get('block', hashes[i] ?? '')).length;
    await cache.flush();
    return got;
  }, false);
  out.push(serial);
  const t0 = process.hrtime.bigint();
  const par = await timeParallel('cold 4 KiB get(), 64 at a time, then flush', n, 64, async (i) => (await cache.get('block', hashes[n + i] ?? '')).length);
  await cache.flush();
  par.opsPerSec = Math.round(n / (Number(process.hrtime.bigint() - t0) / 1e9));
  out.push(par);
  await cache.close();
  const again = new BlockCache({ dir: join(dir, 'small'), store, org: ORG, maxBytes: 8 * 1024 ** 3, memoryBytes: 0 });
  await again.init();
  out.push(await timeSerial('first 512 B read() of a 4 KiB file found on disk at start', n, async (i) => (await again.read(hashes[i] ?? '', 0, 512)).length, false));
  await again.close();
  return out;
}

async function main(): Promise<void> {
  const nBlocks = Number(process.argv[2] ?? 32);
  const nSmall = Number(process.argv[3] ?? 2000);
  const dir = await mkdtemp(join(tmpdir(), 'homefs-bench-cache-'));
  try {
    const store = new MemoryStore();
    const hashes: string[] = [];
    for (let i = 0; i < nBlocks; i++) {
      const data = randomBytes(BLOCK);
      const h = hashBuffer(data);
      hashes.push(h);
      await store.put(blockKey(ORG, h), data);
    }
    const at = (i: number): string => hashes[i % nBlocks] ?? '';
    const off = (i: number): number => ((i * 7919) % (BLOCK / RANGE)) * RANGE;

    const mem = new BlockCache({ dir: join(dir, 'c'), store, org: ORG, maxBytes: 8 * 1024 ** 3, memoryBytes: 2 * 1024 ** 3 });
    await mem.init();
    const results: Result[] = [];
    results.push(await timeSerial('get() miss (MemoryStore fetch + verify + cache write)', nBlocks, async (i) => (await mem.get('block', at(i))).length, false));
    await mem.flush();
    results.push(await timeSerial('read() 4 KiB, memory hit', 20_000, async (i) => (await mem.read(at(i), off(i), RANGE)).length));
    results.push(await timeSerial('get() 4 MiB, memory hit', 20_000, async (i) => (await mem.get('block', at(i))).length));
    await mem.close();

    const disk = new BlockCache({ dir: join(dir, 'c'), store, org: ORG, maxBytes: 8 * 1024 ** 3, memoryBytes: 0 });
    await disk.init();
    results.push(await timeSerial('read() 4 KiB, disk hit (kept fd: one pread)', 20_000, async (i) => (await disk.read(at(i), off(i), RANGE)).length));
    results.push(await timeParallel('read() 4 KiB, disk hit, 16 concurrent', 40_000, 16, async (i) => (await disk.read(at(i), off(i), RANGE)).length));
    results.push(await timeSerial('get() 4 MiB, disk hit (readFile + verify)', 400, async (i) => (await disk.get('block', at(i))).length));
    results.push(await timeParallel('get() 4 MiB, disk hit, 8 concurrent', 400, 8, async (i) => (await disk.get('block', at(i))).length));
    await disk.close();

    // Alternatives for disk ranges, measured on the same files.
    const path = (h: string): string => join(dir, 'c', 'blocks', h.slice(0, 2), h);
    const buf = Buffer.allocUnsafe(RANGE);
    results.push(await timeSerial('alt: open+fstat+pread+close per 4 KiB read', 20_000, async (i) => {
      const fh = await open(path(at(i)), 'r');
      try {
        await fh.stat();
        return (await fh.read(buf, 0, RANGE, off(i))).bytesRead;
      } finally {
        await fh.close();
      }
    }));
    results.push(await timeSerial('alt: readFile whole 4 MiB block for a 4 KiB range', 400, async (i) => (await readFile(path(at(i)))).subarray(off(i), off(i) + RANGE).length));

    results.push(...(await coldSmall(dir, nSmall)));
    console.log(`blocks: ${nBlocks} x 4 MiB, small objects: ${nSmall} x 4 KiB; node ${process.version}`);
    console.log('| operation | p50 µs | p99 µs | ops/s | MB/s |');
    console.log('|---|---:|---:|---:|---:|');
    for (const r of results) console.log(`| ${r.name} | ${Number.isNaN(r.p50us) ? '-' : r.p50us} | ${Number.isNaN(r.p99us) ? '-' : r.p99us} | ${r.opsPerSec} | ${r.mbPerSec ?? '-'} |`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});

/**
 * Hashing benchmark (not a test): BLAKE3 throughput of @napi-rs/blake-hash on one 256 MiB buffer, one-shot
 * and streaming (1 MiB updates), per 4 MiB block (what push does), and in a worker thread including the
 * transfer of the block; plus hash-wasm when it happens to be installed, and node's SHA-256 as a yardstick.
 * Then the cost of one call on small objects (2 KiB, what a wake verifies by the ten thousand): the binding's
 * Buffer digest, its string digest, and hashBuffer. The figures go into docs/decisions/0002-blake3-hashing.md.
 *
 * Run: npx tsc -p . && node dist/bench/hash.js [MiB=256] [rounds=5]
 */
import { blake3, Blake3Hasher, blake3UrlSafeBase64 } from '@napi-rs/blake-hash';
import { hashBuffer } from '../src/hash/blake3.js';
import { createHash, randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';

const MiB = 1024 * 1024;
const size = Number(process.argv[2] ?? 256) * MiB;
const rounds = Number(process.argv[3] ?? 5);
const data = randomBytes(size);

async function measure(name: string, fn: () => Promise<unknown> | unknown): Promise<void> {
  await fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const gbps = (ms: number): string => (size / 1e9 / (ms / 1000)).toFixed(2);
  console.log(`${name.padEnd(44)} median ${gbps(times[Math.floor(times.length / 2)] as number)} GB/s  best ${gbps(times[0] as number)} GB/s`);
}

const oneShot = blake3(data).toString('hex');
await measure('napi blake3 one-shot', () => blake3(data));
await measure('napi blake3 streaming, 1 MiB updates', () => {
  const h = new Blake3Hasher();
  for (let off = 0; off < size; off += MiB) h.update(data.subarray(off, off + MiB));
  if (h.digest('hex') !== oneShot) throw new Error('streaming digest differs');
});
await measure('napi blake3 per 4 MiB block', () => {
  for (let off = 0; off < size; off += 4 * MiB) blake3(data.subarray(off, off + 4 * MiB));
});

const worker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   const { blake3 } = require(${JSON.stringify(new URL('../../node_modules/@napi-rs/blake-hash/index.js', import.meta.url).pathname)});
   parentPort.on('message', (b) => parentPort.postMessage(blake3(Buffer.from(b.buffer, b.byteOffset, b.byteLength)).toString('hex')));`,
  { eval: true },
);
const inWorker = (block: Buffer): Promise<string> =>
  new Promise((resolve) => {
    worker.once('message', resolve);
    const copy = new Uint8Array(block); // one copy of the block, then its buffer is transferred, not cloned
    worker.postMessage(copy, [copy.buffer]);
  });
await measure('napi blake3 in a worker, 4 MiB blocks (copy+transfer)', async () => {
  for (let off = 0; off < size; off += 4 * MiB) await inWorker(data.subarray(off, off + 4 * MiB));
});
await worker.terminate();

try {
  const wasm = (await import(process.env.HASH_WASM ?? 'hash-wasm')) as { createBLAKE3: () => Promise<{ init(): void; update(b: Uint8Array): void; digest(): string }> };
  const h = await wasm.createBLAKE3();
  await measure('hash-wasm blake3 streaming, 1 MiB updates', () => {
    h.init();
    for (let off = 0; off < size; off += MiB) h.update(data.subarray(off, off + MiB));
    if (h.digest() !== oneShot) throw new Error('hash-wasm digest differs');
  });
} catch (e) {
  if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
  console.log('hash-wasm                                    not installed (set HASH_WASM=/path/to/hash-wasm/dist/index.esm.js to compare)');
}
await measure('node crypto sha256 (yardstick)', () => createHash('sha256').update(data).digest());

// One call on small objects: µs per call, median of `rounds` passes over 2,000 buffers of 2 KiB.
const small = Array.from({ length: 2000 }, () => randomBytes(2048));
function perCall(name: string, fn: (b: Buffer) => unknown): void {
  for (const b of small) fn(b); // warm-up
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    for (const b of small) fn(b);
    times.push(((performance.now() - t0) * 1000) / small.length);
  }
  times.sort((a, b) => a - b);
  console.log(`${name.padEnd(44)} median ${(times[Math.floor(times.length / 2)] as number).toFixed(2)} µs a call (2 KiB)`);
}
perCall('napi blake3() to hex', (b) => blake3(b).toString('hex'));
perCall('napi blake3UrlSafeBase64()', (b) => blake3UrlSafeBase64(b));
perCall('hashBuffer (the string recoded to hex)', (b) => hashBuffer(b));


/**
 * Worker thread of HashPool (pool.ts): hashes the bytes it is sent and transfers them back untouched.
 */
import { blake3 } from '@napi-rs/blake-hash';
import { parentPort } from 'node:worker_threads';

interface Request {
  id: number;
  buf: ArrayBuffer;
  offset: number;
  length: number;
}

parentPort?.on('message', (m: Request) => {
  const hash = blake3(Buffer.from(m.buf, m.offset, m.length)).toString('hex');
  parentPort?.postMessage({ id: m.id, hash, buf: m.buf }, [m.buf]);
});

/**
 * Worker thread of HashPool (pool.ts): hashes the bytes it is sent and transfers them back untouched
 * (bytes in a SharedArrayBuffer stay where they are: only the hash goes back).
 */
import { blake3 } from '@napi-rs/blake-hash';
import { parentPort } from 'node:worker_threads';

interface Request {
  id: number;
  buf: ArrayBuffer | SharedArrayBuffer;
  offset: number;
  length: number;
}

parentPort?.on('message', (m: Request) => {
  const hash = blake3(Buffer.from(m.buf, m.offset, m.length)).toString('hex');
  if (m.buf instanceof SharedArrayBuffer) parentPort?.postMessage({ id: m.id, hash });
  else parentPort?.postMessage({ id: m.id, hash, buf: m.buf }, [m.buf]);
});

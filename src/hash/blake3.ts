/**
 * BLAKE3-256 hashing of buffers, and the block layout of files.
 *
 * Backed by @napi-rs/blake-hash (native, ~4.5 GB/s on one core here; see docs/decisions/0002-blake3-hashing.md). Hashing a
 * buffer is synchronous; callers on the FUSE thread hash large content through `HashPool` (pool.ts) so the
 * event loop never stalls for more than a few milliseconds.
 */
import { blake3UrlSafeBase64 } from '@napi-rs/blake-hash';

/** Files up to this size are one block. */
export const SINGLE_BLOCK_MAX = 8 * 1024 * 1024;
/** Larger files are split into blocks of this size (the last one shorter). */
export const BLOCK_SIZE = 4 * 1024 * 1024;

/**
 * The hex BLAKE3-256 of `data`. The binding's digest as a string, recoded: its `blake3()` returns a Buffer it
 * allocates per call, 4.9 µs a call for 2 KiB here, the string 2.0 µs, this 2.5 µs (bench/hash.ts; a wake
 * verifies tens of thousands of small objects).
 */
export function hashBuffer(data: Uint8Array): string {
  const digest = blake3UrlSafeBase64(Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  return Buffer.from(digest, 'base64url').toString('hex');
}

/** Block boundaries `[offset, length]` of a file of `size` bytes. Empty files have none. */
export function blockRanges(size: number): Array<[number, number]> {
  if (size === 0) return [];
  if (size <= SINGLE_BLOCK_MAX) return [[0, size]];
  const out: Array<[number, number]> = [];
  for (let off = 0; off < size; off += BLOCK_SIZE) out.push([off, Math.min(BLOCK_SIZE, size - off)]);
  return out;
}

/** How many blocks a file of `size` bytes has (blockRanges(size).length, without building them). */
export function blockCount(size: number): number {
  if (size === 0) return 0;
  return size <= SINGLE_BLOCK_MAX ? 1 : Math.ceil(size / BLOCK_SIZE);
}

/** Block size used for a file of `size` bytes (the stride between block offsets). */
export function blockStride(size: number): number {
  return size <= SINGLE_BLOCK_MAX ? Math.max(size, 1) : BLOCK_SIZE;
}

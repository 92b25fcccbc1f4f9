/**
 * BLAKE3-256 hashing of buffers and files, and the block layout of files.
 *
 * Backed by @napi-rs/blake-hash (native, ~4.5 GB/s on one core here; see docs/decisions.md). Hashing a
 * buffer is synchronous; callers on the FUSE thread hash large content through `HashPool` (pool.ts) so the
 * event loop never stalls for more than a few milliseconds.
 */
import { blake3 } from '@napi-rs/blake-hash';
import { open } from 'node:fs/promises';

/** Files up to this size are one block. */
export const SINGLE_BLOCK_MAX = 8 * 1024 * 1024;
/** Larger files are split into blocks of this size (the last one shorter). */
export const BLOCK_SIZE = 4 * 1024 * 1024;

export function hashBuffer(data: Uint8Array): string {
  return blake3(Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)).toString('hex');
}

/** Block boundaries `[offset, length]` of a file of `size` bytes. Empty files have none. */
export function blockRanges(size: number): Array<[number, number]> {
  if (size === 0) return [];
  if (size <= SINGLE_BLOCK_MAX) return [[0, size]];
  const out: Array<[number, number]> = [];
  for (let off = 0; off < size; off += BLOCK_SIZE) out.push([off, Math.min(BLOCK_SIZE, size - off)]);
  return out;
}

/** Block size used for a file of `size` bytes (the stride between block offsets). */
export function blockStride(size: number): number {
  return size <= SINGLE_BLOCK_MAX ? Math.max(size, 1) : BLOCK_SIZE;
}

export interface FileBlock {
  hash: string;
  offset: number;
  length: number;
}

/**
 * Streams a file block by block, calling `onBlock` with each block's bytes and hash. At most one block
 * (≤ 8 MiB) is held in memory at a time. Returns the blocks; `size` is what was read.
 */
export async function hashFileBlocks(
  path: string,
  onBlock?: (block: FileBlock, data: Buffer) => Promise<void> | void,
): Promise<{ size: number; blocks: FileBlock[] }> {
  const fh = await open(path, 'r');
  try {
    const st = await fh.stat();
    const blocks: FileBlock[] = [];
    let size = 0;
    for (const [offset, length] of blockRanges(st.size)) {
      const buf = Buffer.allocUnsafe(length);
      let got = 0;
      while (got < length) {
        const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      const data = got === length ? buf : buf.subarray(0, got);
      const block = { hash: hashBuffer(data), offset, length: data.length };
      blocks.push(block);
      size += data.length;
      if (onBlock) await onBlock(block, data);
      if (got < length) break; // file shrank while we read it
    }
    return { size, blocks };
  } finally {
    await fh.close();
  }
}

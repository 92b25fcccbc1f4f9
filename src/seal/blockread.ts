/**
 * How a seal and write-behind read a block of a changed file: a large block into a slab of the home's
 * reused buffers (util/slabs.ts), a small one into a buffer of its own.
 *
 * A fresh 4 MiB Buffer per block is a fresh mapping: each of its pages faults on the read, the hash reads
 * it cold, and it is freed only when V8 collects it. Measured on a 512 MiB file read and hashed block by
 * block (docs/decisions/0075-seal-block-buffers.md): a reused buffer made the reads 5x and the hashing 4x
 * faster. Slabs are SharedArrayBuffers, so the hash worker reads them in place.
 */
import { Slabs } from '../util/slabs.js';

/** Reads a block's bytes: into `into` when given and the source can (an upper file), else into a new buffer. */
export type BlockBytes = (into?: Buffer) => Promise<Buffer>;

/** Blocks from this size on are read into slabs; smaller ones cost little to allocate. */
export const SLAB_MIN = 256 * 1024;

/** Bytes of slabs a home's seals and write-behind hold at once (more waits for a release). */
export const SEAL_SLAB_BYTES = 32 * 1024 * 1024;

/** The home's block buffers: free ones are dropped after a second without use. */
export function sealSlabs(): Slabs {
  return new Slabs(SEAL_SLAB_BYTES, SLAB_MIN, SEAL_SLAB_BYTES, 1000);
}

/**
 * A block's bytes and hash, and what gives their buffer back: call `release` once nothing reads `data` any
 * more (the block stored, or found), and a slab is reused by the next block at once. On a failure the
 * buffer is given back here.
 */
export async function readAndHash(
  slabs: Slabs | undefined,
  length: number,
  bytes: BlockBytes,
  hash: (data: Buffer) => Promise<{ hash: string; data: Buffer }>,
): Promise<{ hash: string; data: Buffer; release: () => void }> {
  const slab = slabs && length >= SLAB_MIN ? await slabs.take(length) : undefined;
  const release = slab?.release ?? ((): void => undefined);
  try {
    return { ...(await hash(await bytes(slab?.buf))), release };
  } catch (e) {
    release();
    throw e;
  }
}

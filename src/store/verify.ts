/**
 * The check every read of a content-addressed object passes before anyone sees its bytes: they must hash
 * to the name they were stored under. Used by the object store (format/objects.ts) and the block cache
 * (cache/blockcache.ts), so "verified" means the same thing on every read path.
 */
import { hashBuffer } from '../hash/blake3.js';
import { CorruptObjectError } from '../util/errors.js';

/** A BLAKE3 of a buffer as 64 lowercase hex digits, on this thread or a worker pool. */
export type HashFn = (data: Buffer) => string | Promise<string>;

/** Returns `data` if it hashes to `hash`; otherwise throws CorruptObjectError naming `key`. */
export async function verifyObject(key: string, hash: string, data: Buffer, hashFn: HashFn = hashBuffer): Promise<Buffer> {
  if ((await hashFn(data)) !== hash) throw new CorruptObjectError(key);
  return data;
}

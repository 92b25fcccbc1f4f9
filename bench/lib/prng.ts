/**
 * Deterministic pseudo-random bytes, fast enough to generate gigabytes: AES-256-CTR over zeros, keyed by
 * the SHA-256 of a seed string. The same seed always yields the same bytes, so a generated home is
 * identical across runs and machines, and two homes share exactly the content that shares seeds.
 */
import { createCipheriv, createHash } from 'node:crypto';

export class Prng {
  private readonly cipher;
  private readonly zeros = Buffer.alloc(1 << 20);

  constructor(seed: string) {
    const key = createHash('sha256').update(seed).digest();
    this.cipher = createCipheriv('aes-256-ctr', key, Buffer.alloc(16));
  }

  /** The next n bytes of the stream. */
  bytes(n: number): Buffer {
    const parts: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const k = Math.min(left, this.zeros.length);
      parts.push(this.cipher.update(this.zeros.subarray(0, k)));
      left -= k;
    }
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** A uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + (this.bytes(4).readUInt32LE(0) % (hi - lo + 1));
  }

  /** Text-like bytes (base64 lines): compressible the way source code is, unlike raw random data. */
  text(n: number): Buffer {
    const raw = this.bytes(Math.ceil((n * 3) / 4)).toString('base64');
    const lines = raw.match(/.{1,60}/g) ?? [];
    return Buffer.from(lines.join('\n').slice(0, n));
  }
}

/** A stable 32-bit hash of a string (to order files reproducibly). */
export function hash32(s: string): number {
  return createHash('sha256').update(s).digest().readUInt32LE(0);
}

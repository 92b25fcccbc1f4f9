/**
 * Store key layout, the one place that builds keys (identical in a directory and in a bucket):
 *
 *   <org>/blocks/<h[0:2]>/<hash>        file data
 *   <org>/meta/<h[0:2]>/<hash>          trees and snapshots
 *   <org>/homes/<home>/heads/<gen>      snapshot id of generation <gen>; created only if absent
 *   <org>/homes/<home>/conflicts/<...>  snapshots that lost a HEAD race, kept, never applied
 *   <org>/homes/<home>/LEASE            which host holds the home read-write, until when
 *
 * Generations are encoded as a fixed-width descending counter so that the newest sorts first.
 */
const HASH = /^[0-9a-f]{64}$/;

export const MAX_GEN = 9_999_999_999_999; // 13 digits; a seal a millisecond for 300 years

export function assertHash(h: string): string {
  if (!HASH.test(h)) throw new Error(`not a BLAKE3 hash: ${h}`);
  return h;
}

export function blockKey(org: string, hash: string): string {
  assertHash(hash);
  return `${org}/blocks/${hash.slice(0, 2)}/${hash}`;
}

export function metaKey(org: string, hash: string): string {
  assertHash(hash);
  return `${org}/meta/${hash.slice(0, 2)}/${hash}`;
}

export function homePrefix(org: string, home: string): string {
  return `${org}/homes/${home}/`;
}

export function headsPrefix(org: string, home: string): string {
  return `${org}/homes/${home}/heads/`;
}

export function encodeGen(gen: number): string {
  if (!Number.isInteger(gen) || gen < 0 || gen > MAX_GEN) throw new Error(`generation out of range: ${gen}`);
  return String(MAX_GEN - gen).padStart(13, '0');
}

export function decodeGen(s: string): number {
  if (!/^[0-9]{13}$/.test(s)) throw new Error(`not a generation: ${s}`);
  return MAX_GEN - Number(s);
}

export function headKey(org: string, home: string, gen: number): string {
  return headsPrefix(org, home) + encodeGen(gen);
}

export function conflictKey(org: string, home: string, snapshot: string, timeMs: number): string {
  return `${org}/homes/${home}/conflicts/${String(timeMs).padStart(15, '0')}-${assertHash(snapshot)}`;
}

export function leaseKey(org: string, home: string): string {
  return `${org}/homes/${home}/LEASE`;
}

/** What a key holds, for metering: `block` (file data), `meta` (trees, snapshots) or `other` (heads, lease). */
export function keyKind(key: string): 'block' | 'meta' | 'other' {
  const part = key.split('/')[1];
  return part === 'blocks' ? 'block' : part === 'meta' ? 'meta' : 'other';
}

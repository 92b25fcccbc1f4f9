/**
 * Store key layout, the one place that builds keys (identical in a directory and in a bucket):
 *
 *   <org>/blocks/<h[0:2]>/<hash>        file data
 *   <org>/meta/<h[0:2]>/<hash>          trees and snapshots
 *   <org>/homes/<home>/heads/<gen>      snapshot id of generation <gen>; created only if absent
 *   <org>/homes/<home>/conflicts/<...>  snapshots that lost a HEAD race, kept, never applied
 *   <org>/homes/<home>/LEASE            which host holds the home read-write, until when
 *   <org>/homes/<home>/HOTSET           what the last session read, in order (transfer/hotset.ts); a hint
 *   <org>/homes/<home>/WAKEPACK         the small objects of HOTSET, concatenated; a hint
 *   <org>/homes/<home>/NSPACK           every tree of a recent snapshot, concatenated (transfer/nspack.ts); a hint
 *   <org>/homes/<home>/PUSHPACK         the small blocks of the last pushed snapshot, in pull order (transfer/pushpack.ts); a hint
 *   <org>/gc/<epoch>                    a gc run announced (format/gcfence.ts); created only if absent
 *   <org>/gc/<epoch>.done               that run is over
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

/** Where one kind of content-addressed object lives: `<org>/blocks/` or `<org>/meta/`. */
export function objectsPrefix(org: string, kind: 'blocks' | 'meta'): string {
  return `${org}/${kind}/`;
}

/** The meta keys whose hash starts with `hexPrefix` (at least 2 hex digits). */
export function metaHashPrefix(org: string, hexPrefix: string): string {
  if (!/^[0-9a-f]{2,64}$/.test(hexPrefix)) throw new Error(`not a hash prefix: ${hexPrefix}`);
  return `${org}/meta/${hexPrefix.slice(0, 2)}/${hexPrefix}`;
}

/** The last component of a block or meta key: the object's hash, if the key is one of ours. */
export function keyHash(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}

/** The first component of any key. */
export function keyOrg(key: string): string {
  return key.slice(0, Math.max(0, key.indexOf('/')));
}

export function homesPrefix(org: string): string {
  return `${org}/homes/`;
}

/** The home a key under `homesPrefix(org)` belongs to. */
export function keyHome(org: string, key: string): string {
  return key.slice(homesPrefix(org).length).split('/')[0] ?? '';
}

export function homePrefix(org: string, home: string): string {
  return `${homesPrefix(org)}${home}/`;
}

export function headsPrefix(org: string, home: string): string {
  return `${homePrefix(org, home)}heads/`;
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

/** A home's fsync log for HEAD generation `gen` (fsynclog/homelog.ts); entries sort newest first. */
export function logPrefix(org: string, home: string, gen: number): string {
  return `${homePrefix(org, home)}log/${encodeGen(gen)}/`;
}

export function logKey(org: string, home: string, gen: number, seq: number): string {
  return logPrefix(org, home, gen) + encodeGen(seq);
}

/** Every log of the home, all generations. */
export function logsPrefix(org: string, home: string): string {
  return `${homePrefix(org, home)}log/`;
}

export function conflictsPrefix(org: string, home: string): string {
  return `${homePrefix(org, home)}conflicts/`;
}

export function conflictKey(org: string, home: string, snapshot: string, timeMs: number): string {
  return `${conflictsPrefix(org, home)}${String(timeMs).padStart(15, '0')}-${assertHash(snapshot)}`;
}

export function leaseKey(org: string, home: string): string {
  return `${homePrefix(org, home)}LEASE`;
}

/** The home's hot-set record (transfer/hotset.ts): replaced whole by each writer, never relied on. */
export function hotsetKey(org: string, home: string): string {
  return `${homePrefix(org, home)}HOTSET`;
}

/** The home's wake pack: the small objects its hot-set record marks as packed, back to back. */
export function wakePackKey(org: string, home: string): string {
  return `${homePrefix(org, home)}WAKEPACK`;
}

/** The home's namespace pack: the trees of one of its snapshots, with an index; replaced whole, never relied on. */
export function nsPackKey(org: string, home: string): string {
  return `${homePrefix(org, home)}NSPACK`;
}

/** The home's push pack: the small blocks of the snapshot `homefs push` committed last; replaced whole, never relied on. */
export function pushPackKey(org: string, home: string): string {
  return `${homePrefix(org, home)}PUSHPACK`;
}

export function gcPrefix(org: string): string {
  return `${org}/gc/`;
}

export function gcEpochKey(org: string, epoch: number): string {
  return gcPrefix(org) + encodeGen(epoch);
}

export function gcDoneKey(org: string, epoch: number): string {
  return `${gcEpochKey(org, epoch)}.done`;
}

/** What a key holds, for metering: `block` (file data), `meta` (trees, snapshots) or `other` (heads, lease). */
export function keyKind(key: string): 'block' | 'meta' | 'other' {
  const part = key.split('/')[1];
  return part === 'blocks' ? 'block' : part === 'meta' ? 'meta' : 'other';
}

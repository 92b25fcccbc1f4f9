/**
 * HEAD of a home: a list of create-only generation records `<org>/homes/<home>/heads/<gen>`, each holding
 * one snapshot id (64 lowercase hex, no newline). Generation keys are a descending fixed-width counter
 * (keys.ts), so the first key listed is HEAD and the listing is the home's history, newest first.
 *
 * Advancing HEAD is `putIfAbsent` of generation `from + 1`: of two writers that started from the same HEAD
 * exactly one creates it. The loser's snapshot stays in the store, is recorded under `conflicts/`, and the
 * loser gets a `HeadConflictError`. Nothing existing is ever overwritten, so no compare-and-swap is needed.
 */
import { conflictKey, decodeGen, headKey, headsPrefix } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { FormatError, HeadConflictError } from '../util/errors.js';
import { validateName } from '../util/names.js';

export interface HeadRecord {
  gen: number;
  snapshot: string;
}

const ID = /^[0-9a-f]{64}$/;

function parseRecord(key: string, prefix: string, data: Buffer): HeadRecord {
  let gen: number;
  try {
    gen = decodeGen(key.slice(prefix.length));
  } catch {
    throw new FormatError('head', `unexpected key ${key}`);
  }
  const snapshot = data.toString('latin1');
  if (!ID.test(snapshot)) throw new FormatError('head', `${key} does not hold a snapshot id`);
  return { gen, snapshot };
}

function check(org: string, home: string): void {
  validateName('org', org);
  validateName('home', home);
}

/**
 * The newest generation of the home, or null when the home has none yet. `onGen` hears the generation as
 * soon as the listing names it, before its record is read (the claim starts listing its log then).
 */
export async function readHead(store: Store, org: string, home: string, onGen?: (gen: number) => void): Promise<HeadRecord | null> {
  check(org, home);
  const prefix = headsPrefix(org, home);
  for await (const o of store.list(prefix, 1)) {
    const tail = o.key.slice(prefix.length);
    if (onGen && /^[0-9]{13}$/.test(tail)) onGen(decodeGen(tail));
    return parseRecord(o.key, prefix, await store.get(o.key));
  }
  return null;
}

/**
 * Makes `snapshot` HEAD as generation `fromGen + 1` (generation 0 when `fromGen` is null) and returns the
 * new generation. If that generation already exists with another snapshot, the snapshot is recorded under
 * `conflicts/` and HeadConflictError is thrown; HEAD is unchanged.
 */
export async function advanceHead(store: Store, org: string, home: string, fromGen: number | null, snapshot: string): Promise<number> {
  check(org, home);
  if (!ID.test(snapshot)) throw new Error(`not a snapshot id: ${snapshot}`);
  const gen = fromGen === null ? 0 : fromGen + 1;
  const key = headKey(org, home, gen);
  const data = Buffer.from(snapshot, 'latin1');
  if (await store.putIfAbsent(key, data)) return gen;
  // A retry after a lost reply finds its own record: that is a success, not a conflict.
  const existing = await store.get(key);
  if (existing.equals(data)) return gen;
  await store.put(conflictKey(org, home, snapshot, Date.now()), data);
  throw new HeadConflictError(`${org}/${home}`, fromGen ?? -1, snapshot);
}

/** Up to `limit` generations of the home, newest first. */
export async function listHistory(store: Store, org: string, home: string, limit = Infinity): Promise<HeadRecord[]> {
  check(org, home);
  const prefix = headsPrefix(org, home);
  const keys: string[] = [];
  for await (const o of store.list(prefix, Number.isFinite(limit) ? limit : undefined)) keys.push(o.key);
  return Promise.all(keys.map(async (k) => parseRecord(k, prefix, await store.get(k))));
}

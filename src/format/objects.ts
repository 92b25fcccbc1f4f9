/**
 * Typed, verified access to one org's content-addressed objects in a Store: blocks (file data), trees and
 * snapshots. Every object read is hashed and compared with its key before anyone sees it (a mismatch is a
 * `CorruptObjectError`, never served); trees and snapshots are also decoded and validated (codec.ts).
 * Writes skip objects the store already has, so re-sealing unchanged content costs existence checks only.
 *
 * The org is fixed at construction: this class can only ever build keys under `<org>/` (keys.ts), which is
 * what keeps tenants apart even when a caller knows another org's hashes.
 */
import { hashBuffer } from '../hash/blake3.js';
import { assertHash, blockKey, keyHash, metaHashPrefix, metaKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { verifyObject } from '../store/verify.js';
import { FormatError, NotFoundError, UserError } from '../util/errors.js';
import { validateName } from '../util/names.js';
import { decodeSnapshot, decodeTree, encodeSnapshot, encodeTree } from './codec.js';
import type { Snapshot, Tree } from '../model/tree.js';

/** Objects up to this size are written without an existence check (a HEAD costs what a small PUT does). */
export const SMALL_OBJECT = 64 * 1024;

/** Verified snapshot bytes read lately, per Store object (getSnapshot). */
const recentSnapshots = new WeakMap<Store, Map<string, Buffer>>();
const RECENT_SNAPSHOTS = 16;

/**
 * What a commit relied on without writing it: every existing object a dedupe check chose not to upload.
 * Only these can have been garbage that a concurrent gc deletes (gcfence.ts); meta objects keep their bytes
 * so they can be written again, blocks only their hash (the committer knows where its bytes are).
 */
export class ReuseLog {
  readonly meta = new Map<string, Buffer>();
  readonly blocks = new Set<string>();
  /** Of `blocks`, those relied on because write-behind stored them under the commit's gc epoch (seal/writebehind.ts). */
  readonly tagged = new Set<string>();
}

export class ObjectStore {
  /** When set, every meta object this store writes is also handed to it (push keeps its trees for the namespace pack). */
  memo: { add(hash: string, data: Buffer): void } | null = null;

  constructor(readonly store: Store, readonly org: string, readonly reuse: ReuseLog | null = null) {
    validateName('org', org);
  }

  /** The same objects, recording every dedupe hit in `log`. */
  tracking(log: ReuseLog): ObjectStore {
    const o = new ObjectStore(this.store, this.org, log);
    o.memo = this.memo;
    return o;
  }

  /**
   * After a gc may have overlapped: writes again every reused meta object that is gone and returns the
   * reused blocks that are gone (the caller re-uploads them from its own bytes, or gives up).
   */
  async restoreReused(): Promise<string[]> {
    const log = this.reuse;
    if (!log) return [];
    const metaKeys = [...log.meta.keys()].map((h) => metaKey(this.org, h));
    const present = await this.store.has(metaKeys);
    for (const [h, data] of log.meta) if (!present.has(metaKey(this.org, h))) await this.store.put(metaKey(this.org, h), data);
    return [...(await this.missingBlocks([...log.blocks]))];
  }

  /**
   * Where getBlock looks before the store: verified blocks read some other way (a push pack, read by pull).
   * undefined from `take` means: fetch it from the store.
   */
  blockSource: { take(hash: string): Promise<Buffer | undefined> } | null = null;

  /** The verified bytes of block `hash`. NotFoundError if absent, CorruptObjectError if they do not match. */
  async getBlock(hash: string): Promise<Buffer> {
    const packed = await this.blockSource?.take(hash);
    if (packed) return packed;
    const key = blockKey(this.org, hash);
    return verifyObject(key, hash, await this.store.get(key));
  }

  /** Stores a block; `hash` must be the BLAKE3 of `data` (the caller just computed it). */
  async putBlock(hash: string, data: Buffer): Promise<void> {
    await this.store.put(blockKey(this.org, hash), data);
  }

  /**
   * Stores a small block unless the store has it, in one request (create-if-absent) instead of an
   * existence check and a write. Returns whether it was new; an existing one counts as reused (the fence).
   */
  async putBlockIfAbsent(hash: string, data: Buffer): Promise<boolean> {
    const created = await this.store.putIfAbsent(blockKey(this.org, hash), data);
    if (!created) this.reuse?.blocks.add(hash);
    return created;
  }

  /** The subset of `hashes` whose blocks are not in the store (duplicates collapsed). */
  async missingBlocks(hashes: readonly string[]): Promise<Set<string>> {
    const unique = [...new Set(hashes)];
    const present = await this.store.has(unique.map((h) => blockKey(this.org, h)));
    const missing = new Set(unique.filter((h) => !present.has(blockKey(this.org, h))));
    if (this.reuse) for (const h of unique) if (!missing.has(h)) this.reuse.blocks.add(h);
    return missing;
  }

  /**
   * Meta objects already verified by their hash (a namespace pack's trees, read at once by pull): getMeta
   * answers from here before it asks the store.
   */
  readonly known = new Map<string, Buffer>();

  private async getMeta(hash: string): Promise<Buffer> {
    const have = this.known.get(hash);
    if (have) return have;
    const key = metaKey(this.org, hash);
    return verifyObject(key, hash, await this.store.get(key));
  }

  private async putMeta(data: Buffer, hash = hashBuffer(data)): Promise<string> {
    const key = metaKey(this.org, hash);
    this.memo?.add(hash, data);
    // A small object is cheaper to write again (idempotent) than to ask about first: one round trip.
    if (data.length <= SMALL_OBJECT || !(await this.store.has([key])).has(key)) await this.store.put(key, data);
    else this.reuse?.meta.set(hash, data);
    return hash;
  }

  /** The verified bytes of tree (or any meta object) `hash`. */
  async getTreeData(hash: string): Promise<Buffer> {
    return this.getMeta(hash);
  }

  async getTree(hash: string): Promise<Tree> {
    return decodeTree(await this.getMeta(hash), hash);
  }

  /** Stores a tree (unless present) and returns its hash. */
  async putTree(tree: Tree): Promise<string> {
    return this.putMeta(encodeTree(tree));
  }

  /** A tree's hash, computed locally, and the write that stores it (started by the caller when it likes). */
  stageTree(tree: Tree): { hash: string; write: () => Promise<string> } {
    const data = encodeTree(tree);
    const hash = hashBuffer(data);
    return { hash, write: () => this.putMeta(data, hash) };
  }

  /**
   * Snapshot `id`, decoded. Its verified bytes are remembered per Store object (the last few), so that the
   * parts of a wake that each read HEAD's snapshot (base, log, log tail, packs) cost one round trip, not
   * one each. Safe because a snapshot is immutable and addressed by its hash; nothing uses getSnapshot to
   * ask whether a snapshot still exists (gc and the fence ask the store with `has`).
   */
  async getSnapshot(id: string): Promise<Snapshot> {
    let seen = recentSnapshots.get(this.store);
    const have = seen?.get(id);
    if (have) return decodeSnapshot(have, id);
    const data = await this.getMeta(id);
    if (!seen) recentSnapshots.set(this.store, (seen = new Map()));
    seen.set(id, data);
    if (seen.size > RECENT_SNAPSHOTS) seen.delete(seen.keys().next().value as string);
    return decodeSnapshot(data, id);
  }

  /** Stores a snapshot (unless present) and returns its id (the BLAKE3 of its encoding). */
  async putSnapshot(s: Snapshot): Promise<string> {
    return this.putMeta(encodeSnapshot(s));
  }

  /**
   * The full id of the snapshot whose id starts with `prefix` (at least 6 hex digits). Lists the meta
   * objects with that prefix and keeps the snapshots among them. UserError when none or several match.
   */
  async resolveSnapshot(prefix: string): Promise<string> {
    if (!/^[0-9a-f]{6,64}$/.test(prefix)) throw new UserError(`invalid snapshot '${prefix}': expected 6-64 lowercase hex digits`);
    if (prefix.length === 64) {
      assertHash(prefix);
      try {
        await this.getSnapshot(prefix); // a mistyped full id is the user's error, not damage in the store
      } catch (e) {
        if (e instanceof NotFoundError || e instanceof FormatError) throw new UserError(`no snapshot ${prefix} in org ${this.org}`);
        throw e;
      }
      return prefix;
    }
    const found: string[] = [];
    for await (const o of this.store.list(metaHashPrefix(this.org, prefix), 64)) {
      const hash = keyHash(o.key);
      try {
        await this.getSnapshot(hash);
        found.push(hash);
      } catch (e) {
        // A tree (it does not decode as a snapshot), or deleted since the listing. Anything else, an
        // unreachable store or a corrupt object, is an answer the user must see.
        if (e instanceof NotFoundError || e instanceof FormatError) continue;
        throw e;
      }
    }
    if (found.length === 0) throw new UserError(`no snapshot ${prefix} in org ${this.org}`);
    if (found.length > 1) throw new UserError(`snapshot prefix ${prefix} is ambiguous (${found.length} matches); give more digits`);
    return found[0] as string;
  }
}

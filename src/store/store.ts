/**
 * The `Store`: a flat, key-addressed object store (a local directory or an S3 bucket) holding blocks,
 * trees, snapshots and HEAD generations under `<org>/...` keys (see keys.ts and docs/format.md).
 *
 * The contract is deliberately small so that any S3-compatible service can implement it. Behaviour such
 * as retries, metering or fault injection is added by wrapping a Store, never by flags on it.
 *
 * Errors (util/errors.ts, transient.ts), the same for every method and backend:
 *  - `TransientStoreError` (a `StoreUnavailableError`): throttling, a 5xx, a dropped connection, a
 *    timeout. The only retryable failure: `RetryingStore` (retry.ts) retries it, and raw socket errors,
 *    with backoff until its deadline, then throws it to the caller.
 *  - `StoreUnavailableError` that is not transient (e.g. the host name does not resolve): not retried.
 *  - `NotFoundError` (get only): the key does not exist. An answer, not a failure: never retried.
 *  - `UserError`: refused credentials, unknown bucket, any other refused request. Never retried.
 *  - anything else (a local I/O error of the file store, a bug) propagates as it is. Never retried.
 * Every method is safe to call again after any error (puts are idempotent, putIfAbsent is atomic), so a
 * caller may always retry a whole operation later; "retryable" above is about retrying automatically.
 */

export interface ObjectInfo {
  key: string;
  size: number;
  /** Last modification time in ms since the epoch (used by gc's grace period). */
  mtimeMs: number;
}

export interface Store {
  /** A printable URL of this store, without credentials. */
  readonly url: string;

  /**
   * Which of `keys` exist. Returns the subset that exists. Safe to retry. Implementations check many
   * keys concurrently with bounded parallelism.
   */
  has(keys: readonly string[]): Promise<Set<string>>;

  /**
   * The bytes of `key`. Throws `NotFoundError` when the object does not exist. Safe to retry.
   * The store itself does not verify content: callers that know the expected hash check it with
   * `verifyObject` (verify.ts), which throws `CorruptObjectError` on a mismatch.
   */
  get(key: string): Promise<Buffer>;

  /**
   * `length` bytes of `key` starting at byte `offset` (fewer when the object ends first; empty past its
   * end). Throws `NotFoundError` when the object does not exist. Safe to retry. Used to fetch parts of a
   * wake pack (transfer/hotset.ts); the caller verifies what it cuts out of the range by hash.
   */
  getRange(key: string, offset: number, length: number): Promise<Buffer>;

  /**
   * The bytes of `key` when it is exactly `length` bytes long and they are at hand without a wait (a store
   * on this host's disk: the object's file in the kernel's caches), else undefined. Unverified, like `get`.
   * Optional: stores over the network have nothing at hand.
   */
  readAtOnce?(key: string, length: number): Buffer | undefined;

  /**
   * Writes `data` under `key`, replacing nothing visible to readers until complete (atomic).
   * Idempotent for content-addressed keys: writing the same bytes twice is harmless. Safe to retry.
   */
  put(key: string, data: Buffer): Promise<void>;

  /**
   * Creates `key` only if it does not exist yet (create-if-absent). Returns true if this call created
   * it, false if the key already existed (whoever wrote it). Atomic: of concurrent callers exactly one
   * gets true. This is the only primitive HEAD advancement relies on. A retry after a lost reply may
   * return false for an object this caller created; callers compare the content to tell.
   */
  putIfAbsent(key: string, data: Buffer): Promise<boolean>;

  /**
   * Objects whose key starts with `prefix`, in ascending key order. `limit` stops early
   * (listing one key of a home's heads/ finds HEAD because generations sort newest first).
   */
  list(prefix: string, limit?: number): AsyncIterable<ObjectInfo>;

  /** Deletes `key`; deleting a missing key is not an error. */
  delete(key: string): Promise<void>;

  /** Releases connections and handles. */
  close(): Promise<void>;

  /**
   * Multipart uploads, on stores that have them (S3): an object too large to hold in memory is written
   * part by part and appears whole, atomically, at `complete`. undefined: the store has none (the caller
   * builds the object in memory and `put`s it). Wrappers pass it through (retry.ts retries each call).
   */
  readonly uploads?: Uploads | undefined;
}

/** One upload's calls (S3's CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload). */
export interface Uploads {
  /** Every part but the last must be at least this long (S3: 5 MiB); at most 10,000 parts. */
  readonly minPartBytes: number;
  /** Starts an upload of `key`; returns its id. Nothing is visible under `key` until `complete`. */
  start(key: string): Promise<string>;
  /** Uploads part `n` (1-based) of upload `id`; returns its ETag. Uploading a part again replaces it (safe to retry). */
  part(key: string, id: string, n: number, data: Buffer): Promise<string>;
  /** Makes `key` the parts 1..etags.length in order (etags[i] is part i+1's), replacing what was there. */
  complete(key: string, id: string, etags: readonly string[]): Promise<void>;
  /** Drops upload `id` and its parts; aborting an upload that is gone is not an error. */
  abort(key: string, id: string): Promise<void>;
  /** Uploads started and neither completed nor aborted, of keys starting with `prefix` (gc aborts old ones). */
  list(prefix: string): Promise<PendingUpload[]>;
}

export interface PendingUpload {
  key: string;
  id: string;
  /** When it was started, in ms since the epoch. */
  startedMs: number;
}

/** Whether a store is reached over the network (s3://), as opposed to one on this host's disk (file://) or in memory. */
export function overNetwork(storeUrl: string): boolean {
  return !storeUrl.startsWith('file:') && !storeUrl.startsWith('memory:');
}

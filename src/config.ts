/**
 * Tunables and default locations, in one place with their documented defaults. Every layer takes what it
 * needs from here by constructor argument; nothing reads the environment deep inside the code.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The user's data directory for homefs: /var/lib/homefs for root, else $XDG_DATA_HOME/homefs. */
export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HOMEFS_DATA_DIR) return env.HOMEFS_DATA_DIR;
  if (process.getuid?.() === 0) return '/var/lib/homefs';
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'homefs');
}

/** Store URL: --store, else HOMEFS_STORE, else a file:// store in the data directory. */
export function defaultStoreUrl(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.HOMEFS_STORE;
  if (v && v !== 'false') return v;
  return `file://${join(dataDir(env), 'store')}`;
}

/** HOMEFS_STORE=false (alias COVEY_HOME_STORE=false): homes are plain directories, no snapshots. */
export function storeDisabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.HOMEFS_STORE === 'false' || env.COVEY_HOME_STORE === 'false';
}

/** Default excludes: the scrap class. Overridden by HOMEFS_EXCLUDES (alias COVEY_HOME_EXCLUDES), comma or newline separated. */
export const DEFAULT_EXCLUDES = ['__pycache__/', '.dartServer/', '*.pyc', '*.tmp', '.cache/pip/', '.cache/ms-playwright/'];

export function excludePatterns(env: NodeJS.ProcessEnv = process.env): string[] {
  const v = env.HOMEFS_EXCLUDES ?? env.COVEY_HOME_EXCLUDES;
  if (v === undefined) return DEFAULT_EXCLUDES;
  return v.split(/[,\n]/).map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * Test fault injection, for the crash tests only: HOMEFS_TEST_KILL_IN_COMMIT=n makes the daemon SIGKILL
 * itself inside its n-th journal commit that holds several changes (half its redo-log record written);
 * HOMEFS_TEST_KILL_IN_CHECKPOINT=n inside its n-th checkpoint (LMDB committed, the redo log not emptied).
 */
export function journalTestOptions(env: NodeJS.ProcessEnv = process.env): { killInCommit?: number; killInCheckpoint?: number } {
  const n = Number(env.HOMEFS_TEST_KILL_IN_COMMIT);
  const c = Number(env.HOMEFS_TEST_KILL_IN_CHECKPOINT);
  return { ...(Number.isInteger(n) && n > 0 ? { killInCommit: n } : {}), ...(Number.isInteger(c) && c > 0 ? { killInCheckpoint: c } : {}) };
}

/**
 * Test fault injection, for the tests of fsync during a seal and of the fencing race only
 * (test/mount-fsync-seal.test.ts): HOMEFS_TEST_HEAD_DELAY_MS=n makes every HEAD write of a mounted home wait
 * n ms before it goes to the store (a seal that is slow to commit); HOMEFS_TEST_BLOCK_DELAY_MS=n does the
 * same to every block write (a seal slow to upload, or a wake slow to replay the log).
 */
export function storeTestOptions(env: NodeJS.ProcessEnv = process.env): { headDelayMs?: number; blockDelayMs?: number } {
  const ms = (v: string | undefined): number | undefined => {
    const n = Number(v);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  };
  const head = ms(env.HOMEFS_TEST_HEAD_DELAY_MS);
  const block = ms(env.HOMEFS_TEST_BLOCK_DELAY_MS);
  return { ...(head ? { headDelayMs: head } : {}), ...(block ? { blockDelayMs: block } : {}) };
}

/** Largest file a home holds (1 TiB): a bigger write or truncate answers EFBIG, as ext4 does past 16 TiB. */
export const MAX_FILE_BYTES = 2 ** 40;

export const defaults = {
  /** Parallel store requests per operation (existence checks in one `has()`). */
  storeParallelism: 64,
  /**
   * Connections an s3:// store keeps open (kept alive) at most: room for a mount's cache fetches, a seal's
   * uploads and its existence checks at once. The SDK's own default is 50.
   */
  storeSockets: 256,
  /** Retries of a failed store request (throttling, 5xx, network) before giving up. */
  storeRetries: 5,
  storeRetryBaseMs: 100,
  storeRetryMaxMs: 5_000,
  /** A store call (all its attempts and backoff sleeps) gives up after this long. */
  storeRetryDeadlineMs: 60_000,
  /** Block cache size cap on disk. */
  cacheSizeBytes: 10 * 1024 * 1024 * 1024,
  /** Seal at most this often while parked (idle). */
  idleSealIntervalMs: 5 * 60_000,
  /**
   * Continuous protection (home/protect.ts): while a home is active, every change reaches the store within
   * this long, fsync'd or not (`--protect-interval`; 0: off).
   */
  protectIntervalMs: 10_000,
  /** A home with no FUSE activity for this long is parked. */
  parkAfterMs: 10_000,
  /**
   * After a loop turn that answered FUSE requests, the daemon waits this long awake (yielding the CPU) for
   * the next one before it sleeps: a synchronous client's next request then finds it awake instead of paying
   * an idle CPU's wake-up (~30 µs of a ~47 µs round trip on this VM; docs/benchmarks.md, the write path). 0: never.
   */
  fuseSpinUs: 50,
  /**
   * While a FUSE request was answered in the last this many µs, idle-priority threads keep the machine's
   * other CPUs from halting (native/src/idlepoll.c), so that the reply wakes the caller without a halted
   * vCPU's wake-up (docs/decisions/0064-idle-pollers.md). 0: never, the default: the gain on this VM was
   * mixed and noisy (faster creates, slower fsyncs, a slower first wake under load), so it is opt-in.
   */
  fuseIdlePollUs: 0,
  /** Lease TTL and renewal period. */
  leaseTtlMs: 30_000,
  /** Snapshots of history kept per home. */
  historyKeep: 20,
  /** gc grace period for unreferenced objects. */
  gcGraceMs: 24 * 3600_000,
  /** A mounted home: files sealed concurrently, and worker threads hashing what a seal uploads. */
  sealParallelism: 64, // each holds one block of its file while it uploads: ≤ 64 x 8 MiB at worst
  /** An fsync seals (absorbing the log) instead of writing a segment after this many segments since the last seal… */
  logMaxSegments: 64,
  /** …or once the last segment (they are cumulative) is this large. */
  logMaxBytes: 16 * 1024 * 1024,
  /** Of which an fsync's segment carries at most this much of fresh files nobody fsync'd; it leaves the others out (seal/omission.ts). */
  logFreshBytes: 512 * 1024,
  /** …and a segment of continuous protection that no fsync waits for this much (more stays whole, so no seal follows it). */
  logProtectFreshBytes: 4 * 1024 * 1024,
  /** A segment starts a background seal (absorbing the log) once this many inodes changed since the last seal. */
  logAbsorbChanged: 4096,
  /**
   * While users' requests flow (home/foreground.ts), write-behind keeps at most this many files, and a
   * background seal this many blocks (at least one), in flight (`--background-writes`); at full speed
   * otherwise. 0: the foreground pays nothing for them (docs/decisions/0068-loss-window-and-foreground-first.md).
   */
  backgroundWrites: 0,
  sealHashThreads: 1,
  /** Hash and upload the whole blocks of a large file being written sequentially before its seal (seal/preseal.ts). */
  presealBlocks: true,
  /** Blocks prefetched ahead of a sequential reader of a large file. */
  readaheadBlocks: 4,
  /** A mounted home prunes its history (historyKeep) at most this often. */
  pruneIntervalMs: 60_000,
  /** The final seal at sleep is retried this often on failure, with backoff (util/backoff.ts). */
  sleepSealRetries: 5,
  sleepSealRetryBaseMs: 500,
  sleepSealRetryMaxMs: 10_000,
  /** `homefs push` (transfer/push.ts). */
  push: {
    /** Files hashed and uploaded at once; PushOptions.parallelism overrides. */
    parallelism: 64,
    /**
     * Bytes of the buffers files are read into (util/slabs.ts: a small file whole, a larger one a block at
     * a time) in use at once, from the read to the upload; up to half as much again is kept free for reuse.
     */
    blockBytes: 48 * 1024 * 1024,
    /** Directories listed at once while scanning (each a readdir, then lstat of its entries). */
    scanDirs: 8,
    /** lstat/readlink calls in flight for one directory being listed (at most scanDirs x this in all). */
    scanPerDir: 8,
    /** Trees of one depth written at once. */
    treeParallelism: 64,
    /** Reads of a file that keeps changing while it is hashed, before push gives up on it. */
    readAttempts: 3,
    /**
     * Blocks up to this size are written with one create-only PUT (a 412 means the org has it) instead of an
     * existence check and a PUT: a dedup hit then sends the bytes for nothing, at most this many per hit.
     */
    createOnlyMax: 1024 * 1024,
    /** Files up to this size are read with synchronous calls (cheaper than 5 thread-pool round trips). */
    syncReadMax: 256 * 1024,
  },
  /** `homefs pull` (transfer/pull.ts): files written at once, each streamed block by block. */
  pull: {
    parallelism: 64,
  },
  /** The push pack (transfer/pushpack.ts): a pushed snapshot's small blocks in pull order, for `homefs pull`. */
  pushPack: {
    /** Blocks up to this size go into the pack (larger ones are few, and one GET each costs little). */
    blockMax: 256 * 1024,
    /** The pack holds blocks up to this many bytes in all (the first ones in pull order). */
    maxBytes: 512 * 1024 * 1024,
    /** Push uploads the pack in parts of this size (S3 multipart upload), this many at once (pushpack-writer.ts). */
    partBytes: 16 * 1024 * 1024,
    partsInFlight: 2,
    /** Push holds at most this many bytes of blocks waiting for files earlier in pull order that are still being read. */
    reorderBytes: 32 * 1024 * 1024,
    /** Pull reads the pack in ranged GETs of about this size, this many at once. */
    rangeBytes: 8 * 1024 * 1024,
    rangeParallelism: 8,
    /** Pull holds at most this many bytes of pack blocks that no file has taken yet (then it stops reading ahead). */
    bufferBytes: 128 * 1024 * 1024,
  },
  /** A mount's cold reads from the push pack (home/packreads.ts). */
  packReads: {
    /** One ranged GET of the pack reads up to this many bytes, from the block asked for on. */
    windowBytes: 1024 * 1024,
    /** Blocks read in a window and not asked for yet are held up to this many bytes. */
    heldBytes: 32 * 1024 * 1024,
    /** Windows read ahead of a reader walking forward through the pack (overlaps its round trips with its work). */
    aheadWindows: 6,
    /** A pack whose index is longer is not used by mounts (pull still uses it). */
    maxIndexBytes: 16 * 1024 * 1024,
  },
  /**
   * Inode records a mount keeps in memory (~650 bytes of heap each), beyond which unchanged directory loads
   * are dropped, oldest first (inodes/trim.ts; `homefs mount --max-records`, 0: no limit). A second walk of
   * the home is served from the kernel's caches whatever the budget (docs/decisions/0079-kernel-keeps-what-it-was-told.md).
   */
  maxRecords: 49_152,
  /** How that trim runs: loads younger than minAgeMs stay; `scan` loads looked at per run, `delayMs` after it was asked for. */
  trim: { minAgeMs: 1000, scan: 4096, delayMs: 50 },
  /** `homefs push` and `homefs pull` take `--parallel N` up to this. */
  maxTransferParallelism: 1024,
  /** The block cache (cache/blockcache.ts); each can be overridden by its options. */
  cache: {
    /** Cap of each of the two in-memory LRUs (trees and snapshots; blocks: cache/memorytiers.ts) in bytes (0 disables them). */
    memoryBytes: 64 * 1024 * 1024,
    /**
     * The blocks' LRU when the store is on this host's disk (file://): its blocks are in the page cache, and
     * a `grep -r` through the full-size home's largest repo filled 64 MiB of RSS for nothing.
     */
    localBlockMemoryBytes: 16 * 1024 * 1024,
    /**
     * The blocks' LRU when the store is remote: what a read brought in is on disk at once (cache/diskfiles.ts)
     * and read back from the page cache without a thread-pool hop; 64 MiB held the full-size home's move
     * ~40 MB higher for nothing (docs/decisions/0083-remote-block-tier.md).
     */
    remoteBlockMemoryBytes: 24 * 1024 * 1024,
    /** Store GETs in flight at most (foreground reads and prefetch together). */
    fetchParallelism: 96,
    /** Of those, prefetch (namespace walk, readahead, neighbours) uses at most this many (at least 64 for the wake over a real store). */
    prefetchParallelism: 64,
    /** A second cold read in a directory of a file of at most this size prefetches its other files this small, */
    neighbourFileBytes: 256 * 1024,
    /** up to this many bytes per directory (0 turns it off). A store on local disk gets it too: a reader's files then no longer wait one by one for the thread pool's open, read and close of each block file. */
    neighbourBudgetBytes: 2 * 1024 * 1024,
    /** Once two subdirectories of a directory were prefetched so, its whole subtree's small files, up to this (on a store on this host's disk, up to `localSubtreeBudgetBytes`: what is prefetched waits in the blocks' LRU). */
    subtreeBudgetBytes: 32 * 1024 * 1024,
    localSubtreeBudgetBytes: 12 * 1024 * 1024,
    /** A fetch (waiting for a slot + the GET) that takes longer fails with StoreUnavailableError. */
    fetchTimeoutMs: 30_000,
    /** Prefetch requests queued beyond this are dropped. */
    maxPrefetchQueue: 65_536,
    /** Open file handles kept for disk range reads. */
    openFiles: 32,
    /** A cached file's mtime (its persisted last use) is refreshed at most this often. */
    persistLastUseMs: 60_000,
  },
  /** The hot set for the next wake (home/hotset.ts, docs/format.md). */
  hotset: {
    /** Objects a session records at most, and their total bytes (past either, later reads are not recorded). */
    maxEntries: 200_000,
    maxBytes: 2 * 1024 * 1024 * 1024,
    /** Write a wake pack at sleep (docs/decisions/0026-hot-set-and-wake-pack.md has the measurement that decided it). */
    pack: true,
    /** The wake pack holds objects up to this size, until it reaches its budget. */
    packObjectMax: 1024 * 1024,
    packBytes: 64 * 1024 * 1024,
    /** A wake fetches the pack in ranged GETs of about this size, this many at once. */
    packRangeBytes: 4 * 1024 * 1024,
    packParallelism: 16,
    /**
     * The first range is smaller: it holds the objects the last session read first (a notes file, the trees
     * above it), and a small range arrives in about one round trip while the larger ones still stream.
     */
    packFirstRangeBytes: 256 * 1024,
    /** A mount rewrites the record after a seal at most this often (and always at sleep). */
    recordIntervalMs: 60_000,
  },
  /** The namespace pack (transfer/nspack.ts, home/nspack.ts, docs/format.md). */
  nsPack: {
    /** A namespace bigger than this gets no pack (it wakes tree by tree). */
    maxBytes: 256 * 1024 * 1024,
    /** Trees read at once while building a pack. */
    parallelism: 64,
    /** A wake reads the pack's first range (header, index and the first trees) of this size, then the rest in ranges of this size, this many at once. */
    rangeBytes: 2 * 1024 * 1024,
    rangeParallelism: 8,
    /** The namespace walk starts when the pack is in, or after this long, whichever comes first. */
    waitMs: 5_000,
  },
  /** gc waits this long between announcing its epoch and marking (format/gcfence.ts). */
  gcFenceWaitMs: 3 * 60_000,
  /** A committer starts its HEAD write at most this long after its last look at the gc epoch. */
  gcCommitDeadlineMs: 10_000,
  /** A gc stops deleting after this long; committers treat a running epoch as dead this margin later. */
  gcMaxRunMs: 6 * 3600_000,
  gcStaleMarginMs: 3600_000,
};

/**
 * Hashing and uploading the blocks of a large file while it is still being written, so that the seal
 * that follows (an fsync's, usually) has little left to do: "large sequential writes and seal
 * uploads stream". A sequential writer of a file larger than one block (SINGLE_BLOCK_MAX) completes one
 * 4 MiB block after another; each one the writer has moved past is read back holding only that block
 * (`Content.hashEarly`: writes to other blocks go on), hashed on the worker, and uploaded in the
 * background unless the store has it. The seal's capture then takes the early hash instead of reading and
 * hashing the block again, and finds its bytes in the store.
 *
 * This only starts earlier work a seal would do; the seal stays the authority. A block changed after its
 * early hash was taken is hashed again by the seal (Content drops the hash). An early upload counts, at
 * the seal, like any block the store already had: deduplicated, so protected by the seal's gc fence and
 * uploaded again from the upper file if a gc took it meanwhile. A failed early hash or upload only leaves
 * the work to the seal. The cost of the head start: a file deleted before its seal was uploaded for
 * nothing (gc removes the unreferenced blocks later). A file the seal would leave out (an excluded path,
 * checked each time a block is queued) is not touched; one moved under an excluded path after some of its
 * blocks went up leaves those in the store, unreferenced, until gc.
 */
import { BLOCK_SIZE, SINGLE_BLOCK_MAX } from '../hash/blake3.js';
import type { Journal } from '../inodes/journal.js';
import { ROOT_INO } from '../inodes/types.js';
import type { Excludes } from '../format/excludes.js';

/** Blocks being hashed or uploaded at once (each holds its 4 MiB until its upload lands). */
const IN_FLIGHT = 3;
/** Blocks waiting at most; a writer faster than that leaves the others to its seal. */
const QUEUE_MAX = 64;
/**
 * How far ahead of where it was a write may start and still count as the same sequential writer (the
 * kernel's writeback has up to 12 writes of 1 MiB in flight, which land in any order).
 */
const AHEAD_BLOCKS = 4;

export interface PresealDeps {
  /**
   * Content.hashEarly: hashes a whole dirty block (read into `into`) holding it; undefined when there is
   * nothing to hash. The bytes returned are `into`'s memory, perhaps through another Buffer.
   */
  hashEarly(ino: number, index: number, into: Buffer): Promise<{ hash: string; data: Buffer } | undefined>;
  /** Stores a block unless the store has it; true when it stored it. */
  upload(hash: string, data: Buffer): Promise<boolean>;
  /** Whether the seal leaves file `ino` out (its path is excluded). */
  excluded(ino: number): boolean;
  onError(e: unknown): void;
}

/**
 * The path of inode `ino` from the root, by its first parent at each level (names ['a', 'b', 'file']),
 * or undefined when a link in the chain is not known.
 */
export function inodePath(journal: Journal, ino: number): string[] | undefined {
  const names: string[] = [];
  for (let cur = ino, depth = 0; cur !== ROOT_INO; depth++) {
    const parent = journal.get(cur)?.parents[0];
    if (parent === undefined || depth > 4096) return undefined;
    let name: string | undefined;
    for (const [n, child] of journal.children(parent)) {
      if (child === cur) {
        name = n;
        break;
      }
    }
    if (name === undefined) return undefined;
    names.push(name);
    cur = parent;
  }
  return names.reverse();
}

/** Whether the seal's walk leaves file `ino` out: an excluded path, or below an excluded directory (or its path is unknown). */
export function excludedIno(journal: Journal, excludes: Excludes, ino: number): boolean {
  const names = inodePath(journal, ino);
  if (!names) return true;
  return names.some((_, i) => excludes.excluded(names.slice(0, i + 1).join('/'), i < names.length - 1));
}

export class Presealer {
  /** Per file: blocks below this one were queued already (the writer's position, in blocks). */
  private readonly next = new Map<number, number>();
  private readonly queue: Array<{ ino: number; index: number }> = [];
  private readonly uploads = new Map<string, Promise<boolean>>();
  private readonly running = new Set<Promise<void>>();
  /**
   * Block buffers reused from one block to the next, over SharedArrayBuffers, which the hash worker reads
   * in place (a new or transferred 4 MiB buffer per block keeps V8's garbage collector busy).
   */
  private readonly spare: Buffer[] = [];
  private closed = false;
  /** Blocks hashed early, and of those uploaded (the store lacked them), since the mount (status). */
  hashed = 0;
  uploaded = 0;

  constructor(private readonly d: PresealDeps) {}

  /**
   * Bytes [offset, end) of file `ino` were written; it is `size` bytes long now. Queues the blocks a
   * sequential writer has moved past: every whole block before the one `end` is in, but the last (a
   * write to it may still be in flight), once the file is too large to be one block.
   */
  written(ino: number, offset: number, end: number, size: number): void {
    if (this.closed || size <= SINGLE_BLOCK_MAX) return;
    const from = offset === 0 ? 0 : this.next.get(ino) ?? 0; // (written again from the start: truncated, say)
    if (offset < from * BLOCK_SIZE || offset >= (from + AHEAD_BLOCKS) * BLOCK_SIZE) return; // not this writer's next bytes
    const to = Math.floor(end / BLOCK_SIZE) - 1;
    if (to <= from) return;
    this.next.set(ino, to);
    if (this.d.excluded(ino)) return;
    if (this.next.size > 4096) this.next.clear();
    for (let index = from; index < to && this.queue.length < QUEUE_MAX; index++) this.queue.push({ ino, index });
    this.pump();
  }

  /** The early upload of this block, while it is in flight (the seal waits for it before asking the store). */
  uploading(hash: string): Promise<unknown> | undefined {
    return this.uploads.get(hash);
  }

  /** Stops taking work and waits for what runs (before the store closes). */
  async close(): Promise<void> {
    this.closed = true;
    this.queue.length = 0;
    await Promise.all([...this.running]);
  }

  private pump(): void {
    while (this.running.size < IN_FLIGHT && this.queue.length > 0) {
      const job = this.queue.shift();
      if (!job) break;
      const p: Promise<void> = this.run(job.ino, job.index).finally(() => {
        this.running.delete(p);
        this.pump();
      });
      this.running.add(p);
    }
  }

  private async run(ino: number, index: number): Promise<void> {
    // The buffer goes back only once nothing uses it; after a failure it may still be with the hash worker.
    let buf: Buffer | undefined = this.spare.pop() ?? Buffer.from(new SharedArrayBuffer(BLOCK_SIZE));
    try {
      const r = await this.d.hashEarly(ino, index, buf);
      if (r && r.data.buffer !== buf.buffer) buf = undefined; // moved elsewhere: not ours to reuse
      if (!r || this.uploads.has(r.hash)) return;
      this.hashed++;
      const up = this.d.upload(r.hash, r.data);
      this.uploads.set(r.hash, up);
      try {
        if (await up) this.uploaded++;
      } finally {
        this.uploads.delete(r.hash);
      }
    } catch (e) {
      buf = undefined;
      this.d.onError(e);
    } finally {
      if (buf && this.spare.length < IN_FLIGHT) this.spare.push(buf);
    }
  }
}

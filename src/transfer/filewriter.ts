/**
 * Pull's file writes and metadata, in batches on the thread pool (the homefs_files addon,
 * native/src/files.c): each file is created, written whole, and given its owner, mode and nanosecond mtime
 * through its open fd in one hand-off per batch, where Node's fs costs a thread-pool round trip per call
 * (or blocks the main thread with the synchronous calls) and cannot set a time to the nanosecond.
 *
 * `FileWriter` queues verified file contents and sends whatever is queued as one batch, at most `parallel`
 * batches at once; while they run, the main thread goes on receiving and verifying blocks. A file is
 * queued, not written, when `write` returns: `drain` waits for all of them and throws the first failure (a
 * Node-style errno error: `ENOSPC: no space left on device, write '<path>'`). `setMeta` sets owners, modes
 * and times of many paths in order (directories deepest first, by the caller).
 */
import { filesAddon as files, itemFailure } from '../util/files-addon.js';

/** What to set on a path; an absent field is left as it is. */
export interface PathMeta {
  uid?: number;
  gid?: number;
  mode?: number;
  /** atime and mtime both become this. */
  mtimeNs?: bigint;
}

const PER_ITEM = 5;
const NS = 1_000_000_000n;
/** setMeta paths per addon call. */
const META_BATCH = 4096;

function fillMeta(out: Float64Array, i: number, m: PathMeta | undefined): void {
  const o = i * PER_ITEM;
  out[o] = m?.uid ?? -1;
  out[o + 1] = m?.gid ?? -1;
  out[o + 2] = m?.mode ?? -1;
  if (m?.mtimeNs === undefined) {
    out[o + 3] = 0;
    out[o + 4] = -1;
  } else {
    const ns = ((m.mtimeNs % NS) + NS) % NS; // (before 1970: seconds down, nanoseconds up, as timespec wants)
    out[o + 3] = Number((m.mtimeNs - ns) / NS);
    out[o + 4] = Number(ns);
  }
}

/** The first failure in an addon answer as Node's fs would report it, or null. */
function firstFailure(result: Int32Array, paths: readonly string[]): NodeJS.ErrnoException | null {
  for (let i = 0; i < paths.length; i++) {
    const failure = itemFailure(result, i, paths[i] as string);
    if (failure) return failure;
  }
  return null;
}

/** Sets the owners, modes and times `items` ask for, in order, never following a symlink; throws the first failure. */
export async function setMeta(items: ReadonlyArray<{ path: string; meta: PathMeta }>): Promise<void> {
  for (let at = 0; at < items.length; at += META_BATCH) {
    const chunk = items.slice(at, at + META_BATCH);
    const meta = new Float64Array(chunk.length * PER_ITEM);
    chunk.forEach((x, i) => fillMeta(meta, i, x.meta));
    const paths = chunk.map((x) => x.path);
    const failure = firstFailure(await files().setMeta(paths, meta), paths);
    if (failure) throw failure;
  }
}

export interface FileWriterOptions {
  /** Batches on the thread pool at once. */
  parallel: number;
  /** A batch holds at most this many files, and this many bytes (or one larger file). */
  batchFiles: number;
  batchBytes: number;
  /** `write` waits while this many bytes are queued or being written. */
  maxQueuedBytes: number;
}

export const FILE_WRITER_DEFAULTS: FileWriterOptions = { parallel: 2, batchFiles: 512, batchBytes: 16 * 1024 * 1024, maxQueuedBytes: 64 * 1024 * 1024 };

interface Queued {
  path: string;
  data: Buffer;
  meta: PathMeta | undefined;
}

export class FileWriter {
  private queue: Queued[] = [];
  /** Bytes queued or in a batch that has not finished. */
  private pendingBytes = 0;
  private inFlight = 0;
  private scheduled = false;
  private failure: Error | null = null;
  private readonly roomWaiters: Array<() => void> = [];
  private readonly idleWaiters: Array<() => void> = [];

  /** `written(bytes)` is called for each file once it is on disk. */
  constructor(private readonly written: (bytes: number) => void = () => undefined, private readonly opts: FileWriterOptions = FILE_WRITER_DEFAULTS) {
    files(); // (a missing addon fails here, before anything is queued)
  }

  /**
   * Queues new file `path` (created with O_EXCL|O_NOFOLLOW, mode 0600 until `meta` sets it) holding `data`.
   * Waits while too much is queued; throws the failure of an earlier batch, if any.
   */
  async write(path: string, data: Buffer, meta?: PathMeta): Promise<void> {
    while (this.failure === null && this.pendingBytes >= this.opts.maxQueuedBytes) await new Promise<void>((r) => this.roomWaiters.push(r));
    if (this.failure) throw this.failure;
    this.queue.push({ path, data, meta });
    this.pendingBytes += data.length;
    this.schedule();
  }

  /** Waits until every queued file is written; throws the first failure. */
  async drain(): Promise<void> {
    await this.settled();
    if (this.failure) throw this.failure;
  }

  /** Waits until no batch is queued or running (for a failed pull, before it removes what was written). */
  async settled(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.opts.parallel) return;
    this.scheduled = true;
    // On the next turn of the loop, so that every file verified in this one (a pack range's worth) goes in one batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.opts.parallel && this.queue.length > 0) {
      let n = 0;
      let bytes = 0;
      while (n < this.queue.length && n < this.opts.batchFiles && (n === 0 || bytes + (this.queue[n] as Queued).data.length <= this.opts.batchBytes)) {
        bytes += (this.queue[n] as Queued).data.length;
        n++;
      }
      const batch = this.queue.splice(0, n);
      this.inFlight++;
      void this.run(batch, bytes);
    }
    if (this.queue.length === 0 && this.inFlight === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  private async run(batch: Queued[], bytes: number): Promise<void> {
    const paths = batch.map((q) => q.path);
    const meta = new Float64Array(batch.length * PER_ITEM);
    batch.forEach((q, i) => fillMeta(meta, i, q.meta));
    try {
      const result = await files().writeFiles(paths, batch.map((q) => q.data), meta);
      const failure = firstFailure(result, paths);
      if (failure) this.failure ??= failure;
      for (let i = 0; i < batch.length; i++) if (result[i * 2] === 0) this.written((batch[i] as Queued).data.length);
    } catch (e) {
      this.failure ??= e as Error;
    } finally {
      this.inFlight--;
      this.pendingBytes -= bytes;
      for (const w of this.roomWaiters.splice(0)) w();
      if (this.failure) {
        // (nothing more is written once one file failed: the pull is over)
        for (const q of this.queue.splice(0)) this.pendingBytes -= q.data.length;
      }
      this.flush();
    }
  }
}

/**
 * The homefs_files addon (native/src/files.c), loaded once, for every module that uses it:
 *
 * - batches of file writes on one thread-pool hop (pull's files, transfer/filewriter.ts; the block cache's
 *   atomic writes, cache/diskfiles.ts): Node's fs API costs one hop per call, four per atomically written
 *   file (open, write, close, rename), and each hop costs tens of microseconds of thread wake-ups on this
 *   VM;
 * - reads that never wait for the disk: a small read whose file name and bytes are in the kernel's caches
 *   is done at once on the main thread (openat2 RESOLVE_CACHED, preadv2 RWF_NOWAIT); anything else answers
 *   -EAGAIN (or a short count), and the caller goes to the thread pool instead (upper files,
 *   inodes/upper.ts; the block cache's files, cache/blockcache.ts).
 */
import { getSystemErrorMap } from 'node:util';
import { loadNativeAddon } from './addon.js';

export interface FilesAddon {
  /**
   * Per item: creates paths[i] (O_EXCL, 0600), writes datas[i], sets what meta asks (5 numbers per item:
   * uid, gid, mode, mtime s, mtime ns; -1 for none), closes, and renames it to finals[i] when finals is
   * given (an item that failed then has its file removed). The answer: per item its errno (0 for none) and
   * the step that failed.
   */
  writeFiles(paths: string[], datas: Buffer[], meta: Float64Array, finals?: string[]): Promise<Int32Array>;
  /** Per path, never following a symlink: lchown, chmod, utimensat, each as meta asks. Answered as writeFiles. */
  setMeta(paths: string[], meta: Float64Array): Promise<Int32Array>;
  /** An fd of an existing file opened O_RDWR, or a negative errno (-EAGAIN: its name is not cached). */
  openCached(path: string): number;
  /** preadv2(RWF_NOWAIT) into the whole buffer: bytes read, or a negative errno. */
  readCached(fd: number, buf: Uint8Array, position: number): number;
  /** Opens `path` read-only (RESOLVE_CACHED), reads as readCached, closes: bytes read, or a negative errno. */
  readFileCached(path: string, buf: Uint8Array, position: number): number;
  /** fstat of an fd, or stat of a path, into out: size, mtime s, mtime ns, ctime s, ctime ns. 0, or a negative errno. */
  statTimes(fdOrPath: number | string, out: Float64Array): number;
  /** close(2) of each fd, in one thread-pool hop; failures are ignored. */
  closeFds(fds: Int32Array): Promise<void>;
  /** Allocates the file's first `length` bytes (fallocate) and maps them shared: the mapping, or a negative errno. */
  mapFile(fd: number, length: number): ArrayBuffer | number;
}

/** The step numbers of writeFiles' and setMeta's answers. */
const STEPS = ['open', 'write', 'chown', 'chmod', 'utimes', 'close', 'rename'];

/** Item `i`'s failure in a writeFiles or setMeta answer as Node's fs would report it, or null. */
export function itemFailure(result: Int32Array, i: number, path: string): NodeJS.ErrnoException | null {
  const errno = result[i * 2] as number;
  return errno === 0 ? null : errnoError(errno, STEPS[result[i * 2 + 1] as number] ?? 'write', path);
}

/** A failed call's errno (positive) as the error Node's fs would throw for it. */
export function errnoError(errno: number, syscall: string, path: string): NodeJS.ErrnoException {
  const [code, text] = getSystemErrorMap().get(-errno) ?? [`E${errno}`, `errno ${errno}`];
  return Object.assign(new Error(`${code}: ${text}, ${syscall} '${path}'`), { code, errno: -errno, syscall, path });
}

let addon: FilesAddon | undefined;

export function filesAddon(): FilesAddon {
  addon ??= loadNativeAddon('homefs_files') as FilesAddon;
  return addon;
}

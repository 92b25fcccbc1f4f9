/**
 * Filesystem errors of the inode layer: an errno plus a message for logs. The FUSE adapter (fs/) turns them
 * into the errno reply; every other error becomes EIO there (and is logged).
 */
import { constants } from 'node:os';

export const E = constants.errno;

export class FsError extends Error {
  constructor(readonly errno: number, message?: string) {
    super(message ?? `errno ${errno}`);
    this.name = 'FsError';
  }
}

export function fsErr(errno: number, message?: string): FsError {
  return new FsError(errno, message);
}

/** Wall-clock time in nanoseconds (microsecond resolution). */
export function nowNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

/**
 * One daemon per state directory: a pid file created exclusively. A pid file whose process is gone (a
 * crashed daemon) is taken over; a live one refuses the second mount with a clear error.
 */
import { openSync, writeSync, closeSync, readFileSync, unlinkSync, constants } from 'node:fs';
import { UserError } from '../util/errors.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function acquirePidLock(path: string, what: string): () => void {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path);
        } catch {
          // already gone
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new UserError(`${what} is already mounted by homefs daemon pid ${pid} using this state directory; run 'homefs sleep' on its mountpoint first`);
      }
      try {
        unlinkSync(path);
      } catch {
        // raced with another starter; retry
      }
    }
  }
  throw new UserError(`cannot lock ${path}: another homefs daemon keeps starting there`);
}

/**
 * Creating a directory with its missing parents, without `mkdir({ recursive: true })`: on Node 24 that
 * call never returns for a path under /proc (every mkdir there answers ENOENT and Node retries the parent
 * forever, spinning a CPU). This walks up once to the deepest existing ancestor, then creates each missing
 * component in order, so any path fails at once with one line naming the component and the reason.
 */
import { mkdirSync, statSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { UserError } from './errors.js';

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENAMETOOLONG: 'name too long',
  ELOOP: 'too many symbolic links',
  ENOENT: 'this file system does not allow creating it',
};

function failure(dir: string, e: unknown): UserError {
  const code = (e as NodeJS.ErrnoException).code ?? '';
  return new UserError(`cannot create directory ${dir}: ${REASONS[code] ?? (e as Error).message}`);
}

type Step = { kind: 'exists' } | { kind: 'missing' } | { kind: 'fail'; error: UserError };

function classify(p: string, isDir: boolean | null, e: unknown): Step {
  if (isDir === true) return { kind: 'exists' };
  if (isDir === false) return { kind: 'fail', error: new UserError(`cannot create directories under ${p}: it is not a directory`) };
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' }; // ENOTDIR: an ancestor is a file, found further up
  return { kind: 'fail', error: failure(p, e) };
}

/** Creates `path` (and its missing parents, all with `mode`); a directory already there is fine. */
export function makeDirsSync(path: string, mode = 0o700): void {
  const missing: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    let step: Step;
    try {
      step = classify(p, statSync(p).isDirectory(), undefined);
    } catch (e) {
      step = classify(p, null, e);
    }
    if (step.kind === 'fail') throw step.error;
    if (step.kind === 'exists' || dirname(p) === p) break;
    missing.push(p);
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(d).isDirectory()) throw failure(d, e);
    }
  }
}

/** The async form of makeDirsSync. */
export async function makeDirs(path: string, mode = 0o700): Promise<void> {
  const missing: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    let step: Step;
    try {
      step = classify(p, (await stat(p)).isDirectory(), undefined);
    } catch (e) {
      step = classify(p, null, e);
    }
    if (step.kind === 'fail') throw step.error;
    if (step.kind === 'exists' || dirname(p) === p) break;
    missing.push(p);
  }
  for (const d of missing.reverse()) {
    try {
      await mkdir(d, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !(await stat(d)).isDirectory()) throw failure(d, e);
    }
  }
}

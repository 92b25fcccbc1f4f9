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

/** A file system call the walk asks for, and what it answered: a stat says whether it found a directory. */
type Call = { op: 'stat' | 'mkdir'; path: string };
type Answer = { ok: true; isDir: boolean } | { ok: false; error: unknown };

/**
 * The walk itself, as a generator that yields each call and is resumed with its answer, so that the sync
 * and the async form run the same steps and differ only in how they make the calls.
 */
function* walk(path: string): Generator<Call, void, Answer> {
  const missing: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    const a = yield { op: 'stat', path: p };
    const step = a.ok ? classify(p, a.isDir, undefined) : classify(p, null, a.error);
    if (step.kind === 'fail') throw step.error;
    if (step.kind === 'exists' || dirname(p) === p) break;
    missing.push(p);
  }
  for (const d of missing.reverse()) {
    const made = yield { op: 'mkdir', path: d };
    if (made.ok) continue;
    if ((made.error as NodeJS.ErrnoException).code !== 'EEXIST') throw failure(d, made.error);
    // EEXIST is fine when what is there (made meanwhile, by another process) is a directory
    const there = yield { op: 'stat', path: d };
    if (!there.ok) throw there.error;
    if (!there.isDir) throw failure(d, made.error);
  }
}

function callSync(c: Call, mode: number): Answer {
  try {
    if (c.op === 'stat') return { ok: true, isDir: statSync(c.path).isDirectory() };
    mkdirSync(c.path, { mode });
    return { ok: true, isDir: true };
  } catch (error) {
    return { ok: false, error };
  }
}

async function call(c: Call, mode: number): Promise<Answer> {
  try {
    if (c.op === 'stat') return { ok: true, isDir: (await stat(c.path)).isDirectory() };
    await mkdir(c.path, { mode });
    return { ok: true, isDir: true };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Creates `path` (and its missing parents, all with `mode`); a directory already there is fine. */
export function makeDirsSync(path: string, mode = 0o700): void {
  const w = walk(path);
  for (let r = w.next(); !r.done; r = w.next(callSync(r.value, mode)));
}

/** The async form of makeDirsSync. */
export async function makeDirs(path: string, mode = 0o700): Promise<void> {
  const w = walk(path);
  for (let r = w.next(); !r.done; r = w.next(await call(r.value, mode)));
}

/**
 * The "agent wakes up and works" workload shared by the wake and move scenarios, run against a home
 * directory on any system: the first `cat` of a small file, `ls -R` of the home, `git status` in the
 * checkout, and a build that reads ~5 % of the home's bytes. Returns each step's wall time in ms.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import type { HomeManifest } from '../lib/agenthome.js';
import { bash, fsops, q, run } from '../lib/sh.js';

export interface WorkTimes {
  catMs: number;
  lsMs: number;
  gitMs: number;
  buildMs: number;
}

export async function firstCat(home: string, m: HomeManifest): Promise<number> {
  return (await run('cat', [join(home, m.smallFile)])).ms;
}

export async function work(home: string, m: HomeManifest, listFile: string): Promise<Omit<WorkTimes, 'catMs'>> {
  writeFileSync(listFile, m.buildFiles.join('\n'));
  const ls = await bash(`ls -R ${q(home)} > /dev/null`);
  const git = await run('git', ['-C', join(home, m.checkout), 'status', '--porcelain'], { env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } });
  if (git.stdout.trim() !== '') throw new Error(`git status in ${home} is not clean: ${git.stdout.slice(0, 200)}`);
  const build = await fsops('readlist', home, listFile);
  return { lsMs: ls.ms, gitMs: git.ms, buildMs: build.ms ?? NaN };
}

/** The agent-resumes workload of `bench/run --rtt`: which notes file, repository and pattern it uses. */
export const RESUME = { notes: 'notes/u0.txt', repo: 'projects/app', sources: 'projects/app/src', pattern: 'abc' };

export interface ResumeTimes {
  /** Each step's end, in ms since `t0` (the start of the mount or restore). */
  catEnd: number;
  gitEnd: number;
  grepEnd: number;
  /** Lines grep printed: the same on every system that served the right bytes. */
  grepLines: number;
}

/**
 * The agent resumes: `cat` a notes file, `git status` in its repository, `grep -r` through that
 * repository's sources; each step's end is taken from `t0` (Date.now() before the mount or restore).
 */
export async function resume(home: string, t0: number): Promise<ResumeTimes> {
  await run('cat', [join(home, RESUME.notes)]);
  const catEnd = Date.now() - t0;
  const git = await run('git', ['-C', join(home, RESUME.repo), 'status', '--porcelain'], { env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } });
  if (git.stdout.trim() !== '') throw new Error(`git status in ${home} is not clean: ${git.stdout.slice(0, 200)}`);
  const gitEnd = Date.now() - t0;
  const grep = await bash(`{ grep -r ${q(RESUME.pattern)} ${q(join(home, RESUME.sources))} || [ $? = 1 ]; } | wc -l`, { timeoutMs: 600_000 });
  return { catEnd, gitEnd, grepEnd: Date.now() - t0, grepLines: Number(grep.stdout.trim()) };
}

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

/**
 * Inputs of the steady-state tool workloads, generated once into the work dir's inputs/ and reused:
 * a 5,000-file tar archive, a git repository of `gitFiles` files, an offline npm project (a lock file
 * whose tarballs sit in a local npm cache), and a sqlite script of `sqliteTx` transactions.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Prng } from './prng.js';
import { bash, q, run } from './sh.js';

export interface Fixtures {
  tar5k: string;
  repo: string;
  npmProject: string; // dir with package.json + package-lock.json
  npmCache: string;
  sqlScript: string;
}

const VERSION = 2;

function textFiles(dir: string, count: number, perDir: number, seed: string): void {
  const rng = new Prng(seed);
  for (let i = 0; i < count; i++) {
    const d = join(dir, `d${Math.floor(i / perDir)}`);
    if (i % perDir === 0) mkdirSync(d, { recursive: true });
    writeFileSync(join(d, `f${i}.txt`), rng.text(rng.int(500, 8000)));
  }
}

async function npmFixture(base: string): Promise<void> {
  const tgz = join(base, 'tgz');
  const cache = join(base, 'cache');
  const proj = join(base, 'project');
  mkdirSync(tgz, { recursive: true });
  mkdirSync(proj, { recursive: true });
  const rng = new Prng('npm');
  const deps: Record<string, string> = {};
  const packages: Record<string, unknown> = {};
  const names: string[] = [];
  for (let i = 0; i < 150; i++) {
    const name = `bench-pkg-${i}`;
    const b = join(base, 'build', 'package');
    await bash(`rm -rf ${q(join(base, 'build'))}`);
    mkdirSync(join(b, 'lib'), { recursive: true });
    writeFileSync(join(b, 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js' }));
    for (let f = 0; f < 20; f++) writeFileSync(join(b, f % 2 ? 'lib' : '', `m${f}.js`), rng.text(rng.int(300, 4000)));
    const file = join(tgz, `${name}-1.0.0.tgz`);
    await bash(`cd ${q(join(base, 'build'))} && tar --sort=name --mtime=2026-01-01 --owner=0 --group=0 -czf ${q(file)} package`);
    const data = (await import('node:fs')).readFileSync(file);
    deps[name] = '1.0.0';
    packages[`node_modules/${name}`] = { version: '1.0.0', resolved: `https://registry.npmjs.org/${name}/-/${name}-1.0.0.tgz`, integrity: `sha512-${createHash('sha512').update(data).digest('base64')}` };
    names.push(file);
  }
  await run('npm', ['cache', 'add', '--offline', '--cache', cache, ...names]);
  writeFileSync(join(proj, 'package.json'), JSON.stringify({ name: 'bench-npm', version: '1.0.0', private: true, dependencies: deps }, null, 1));
  writeFileSync(join(proj, 'package-lock.json'), JSON.stringify({ name: 'bench-npm', version: '1.0.0', lockfileVersion: 3, requires: true,
    packages: { '': { name: 'bench-npm', version: '1.0.0', dependencies: deps }, ...packages } }, null, 1));
}

export async function fixtures(inputs: string, gitFiles: number, sqliteTx: number): Promise<Fixtures> {
  const base = join(inputs, `fixtures-v${VERSION}-git${gitFiles}-tx${sqliteTx}`);
  const f: Fixtures = {
    tar5k: join(base, 'files5k.tar'), repo: join(base, 'repo'), npmProject: join(base, 'npm', 'project'),
    npmCache: join(base, 'npm', 'cache'), sqlScript: join(base, 'tx.sql'),
  };
  if (existsSync(join(base, 'done'))) return f;
  await bash(`rm -rf ${q(base)} && mkdir -p ${q(base)}`);
  textFiles(join(base, 'files5k'), 5000, 100, 'tar5k');
  await bash(`cd ${q(base)} && tar -cf files5k.tar files5k && rm -rf files5k`);
  textFiles(f.repo, gitFiles, 200, 'repo');
  await bash(`cd ${q(f.repo)} && export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z &&
    git init -q -b main . && git add -A && git -c gc.auto=0 -c user.name=bench -c user.email=bench@localhost commit -q -m init && git gc -q`);
  await npmFixture(join(base, 'npm'));
  const sql = ['CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);'];
  for (let i = 0; i < sqliteTx; i++) sql.push(`BEGIN; INSERT INTO t(v) VALUES('row ${i} ${'x'.repeat(100)}'); COMMIT;`);
  sql.push('PRAGMA integrity_check;');
  writeFileSync(f.sqlScript, sql.join('\n'));
  writeFileSync(join(base, 'done'), '');
  return f;
}

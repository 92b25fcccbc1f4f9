/**
 * FUSE binding benchmark: the same workloads, in one run, on
 *   native (a plain directory), bindfs (C, libfuse 3), the binding's loopback (bench/fuse/loopback.ts),
 *   the binding's in-memory MemFs (binding overhead with no backing I/O), and fuse-native's loopback
 *   (only if fuse-native is installed outside the repo: see fuse-native-loopback.ts; else a printed reason).
 * Workloads: failed lookup (stat of distinct missing names), stat of a cached file, create/stat/delete of
 * 10,000 files, `tar x` of 5,000 files (50 dirs, 0-16 KiB), cat of 1,000 4 KiB files (reads through
 * FUSE: no keep_cache on the loopbacks, bindfs default).
 * Usage: node dist/bench/fuse/run.js [--reps N] [--write docs/benchmarks-fuse.md]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { forceUnmount, isMounted, waitFor } from '../../test/support/fuse-mount-helpers.js';
import { loadFuseNative } from './fuse-native-loopback.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const args = process.argv.slice(2);
const reps = Number(args[args.indexOf('--reps') + 1] ?? 3) || 3;
const writeTo = args.includes('--write') ? args[args.indexOf('--write') + 1] : undefined;
const base = fs.mkdtempSync('/tmp/hfb-');
const LAT = path.join(base, 'lat');

interface Subject { name: string; dir: string; child?: ChildProcess; mnt?: string }
const subjects: Subject[] = [];
const skipped: string[] = [];

function sh(cmd: string, a: string[], opts: { cwd?: string } = {}): string {
  const r = spawnSync(cmd, a, { encoding: 'utf8', timeout: 600_000, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${a.join(' ')}: ${r.stderr || r.error?.message}`);
  return r.stdout;
}
function lat(op: string, dir: string, n: number): number { return Number(sh(LAT, [op, dir, String(n)]).trim()); }
function timed(fn: () => void): number { const t = process.hrtime.bigint(); fn(); return Number(process.hrtime.bigint() - t) / 1e9; }
function median(xs: number[]): number { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] as number; }

async function serve(name: string, kind: string): Promise<void> {
  const src = path.join(base, `${kind}-src`), mnt = path.join(base, `${kind}-mnt`);
  fs.mkdirSync(src); fs.mkdirSync(mnt);
  const child = spawn(process.execPath, [path.join(here, 'serve.js'), kind, src, mnt], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => { out += d; });
  child.stderr?.on('data', (d: Buffer) => { out += d; });
  const ok = await waitFor(() => out.includes('ready') || child.exitCode !== null, 15000);
  if (!ok || !out.includes('ready')) { child.kill('SIGKILL'); forceUnmount(mnt); skipped.push(`${name}: ${out.trim() || 'did not start'}`); return; }
  subjects.push({ name, dir: mnt, child, mnt });
}

async function setup(): Promise<void> {
  sh('cc', ['-O2', '-o', LAT, path.join(repo, 'bench/fuse/lat.c')]);
  const nat = path.join(base, 'native'); fs.mkdirSync(nat);
  subjects.push({ name: 'native', dir: nat });
  const bsrc = path.join(base, 'bindfs-src'), bmnt = path.join(base, 'bindfs-mnt');
  fs.mkdirSync(bsrc); fs.mkdirSync(bmnt);
  try { sh('bindfs', [bsrc, bmnt]); subjects.push({ name: 'bindfs', dir: bmnt, mnt: bmnt }); } catch (e) { skipped.push(`bindfs: ${(e as Error).message}`); }
  await serve('binding loopback', 'loopback');
  await serve('binding memfs', 'memfs');
  const fn = loadFuseNative();
  if (typeof fn === 'string') skipped.push(`fuse-native loopback: ${fn}`); else await serve('fuse-native loopback', 'fuse-native');
}

async function teardown(): Promise<void> {
  for (const s of subjects) {
    if (s.child) { s.child.kill('SIGTERM'); await waitFor(() => s.child?.exitCode !== null || s.child?.signalCode !== null, 5000); }
    if (s.mnt) { if (isMounted(s.mnt)) spawnSync('fusermount3', ['-u', s.mnt]); forceUnmount(s.mnt); }
  }
  fs.rmSync(base, { recursive: true, force: true });
}

function makeTarball(): string {
  const src = path.join(base, 'tarsrc');
  for (let d = 0; d < 50; d++) {
    const dir = path.join(src, `dir${d}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 100; f++) {
      const i = d * 100 + f;
      fs.writeFileSync(path.join(dir, `file${f}.txt`), Buffer.alloc((i * 7919) % 16384, 97 + (i % 26)));
    }
  }
  const ball = path.join(base, 'files.tar');
  sh('tar', ['cf', ball, '-C', src, '.']);
  return ball;
}

interface Row { name: string; unit: string; values: Map<string, number> }
const rows: Row[] = [];
function measure(name: string, unit: string, fn: (s: Subject, rep: number) => number): void {
  // Repetitions are interleaved across subjects so that load from elsewhere spreads over all columns.
  const row: Row = { name, unit, values: new Map() };
  const xs = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
  for (let r = 0; r < reps; r++) for (const s of subjects) xs.get(s.name)?.push(fn(s, r));
  for (const s of subjects) {
    const m = median(xs.get(s.name) ?? []);
    row.values.set(s.name, m);
    process.stderr.write(`${name} ${s.name}: ${m.toFixed(unit === 'µs' ? 1 : 3)} ${unit} (${(xs.get(s.name) ?? []).map((x) => x.toFixed(unit === 'µs' ? 1 : 3)).join(', ')})\n`);
  }
  rows.push(row);
}
function fresh(s: Subject, tag: string, rep: number): string {
  const d = path.join(s.dir, `${tag}-${rep}`);
  fs.mkdirSync(d);
  return d;
}

async function main(): Promise<void> {
  await setup();
  const ball = makeTarball();
  const N_MISS = 20000, N_HIT = 50000, N_FILES = 10000;
  measure('failed lookup (stat of a missing name)', 'µs', (s, r) => lat('miss', fresh(s, 'miss', r), N_MISS) / N_MISS * 1e6);
  measure('stat of a cached file', 'µs', (s, r) => lat('hit', fresh(s, 'hit', r), N_HIT) / N_HIT * 1e6);
  const cs = new Map<string, number>();
  measure('create 10,000 files', 's', (s, r) => { const d = fresh(s, 'cs', r); const t = lat('create', d, N_FILES); cs.set(`${s.name}/${r}`, t); return t; });
  measure('stat 10,000 files', 's', (s, r) => lat('stat', path.join(s.dir, `cs-${r}`), N_FILES));
  measure('delete 10,000 files', 's', (s, r) => lat('unlink', path.join(s.dir, `cs-${r}`), N_FILES));
  measure('tar x of 5,000 files', 's', (s, r) => { const d = fresh(s, 'tar', r); return timed(() => sh('tar', ['xf', ball, '-C', d])); });
  measure('cat of 1,000 4 KiB files', 's', (s, r) => {
    const d = fresh(s, 'cat', r);
    const blob = Buffer.alloc(4096, 120);
    for (let i = 0; i < 1000; i++) fs.writeFileSync(path.join(d, `f${i}`), blob);
    return lat('read', d, 1000);
  });
  report();
}

function fmt(v: number | undefined, unit: string): string {
  if (v === undefined) return '—';
  return unit === 'µs' ? `${v.toFixed(1)} µs` : `${v.toFixed(3)} s`;
}
function ratio(a: number | undefined, b: number | undefined): string {
  return a === undefined || b === undefined || b === 0 ? '—' : `${(a / b).toFixed(2)}×`;
}

function report(): void {
  const names = subjects.map((s) => s.name);
  const lines: string[] = [];
  const kernel = sh('uname', ['-r']).trim();
  lines.push(`Run: ${new Date().toISOString()}, kernel ${kernel}, Node ${process.version}, ${reps} repetitions (median, `
    + `interleaved), ${fs.readFileSync('/proc/cpuinfo', 'utf8').split('\n').filter((l) => l.startsWith('processor')).length} CPUs, `
    + `load average at the end ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}.`);
  lines.push('');
  lines.push(`| workload | ${names.join(' | ')} | loopback / bindfs | loopback / native | fuse-native / bindfs |`);
  lines.push(`|---|${names.map(() => '---:').join('|')}|---:|---:|---:|`);
  for (const r of rows) {
    const v = (n: string): number | undefined => r.values.get(n);
    lines.push(`| ${r.name} | ${names.map((n) => fmt(v(n), r.unit)).join(' | ')} | ${ratio(v('binding loopback'), v('bindfs'))} | `
      + `${ratio(v('binding loopback'), v('native'))} | ${ratio(v('fuse-native loopback'), v('bindfs'))} |`);
  }
  if (skipped.length) { lines.push(''); for (const s of skipped) lines.push(`Skipped: ${s}`); }
  const text = lines.join('\n');
  process.stdout.write(`${text}\n`);
  if (writeTo) {
    const doc = `# FUSE binding benchmark\n\nProduced by \`node dist/bench/fuse/run.js --write docs/benchmarks-fuse.md\` `
      + `(bench/fuse/run.ts; fuse-native from FUSE_NATIVE_DIR, default /tmp/fn, installed outside the repo).\n`
      + `Loopbacks answer with synchronous fs calls on a backing directory on the same disk as "native"; `
      + `entry/attr timeouts 1 s everywhere (bindfs's defaults); no keep_cache, so cat reads go through FUSE.\n\n${text}\n`;
    fs.writeFileSync(path.resolve(writeTo), doc);
  }
}

const onSignal = (): void => { void teardown().then(() => process.exit(130)); };
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
main().catch((e: unknown) => { process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`); process.exitCode = 1; })
  .finally(() => teardown());

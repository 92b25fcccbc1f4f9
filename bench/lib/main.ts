/**
 * bench/run's entry point: parses the options, runs the scenarios (all, or --only NAME[,NAME]), prints the
 * summary, writes docs/benchmarks.md (its bench/run block only) and the charts in docs/bench/.
 *
 *   bench/run [--quick] [--only NAME[,NAME…]] [--work DIR] [--rounds N] [--scale X] [--note TEXT]
 *   bench/run --rtt MS[,MS…] [--steps STEP[,STEP…]] [--own-ceph] [--work DIR] [--rounds N] [--scale X] [--note TEXT]
 *   bench/run --rtt MS[,MS…] --tools [--work DIR] [--rounds N] [--note TEXT]   (scenario 6's tools over the store: scenarios/toolsrtt.ts)
 * (--rounds and --scale override the preset; a run with --scale is a try-out and writes no docs; --note adds
 * TEXT, e.g. what else was running, to the notes of every scenario this run measures. --rtt runs the
 * scenarios over the test Ceph RGW behind a latency proxy instead (bench/lib/rttrun.ts), on the --quick
 * home, one round unless --rounds, and writes its own block of docs/benchmarks.md; --own-ceph starts a private
 * Ceph for the run and stops it afterwards, out of reach of other people's test runs; --steps measures only
 * those of push, find, pull, wake, move (push always runs: the others read what it stored).)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, release } from 'node:os';
import { join, resolve } from 'node:path';
import { Ctx, FULL, QUICK } from './context.js';
import { installCleanup, unmountAll } from './mounts.js';
import { parseRtts, runRtt } from './rttrun.js';
import { runToolsRtt } from '../scenarios/toolsrtt.js';
import { sectionMd, tableText, writeBlock, type Headline, type Scenario, type Section } from './report.js';
import { barChartSvg } from './svg.js';
import { SCENARIOS } from '../scenarios/index.js';
import { RTT_STEPS, type RttStep } from '../scenarios/rtt.js';

interface Stored {
  command: string;
  date: string;
  md: string;
  headlines: Headline[];
}

function usage(msg: string): never {
  process.stderr.write(`bench/run: ${msg}\nusage: bench/run [--quick] [--only ${SCENARIOS.map((s) => s.name).join('|')}[,…]] [--work DIR] [--rounds N] [--scale X] [--note TEXT]\n       bench/run --rtt MS[,MS…] [--steps ${RTT_STEPS.join('|')}[,…]] [--own-ceph] [--work DIR] [--rounds N] [--scale X] [--note TEXT]\n       bench/run --rtt MS[,MS…] --tools [--work DIR] [--rounds N] [--note TEXT]\n`);
  process.exit(2);
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0]?.trim() ?? '?';
  } catch {
    return 'not installed';
  }
}

function machine(): string {
  const cpu = cpus()[0]?.model ?? '?';
  const fs = version('findmnt', ['-no', 'FSTYPE,SOURCE', '-T', '/tmp']);
  return [
    `- CPU: ${cpu}, ${cpus().length} cores; RAM ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Linux ${release()}; work dir on ${fs}`,
    `- node ${process.version}; ${version('restic', ['version'])}; ${version('bindfs', ['--version'])}; ${version('rclone', ['version'])}; ${version('git', ['--version'])}; ${version('tar', ['--version'])}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let quick = false;
  let only: string[] | undefined;
  let work = '/var/tmp/homefs-bench';
  let rounds: number | undefined;
  let scale: number | undefined;
  let note: string | undefined;
  let rtts: number[] | undefined;
  let ownCeph = false;
  let steps: Set<RttStep> | undefined;
  let tools = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') quick = true;
    else if (a === '--only') only = (argv[++i] ?? usage('--only needs a scenario name')).split(',');
    else if (a === '--work') work = resolve(argv[++i] ?? usage('--work needs a directory'));
    else if (a === '--rounds') rounds = Number(argv[++i]);
    else if (a === '--scale') scale = Number(argv[++i]);
    else if (a === '--note') note = argv[++i] ?? usage('--note needs a text');
    else if (a === '--own-ceph') ownCeph = true;
    else if (a === '--steps') {
      const names = (argv[++i] ?? usage('--steps needs step names, e.g. --steps push,pull')).split(',');
      const bad = names.filter((n) => !(RTT_STEPS as readonly string[]).includes(n));
      if (bad.length) usage(`unknown step '${bad.join(',')}' (known: ${RTT_STEPS.join(', ')})`);
      steps = new Set(names as RttStep[]);
    }
    else if (a === '--tools') tools = true;
    else if (a === '--rtt') {
      try {
        rtts = parseRtts(argv[++i] ?? usage('--rtt needs milliseconds, e.g. --rtt 0,20'));
      } catch (e) {
        usage(e instanceof Error ? e.message : String(e));
      }
    }
    else usage(`unknown option '${a}'`);
  }
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0)) usage('--rounds must be a positive integer');
  if (scale !== undefined && !(scale > 0)) usage('--scale must be a positive number');
  const unknown = (only ?? []).filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length) usage(`unknown scenario '${unknown.join(',')}'`);
  if (process.getuid?.() !== 0) usage('must run as root (drop_caches, fusectl abort, mounts)');
  if (rtts && (quick || only)) usage('--rtt runs its own scenarios: drop --quick / --only');
  if (ownCeph && !rtts) usage('--own-ceph goes with --rtt');
  if (steps && !rtts) usage('--steps goes with --rtt');
  if (tools && (!rtts || ownCeph)) usage('--tools goes with --rtt (on the shared test Ceph)');

  const repo = resolve(import.meta.dirname, '../../..');
  const tryout = scale !== undefined || steps !== undefined; // a smaller home or a part of the run: never published
  const sizes = { ...(quick || rtts ? QUICK : FULL), ...(rtts ? { rounds: 1 } : {}), ...(rounds ? { rounds } : {}), ...(scale ? { scale } : {}) };
  mkdirSync(work, { recursive: true });
  const ctx = new Ctx(repo, work, quick, sizes);
  installCleanup();
  const command = `bench/run ${argv.filter((x, i) => x !== '--note' && argv[i - 1] !== '--note').join(' ')}`.trim(); // the note goes in the notes
  if (rtts && tools) {
    const md = await runToolsRtt(ctx, rtts, command, note);
    unmountAll();
    if (tryout) process.stdout.write(`\n${md}\n--scale given: a try-out, docs/benchmarks.md left alone\n`);
    else {
      writeBlock(join(repo, 'docs', 'benchmarks.md'), md, 'bench/run --rtt --tools');
      process.stdout.write(`\n${md}\nWrote ${join(repo, 'docs', 'benchmarks.md')} (its bench/run --rtt --tools block)\n`);
    }
    return;
  }
  if (rtts) {
    const md = await runRtt(ctx, rtts, command, note, ownCeph, steps);
    unmountAll();
    if (tryout) process.stdout.write(`\n${md}\n--scale or --steps given: a try-out, docs/benchmarks.md left alone\n`);
    else {
      writeBlock(join(repo, 'docs', 'benchmarks.md'), md, 'bench/run --rtt');
      process.stdout.write(`\n${md}\nWrote ${join(repo, 'docs', 'benchmarks.md')} (its bench/run --rtt block)\n`);
    }
    return;
  }
  const date = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const docs = join(repo, 'docs');
  const chartsDir = join(docs, 'bench');
  mkdirSync(chartsDir, { recursive: true });
  const resultsPath = join(chartsDir, 'results.json');
  const stored: Record<string, Stored> = existsSync(resultsPath) ? (JSON.parse(readFileSync(resultsPath, 'utf8')) as Record<string, Stored>) : {};
  const todo: Scenario[] = SCENARIOS.filter((s) => !only || only.includes(s.name));
  const t0 = Date.now();
  const loadBefore = loadavg()[1] ?? NaN;
  const done: Section[] = [];
  for (const sc of todo) {
    ctx.log(`== ${sc.title}`);
    const ts = Date.now();
    const load0 = loadavg()[0] ?? NaN;
    let sec: Section;
    try {
      sec = await sc.run(ctx);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      ctx.log(`${sc.name} failed: ${why}`);
      sec = { name: sc.name, title: sc.title, intro: `**This scenario failed in this run:** ${why}`, tables: [], charts: [], headlines: [], notes: [] };
    }
    unmountAll();
    sec.notes.push(`Scenario wall time ${((Date.now() - ts) / 1000).toFixed(0)} s; load average (1 min) ${load0.toFixed(1)} at its start, ${(loadavg()[0] ?? NaN).toFixed(1)} at its end, on ${cpus().length} cores.`);
    if (note) sec.notes.push(`Note for this run: ${note}`);
    for (const c of sec.charts) {
      if (tryout) continue;
      const svg = join(chartsDir, c.file);
      writeFileSync(svg, barChartSvg(c));
      try {
        execFileSync('rsvg-convert', ['-o', svg.replace(/\.svg$/, '.png'), svg], { stdio: 'ignore' });
      } catch {
        /* PNG is optional */
      }
    }
    done.push(sec);
    // quick and full results are kept side by side (the full run has the original sizes of the steady-state table)
    const key = quick ? sec.name : `${sec.name}@full`;
    if (!quick) sec.title = `${sec.title} — full sizes`;
    stored[key] = { command, date, md: sectionMd(sec), headlines: sec.headlines.map((h) => (quick ? h : { ...h, text: `[full] ${h.text}` })) };
    if (!tryout) writeFileSync(resultsPath, `${JSON.stringify(stored, null, 1)}\n`);
    for (const t of sec.tables) process.stdout.write(`\n${tableText(t)}\n`);
  }
  const keys = SCENARIOS.flatMap((s) => [s.name, `${s.name}@full`]).filter((k) => stored[k]);
  const all = keys.map((k) => stored[k]).filter((x): x is Stored => !!x);
  const heads = all.flatMap((x) => x.headlines);
  const worst = heads.filter((h) => Number.isFinite(h.slowdown)).sort((a, b) => b.slowdown - a.slowdown)[0];
  const body = [
    '## Side-by-side benchmarks (bench/run)',
    '',
    `Generated by \`${command}\` on ${date} (sections below say which command and date produced them if they come from an earlier run).`,
    'Every cell is the median of the rounds with (min–max); peers run in alternation (A B A B …) in each round.',
    '',
    machine(),
    `- Load average (5 min) at start / end of this run: ${loadBefore.toFixed(1)} / ${(loadavg()[1] ?? NaN).toFixed(1)} on ${cpus().length} cores; the run took ${((Date.now() - t0) / 60000).toFixed(1)} min. Other work on the machine inflates every number here; the ratios, measured in alternation, are what to read.`,
    '',
    '### Summary: headline ratios',
    '',
    ...heads.map((h) => `- ${h.text}`),
    ...(worst ? ['', `Worst: **${worst.text}** (homefs ${worst.slowdown.toFixed(2)}× the reference).`] : []),
    '',
    ...keys.flatMap((k) => {
      const x = stored[k];
      if (!x) return [];
      const stale = x.command !== command || x.date !== date ? `_(from \`${x.command}\` on ${x.date})_\n\n` : '';
      return [x.md.replace(/^(### .*\n\n)/, `$1${stale}`)];
    }),
  ].join('\n');
  if (tryout) process.stdout.write('\n--scale given: a try-out, docs/benchmarks.md and docs/bench/results.json left alone\n');
  else writeBlock(join(docs, 'benchmarks.md'), body);
  // scratch (stores, repositories, mounts' state) is large; generated inputs stay cached in <work>/inputs
  // (never while anything is still mounted under it: rm would walk into, or hang on, the mount)
  const runDir = `${join(work, 'run')}/`;
  if (!readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => (l.split(' ')[4] ?? '').startsWith(runDir))) {
    rmSync(join(work, 'run'), { recursive: true, force: true });
  }
  process.stdout.write(`\nSummary (${((Date.now() - t0) / 1000).toFixed(0)} s):\n${done.flatMap((d) => d.headlines).map((h) => `  ${h.text}`).join('\n')}\n`);
  if (worst) process.stdout.write(`Worst: ${worst.text}\n`);
  if (!tryout) process.stdout.write(`Wrote ${join(docs, 'benchmarks.md')} and ${chartsDir}/*.svg\n`);
}

main().catch((e: unknown) => {
  unmountAll();
  process.stderr.write(`bench/run: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});

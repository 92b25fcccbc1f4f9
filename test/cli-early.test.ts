/**
 * The background mount's launcher (bin/homefs run as a program, cli/early.ts): which command lines start
 * the daemon from bash (the same ones `wantsEarlyDaemon` picks for `node bin/homefs`), the daemon's
 * environment (huge pages unless GLIBC_TUNABLES says how), and the report protocol: each way a daemon can
 * answer or fail gives its one line and exit code. The daemon here is a stand-in node binary (HOMEFS_NODE)
 * that records how it was started and answers as each case asks. The daemon's side of the pipe is checked
 * in a real Node child: it takes the pipe close-on-exec, so a process it starts does not hold it open.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EARLY_ENV, wantsEarlyDaemon } from '../src/cli/early.js';
import { ExitCode } from '../src/util/exit-codes.js';

const BIN = fileURLToPath(new URL('../../bin/homefs', import.meta.url));
const EARLY_JS = fileURLToPath(new URL('../src/cli/early.js', import.meta.url));

interface Run { code: number; stdout: string; stderr: string; started: Array<{ argv: string[]; early: string; tunables: string }> }

/**
 * bin/homefs `args`, run as a program with a stand-in node: it appends how it was started to a record and
 * then runs `answer` (bash; fd 3 is the report pipe when started as a daemon).
 */
async function launch(args: string[], answer: string, env: Record<string, string> = {}): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-early-'));
  try {
    const record = join(dir, 'started');
    const fake = join(dir, 'node');
    await writeFile(fake, `#!/bin/bash
case "$*" in *--input-type=module*) exec "${process.execPath}" "$@" ;; esac
printf '%s\\n' "$(printf '%s\\x1f' "$@")" "\${${EARLY_ENV}-}" "\${GLIBC_TUNABLES-}" >> ${record}
${answer}
`);
    await chmod(fake, 0o755);
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !['GLIBC_TUNABLES', EARLY_ENV, 'HOMEFS_STORE', 'COVEY_HOME_STORE'].includes(k))) as Record<string, string>;
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(BIN, args, { env: { ...base, ...env, HOMEFS_NODE: fake }, encoding: 'utf8', timeout: 20_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      });
    });
    const lines = (await readFile(record, 'utf8').catch(() => '')).split('\n');
    const started: Run['started'] = [];
    for (let i = 0; i + 2 < lines.length; i += 3) {
      started.push({ argv: (lines[i] as string).split('\x1f').slice(0, -1), early: lines[i + 1] as string, tunables: lines[i + 2] as string });
    }
    return { ...r, started };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const READY = 'echo "log /tmp/none.log" >&3; echo "ready mounted acme/a at /mnt" >&3';

test('bash starts the daemon of a background mount, and only of one: the same command lines Node picks', async () => {
  const cases: Array<[string[], Record<string, string>]> = [
    [['mount', 'acme/a', '/mnt'], {}],
    [['mount', 'acme/a', '/mnt', '--store', 'file:///s', '--read-only'], {}],
    [['mount', 'acme/a', '/mnt', '--foreground'], {}],
    [['mount', '--help'], {}],
    [['mount', 'acme/a', '-h'], {}],
    [['mount', '--', 'acme/a', '/mnt'], {}],
    [['push', 'dir', 'acme/a'], {}],
    [[], {}],
    [['mount', 'acme/a', '/mnt'], { HOMEFS_STORE: 'false' }],
    [['mount', 'acme/a', '/mnt'], { COVEY_HOME_STORE: 'false' }],
    [['mount', 'acme/a', '/mnt'], { [EARLY_ENV]: '7' }],
  ];
  for (const [args, env] of cases) {
    const early = wantsEarlyDaemon(args, env);
    const r = await launch(args, READY, env);
    const what = `${args.join(' ')} ${JSON.stringify(env)}`;
    assert.equal(r.started.length, 1, what);
    const s = r.started[0] as Run['started'][number];
    assert.ok(s.argv.includes(BIN), `${what}: node runs bin/homefs`);
    assert.deepEqual(s.argv.slice(s.argv.indexOf(BIN) + 1), [...args, ...(early ? ['--foreground'] : [])], what);
    assert.ok(s.argv.slice(0, s.argv.indexOf(BIN)).includes('--max-semi-space-size=16'), `${what}: with the V8 flags`);
    assert.equal(s.early, early ? '3' : (env[EARLY_ENV] ?? ''), `${what}: the report pipe is named only to a daemon started early`);
    if (early) assert.deepEqual([r.code, r.stdout, r.stderr], [0, 'mounted acme/a at /mnt\n', ''], what);
  }
});

test("the daemon's malloc asks for huge pages, unless GLIBC_TUNABLES already says how", async () => {
  const tunables = async (v?: string): Promise<string> => {
    const r = await launch(['mount', 'acme/a', '/mnt'], READY, v === undefined ? {} : { GLIBC_TUNABLES: v });
    return (r.started[0] as Run['started'][number]).tunables;
  };
  assert.equal(await tunables(), 'glibc.malloc.hugetlb=1');
  assert.equal(await tunables('glibc.malloc.arena_max=2'), 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1');
  assert.equal(await tunables('glibc.malloc.hugetlb=0'), 'glibc.malloc.hugetlb=0');
  assert.equal(await tunables('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2'), 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2');
  const other = await launch(['push', 'dir', 'acme/a'], '', { GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' });
  assert.equal((other.started[0] as Run['started'][number]).tunables, 'glibc.malloc.arena_max=2', 'other commands run as they are');
});

test('each answer of the daemon gives its one line and exit code', async () => {
  const mount = ['mount', 'acme/a', '/mnt'];
  const dir = await mkdtemp(join(tmpdir(), 'homefs-early-log-'));
  try {
    const log = join(dir, 'daemon.log');
    await writeFile(log, `${JSON.stringify({ level: 30, msg: 'waking' })}\n${JSON.stringify({ level: 50, err: 'the cache disk is full' })}\n${JSON.stringify({ level: 30, msg: 'bye' })}\n`);
    const cases: Array<[string, number, string, RegExp]> = [
      [READY, 0, 'mounted acme/a at /mnt\n', /^$/],
      [`echo "log ${log}" >&3; echo "error 3 homefs: store s3://b is unreachable" >&3; exit 3`, 3, '', /^homefs: store s3:\/\/b is unreachable\n$/],
      // refused before its log: it says why itself, on the command's error output
      ['echo "error: unknown option \'--bogus\'" >&2; exit 2', 2, '', /^error: unknown option '--bogus'\n$/],
      [`echo "log ${log}" >&3; kill -9 $$`, 137, '', new RegExp(`^homefs: the homefs daemon exited \\(SIGKILL\\) before the mount was live: the cache disk is full; see ${log}\\n$`)],
      ['exit 0', 1, '', /^homefs: the homefs daemon exited \(code 0\) before the mount was live\n$/],
      [`echo "log ${log}" >&3; exec 3>&-; exit 4`, 4, '', /exited \(code 4\) before the mount was live: the cache disk is full/],
    ];
    for (const [answer, code, stdout, stderr] of cases) {
      const r = await launch(mount, answer);
      assert.equal(r.code, code, answer);
      assert.equal(r.stdout, stdout, answer);
      assert.match(r.stderr, stderr, answer);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the daemon takes its report pipe close-on-exec, reports line by line and drops the variable', async () => {
  const script = `
    const { spawn } = await import('node:child_process');
    const early = await import(${JSON.stringify(EARLY_JS)});
    if (!early.startedByLauncher()) process.exit(9);
    if (process.env.${EARLY_ENV} !== undefined) process.exit(8);
    spawn('sleep', ['10'], { detached: true, stdio: 'ignore' }).unref(); // must not hold the pipe open
    early.reportToLauncher('log /x/daemon.log', false);
    early.reportToLauncher('ready mounted a\\nb', true);
    early.reportToLauncher('ignored after the last', false);`;
  // fd 3 is a pipe to cat, as bin/homefs gives it: cat ends once nothing holds the pipe's write end.
  const t0 = performance.now();
  const r = await new Promise<{ err: Error | null; stdout: string }>((resolve) => {
    execFile('bash', ['-c', '{ "$0" --input-type=module -e "$1" 3>&1 1>&2; echo "exit $?" >&2; } | cat', process.execPath, script],
      { env: { ...process.env, [EARLY_ENV]: '3' }, encoding: 'utf8', timeout: 20_000 }, (err, stdout, stderr) => resolve({ err: err ?? (stderr.includes('exit 0') ? null : new Error(stderr)), stdout }));
  });
  assert.equal(r.err, null);
  assert.equal(r.stdout, 'log /x/daemon.log\nready mounted a b\n');
  assert.ok(performance.now() - t0 < 8_000, 'the pipe closed while the process the daemon started still ran');
});

test('a stray HOMEFS_EARLY_DAEMON does not hand a mount back and forth between Node and the launcher', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-early-stray-'));
  try {
    // A mountpoint that checks out and a store that does not, found only by the daemon once it runs.
    await mkdir(join(dir, 'mnt'));
    await writeFile(join(dir, 'store'), 'not a directory');
    const r = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, 'mount', 'acme/a', join(dir, 'mnt'), '--store', `file://${join(dir, 'store')}`, '--state-dir', join(dir, 'state'), '--cache-dir', join(dir, 'cache')],
        { env: { ...process.env, [EARLY_ENV]: '5' }, encoding: 'utf8', timeout: 20_000 }, (err, _stdout, stderr) => {
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr });
        });
    });
    assert.notEqual(r.code, 0, r.stderr);
    assert.notEqual(r.code, -1, 'ended, not killed by the timeout');
    assert.match(r.stderr, /^homefs: .*store.*not a directory/m);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the daemon's internal error keeps the CLI's exit code through the launcher", async () => {
  const r = await launch(['mount', 'acme/a', '/mnt'], `echo "error ${ExitCode.internal} homefs: internal error in the daemon: boom (stack trace in /x.log)" >&3; exit ${ExitCode.internal}`);
  assert.equal(r.code, ExitCode.internal);
  assert.equal(r.stderr, 'homefs: internal error in the daemon: boom (stack trace in /x.log)\n');
});

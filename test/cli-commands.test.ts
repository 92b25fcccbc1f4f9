/**
 * The lazy command table (src/cli/commands.ts): every command in it is the one its module registers (same
 * name, usage term and description), no module registers a command the table lacks, --help lists them all,
 * `<cmd> --help` shows the real command's options, an unknown command is still one line, and running a
 * command imports only its own module (a mount loads neither push's nor gc's, nor the AWS SDK).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Help } from 'commander';
import { COMMANDS, commandOf } from '../src/cli/commands.js';

const BIN = fileURLToPath(new URL('../../bin/homefs', import.meta.url));
const TRACE = fileURLToPath(new URL('./support/trace-imports.js', import.meta.url));

function homefs(args: string[], opts: { nodeArgs?: string[]; env?: Record<string, string> } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...(opts.nodeArgs ?? []), BIN, ...args], { env: { ...process.env, ...opts.env }, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

const squash = (s: string): string => s.replace(/\s+/g, ' ');

test('every command in the table is the one its module registers, and no module registers one the table lacks', async () => {
  const byLoader = new Map<CommandEntryLoad, string[]>();
  for (const c of COMMANDS) byLoader.set(c.load, [...(byLoader.get(c.load) ?? []), c.name]);
  const help = new Help();
  for (const [load, names] of byLoader) {
    const program = new Command('homefs');
    (await load())(program);
    assert.deepEqual(program.commands.map((k) => k.name()).sort(), [...names].sort(), `the module of ${names.join(', ')}`);
    for (const name of names) {
      const real = program.commands.find((k) => k.name() === name);
      const entry = COMMANDS.find((c) => c.name === name);
      assert.ok(real && entry);
      assert.equal(entry.description, real.description(), `description of ${name}`);
      assert.equal(`${name} ${entry.args}`, help.subcommandTerm(real), `usage term of ${name}`);
    }
  }
  assert.equal(new Set(COMMANDS.map((c) => c.name)).size, COMMANDS.length, 'names are unique');
});
type CommandEntryLoad = (typeof COMMANDS)[number]['load'];

test('commandOf finds the command after options, and the one `help` names', () => {
  assert.equal(commandOf(['mount', 'a/b', '/m'])?.name, 'mount');
  assert.equal(commandOf(['--help']), undefined);
  assert.equal(commandOf(['help', 'gc'])?.name, 'gc');
  assert.equal(commandOf(['frob']), undefined);
});

test('--help lists every command with its usage term and description', async () => {
  const r = await homefs(['--help']);
  assert.equal(r.code, 0, r.stderr);
  const text = squash(r.stdout);
  for (const c of COMMANDS) {
    assert.ok(r.stdout.includes(`  ${c.name} ${c.args}`), `${c.name} ${c.args} listed`);
    assert.ok(text.includes(squash(c.description)), `description of ${c.name} listed`);
  }
});

test('<cmd> --help and help <cmd> show the real command, with its options', async () => {
  for (const args of [['mount', '--help'], ['help', 'mount']]) {
    const r = await homefs(args);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Usage: homefs mount \[options\] <home> <mountpoint>/);
    assert.match(r.stdout, /--fsync <mode>/);
  }
  const gc = await homefs(['gc', '--help']);
  assert.match(gc.stdout, /--grace/);
});

test('an unknown command is one error line, its suggestion and the usage hint, exit 2', async () => {
  const r = await homefs(['frob']);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.deepEqual(r.stderr.trim().split('\n'), ["error: unknown command 'frob'", '(Did you mean fork?)', '(run with --help for usage)']);
});

test('a command imports only its own module: mount loads no other command, no AWS SDK, and not the daemon\'s parts', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-cli-commands-'));
  try {
    const trace = join(dir, 'trace');
    const r = await homefs(['mount', '--help'], { nodeArgs: ['--import', TRACE], env: { HOMEFS_TRACE_IMPORTS: trace } });
    assert.equal(r.code, 0, r.stderr);
    const urls = (await readFile(trace, 'utf8')).split('\n').filter(Boolean).map((l) => l.split(' ')[1] ?? '');
    assert.ok(urls.some((u) => u.endsWith('/src/cli/mount.js')), 'mount.js loaded');
    const others = COMMANDS.filter((c) => c.name !== 'mount').map((c) => c.name === 'sync' || c.name === 'sleep' || c.name === 'status' ? 'control-cmds' : c.name === 'uninstall-helper' ? 'install-helper' : c.name);
    for (const o of others) assert.ok(!urls.some((u) => u.endsWith(`/src/cli/${o}.js`)), `${o}.js not loaded`);
    assert.ok(!urls.some((u) => u.includes('@aws-sdk')), `no @aws-sdk module: ${urls.filter((u) => u.includes('@aws-sdk')).slice(0, 3).join(', ')}`);
    for (const heavy of ['/src/home/home.js', '/src/metrics/homefs.js', '/node_modules/pino/', '/node_modules/prom-client/']) {
      assert.ok(!urls.some((u) => u.includes(heavy)), `the command that spawns the daemon loads no ${heavy}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the daemon\'s modules load neither Node\'s bundled undici nor TLS (an http endpoint needs neither)', async () => {
  const mods = ['cli/mount.js', 'home/home.js', 'metrics/homefs.js', 'metrics/http.js', 'daemon/services.js', 'store/open.js', 'store/s3lean.js'];
  const script = `await Promise.all(${JSON.stringify(mods.map((m) => new URL(`../src/${m}`, import.meta.url).href))}.map((u) => import(u)));
    console.log(JSON.stringify(process.moduleLoadList.filter((m) => /undici|\\btls\\b/.test(m))));`;
  const loaded = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)));
  });
  assert.deepEqual(JSON.parse(loaded), []);
});

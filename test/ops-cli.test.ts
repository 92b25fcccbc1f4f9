/**
 * The operator commands through bin/homefs against a file store: --json shapes of fork, diff, du,
 * locality, verify, gc and rollback; verify --full naming a corrupted file and exiting 4; and every
 * command's error paths (bad names, unknown home, unreachable store, bad flags) as one line on stderr
 * with a non-zero exit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { cp, mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/homefs', import.meta.url));

function homefs(args: string[], env: Record<string, string>): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Async variant, so that independent error cases run a few at a time (each costs a node startup). */
function homefsAsync(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

async function inParallel<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  }));
  return out;
}

function ok(args: string[], env: Record<string, string>): string {
  const r = homefs(args, env);
  assert.equal(r.code, 0, `homefs ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test('ops commands: --json results, verify --full names a corrupted path, locality from the cache layout', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-cli-'));
  try {
    const env = { HOMEFS_STORE: `file://${join(work, 'store')}`, HOMEFS_DATA_DIR: join(work, 'data') };
    const src = join(work, 'src');
    await mkdir(join(src, 'notes'), { recursive: true });
    await writeFile(join(src, 'notes/todo.md'), '# todo\n');
    await writeFile(join(src, 'notes/plan.md'), 'plan\n');
    const first = ok(['push', src, 'acme/alice'], env).trim();
    await writeFile(join(src, 'notes/todo.md'), '# todo\n- ship it\n');
    await rm(join(src, 'notes/plan.md'));
    await writeFile(join(src, 'new.txt'), 'hello\n');
    ok(['push', src, 'acme/alice'], env);

    const diff = ok(['diff', 'acme/alice', '--json'], env).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(diff.slice(0, -1).map((c) => `${String(c.change)} ${String(c.path)}`), ['added new.txt', 'removed notes/plan.md', 'modified notes/todo.md']);
    assert.deepEqual(diff.at(-1), { summary: { from: first, to: diff.at(-1) && (diff.at(-1)?.summary as { to: string }).to, added: 1, removed: 1, modified: 1, bytesAdded: 16, bytesRemoved: 5 } });
    const plainDiff = homefs(['diff', `acme/alice@${first.slice(0, 8)}`], env);
    assert.match(plainDiff.stdout, /^A +6 B {2}new\.txt\nD +5 B {2}notes\/plan\.md\nM +7 B -> 17 B {2}notes\/todo\.md\n$/);

    const fork = JSON.parse(ok(['fork', `acme/alice@${first.slice(0, 10)}`, 'acme/bob', '--json'], env)) as { from: string; gen: number; ms: number };
    assert.equal(fork.from, first);
    assert.equal(fork.gen, 0);
    assert.equal(ok(['cat', 'acme/bob', 'notes/plan.md'], env), 'plan\n');

    const du = JSON.parse(ok(['du', 'acme', '--json'], env)) as { homes: Array<{ home: string; logicalBytes: number; uniqueBytes: number; sharedBytes: number }> };
    assert.deepEqual(du.homes.map((h) => h.home), ['acme/alice', 'acme/bob']);
    assert.deepEqual(du.homes.map((h) => [h.logicalBytes, h.uniqueBytes, h.sharedBytes]), [[23, 23, 0], [12, 12, 0]]);
    assert.match(ok(['du', 'acme/bob'], env), /acme\/bob\n$/);

    const cacheDir = join(work, 'cache');
    const loc0 = JSON.parse(ok(['locality', 'acme/alice', '--cache-dir', cacheDir, '--json'], env)) as { bytes: number; bytesCached: number; ratio: number };
    assert.deepEqual([loc0.bytes, loc0.bytesCached, loc0.ratio], [23, 0, 0]);
    await mkdir(join(cacheDir, 'acme'), { recursive: true });
    await cp(join(work, 'store/acme/blocks'), join(cacheDir, 'acme/blocks'), { recursive: true });
    const loc1 = JSON.parse(ok(['locality', 'acme/alice', '--cache-dir', cacheDir, '--json'], env)) as { bytesCached: number; ratio: number; blocks: number };
    assert.deepEqual([loc1.bytesCached, loc1.ratio, loc1.blocks], [23, 1, 2]);
    assert.match(ok(['locality', 'acme/alice', '--cache-dir', cacheDir], env), /23 B of 23 B cached \(100\.0%\), 2\/2 blocks/);

    const rb = JSON.parse(ok(['rollback', 'acme/alice', first.slice(0, 12), '--json'], env)) as { gen: number; to: string };
    assert.deepEqual([rb.gen, rb.to], [2, first]);
    assert.equal(ok(['cat', 'acme/alice', 'notes/plan.md'], env), 'plan\n');

    const gc = JSON.parse(ok(['gc', '--org', 'acme', '--grace', '0s', '--keep', '1', '--fence-wait', '0s', '--dry-run', '--json'], env)) as { dryRun: boolean; prunedGenerations: number; deletedObjects: number };
    assert.equal(gc.dryRun, true);
    assert.equal(gc.prunedGenerations, 2);
    assert.ok(gc.deletedObjects > 0);
    assert.match(ok(['gc', '--grace', '0s', '--keep', '1', '--fence-wait', '0s'], env), /^acme: freed \d+ B \(\d+ objects\)/);
    assert.match(ok(['verify', '--org', 'acme', '--full'], env), /^ok: 2 homes/);

    // Corrupt the block of notes/plan.md: verify finds it only when re-hashing, names the path, exits 1.
    const blocks = join(work, 'store/acme/blocks');
    const { hashBuffer } = await import('../src/hash/blake3.js');
    const h = hashBuffer(Buffer.from('plan\n'));
    await writeFile(join(blocks, h.slice(0, 2), h), 'tampered');
    assert.equal(homefs(['verify', 'acme/alice'], env).code, 0, 'presence check passes');
    const bad = homefs(['verify', 'acme/alice', '--full'], env);
    assert.equal(bad.code, 4, 'damage found');
    assert.match(bad.stdout, /^corrupt block acme\/alice: notes\/plan\.md \(acme\/blocks\/..\/[0-9a-f]{64}; gen 2\)\n1 problems:/);
    const json = JSON.parse(homefs(['verify', '--org', 'acme', '--full', '--json'], env).stdout) as { problems: Array<{ path: string; problem: string }> };
    assert.deepEqual(json.problems.map((p) => `${p.problem} ${p.path}`), ['corrupt notes/plan.md']);
    await rm(join(blocks, h.slice(0, 2), h));
    const missing = homefs(['verify', 'acme/bob'], env);
    assert.equal(missing.code, 4, 'damage found');
    assert.match(missing.stdout, /^missing block acme\/bob: notes\/plan\.md/);
    for (const d of await readdir(blocks)) assert.ok(d.length === 2);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('ops commands: error paths are one line and a non-zero exit', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-err-'));
  try {
    const env = { HOMEFS_STORE: `file://${join(work, 'store')}`, HOMEFS_DATA_DIR: join(work, 'data') };
    const src = join(work, 'src');
    await mkdir(src);
    await writeFile(join(src, 'a'), 'a');
    ok(['push', src, 'acme/alice'], env);
    ok(['push', src, 'other/carol'], env);
    const dead = ['--store', 'file:///dev/null/store'];
    const cases: Array<[string[], RegExp]> = [
      [['fork', 'acme', 'acme/x'], /invalid home 'acme'/],
      [['fork', 'acme/alice', 'acme/Bad'], /invalid home name 'Bad'/],
      [['fork', 'acme/nobody', 'acme/x'], /home acme\/nobody has no snapshots/],
      [['fork', 'acme/alice', 'acme/alice'], /onto itself/],
      [['fork', 'acme/alice', 'other/carol2'], /cannot fork across orgs/],
      [['fork', 'acme/alice', 'other/carol'], /cannot fork across orgs/],
      [['fork', 'acme/alice@zzzzzz', 'acme/x'], /invalid snapshot 'zzzzzz'/],
      [['fork', 'acme/alice@abcdef', 'acme/x'], /no snapshot abcdef in org acme/],
      [['fork', 'acme/alice', 'acme/x', ...dead], /cannot open store file:\/\/\/dev\/null\/store/],
      [['rollback', 'acme/', 'abcdef'], /invalid home name ''/],
      [['rollback', 'acme/nobody', 'abcdef'], /home acme\/nobody has no snapshots/],
      [['rollback', 'acme/alice', 'xyz'], /invalid snapshot 'xyz'/],
      [['rollback', 'acme/alice', 'abcdef'], /no snapshot abcdef/],
      [['rollback', 'acme/alice', 'abcdef', ...dead], /cannot open store/],
      [['diff', 'a/b/c'], /invalid home 'a\/b\/c'/],
      [['diff', 'acme/nobody'], /home acme\/nobody has no snapshots/],
      [['diff', 'acme/alice@abcdef'], /no snapshot abcdef/],
      [['diff', 'acme/alice', '@nothex'], /invalid snapshot '@nothex'/],
      [['diff', 'acme/alice', ...dead], /cannot open store/],
      [['gc', '--org', '../etc'], /invalid org name/],
      [['gc', '--grace', 'soon'], /invalid --grace 'soon'/],
      [['gc', '--keep', '0'], /invalid --keep '0'/],
      [['gc', ...dead], /cannot open store/],
      [['verify'], /give either <org>\/<home> or --org ORG/],
      [['verify', 'acme/alice', '--org', 'acme'], /give either/],
      [['verify', 'acme/nobody'], /home acme\/nobody has no snapshots/],
      [['verify', '--org', 'nobody'], /org nobody has no homes/],
      [['verify', 'ACME/alice'], /invalid org name 'ACME'/],
      [['verify', 'acme/alice', ...dead], /cannot open store/],
      [['locality', 'acme'], /invalid home 'acme'/],
      [['locality', 'acme/nobody'], /home acme\/nobody has no snapshots/],
      [['locality', 'acme/alice', ...dead], /cannot open store/],
      [['du', 'Acme'], /invalid org name 'Acme'/],
      [['du', 'acme/nobody'], /home acme\/nobody has no snapshots/],
      [['du', 'nobody'], /org nobody has no homes/],
      [['du', 'acme', ...dead], /cannot open store/],
      [['install-helper', '--prefix', '/dev/null/x'], /cannot install \/dev\/null\/x\/sbin\/mount\.homefs/],
      [['status', join(work, 'not-a-mount'), '--metrics'], /is not a homefs mount served on this host/],
      [['log', 'acme/alice', ...dead], /cannot open store/],
    ];
    const results = await inParallel(cases, 4, ([args]) => homefsAsync(args, env));
    cases.forEach(([args, re], i) => {
      const r = results[i] ?? { code: 0, stdout: '', stderr: '' };
      assert.notEqual(r.code, 0, `homefs ${args.join(' ')} fails`);
      assert.match(r.stderr, re, `homefs ${args.join(' ')}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line: homefs ${args.join(' ')}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /internal error|\n\s+at /);
    });
    const cmds = ['fork', 'rollback', 'diff', 'gc', 'verify', 'locality', 'du', 'install-helper', 'uninstall-helper', 'status'];
    const helps = await inParallel(cmds, 4, (cmd) => homefsAsync([cmd, '--help'], env));
    cmds.forEach((cmd, i) => {
      assert.equal(helps[i]?.code, 0, `${cmd} --help`);
      assert.match(helps[i]?.stdout ?? '', new RegExp(`^Usage: homefs ${cmd} `));
    });
    assert.match(helps[cmds.indexOf('gc')]?.stdout ?? '', /--grace <duration>[\s\S]*default: "24h"[\s\S]*--dry-run/);
    assert.match(helps[cmds.indexOf('status')]?.stdout ?? '', /--metrics/);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

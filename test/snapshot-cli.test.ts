/**
 * The push/pull/log/ls/cat commands end to end through the real CLI entry point against a file store:
 * output shapes (`--json`), exit codes, one-line errors, excludes from HOMEFS_EXCLUDES, and a corrupted
 * block making `cat` fail with the path named.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

function homefs(args: string[], env: Record<string, string>): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

test('cli: push --json, log, ls, cat, pull, and one-line errors', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-cli-'));
  try {
    const env = { HOMEFS_STORE: `file://${join(work, 'store')}`, HOMEFS_EXCLUDES: 'node_modules/,*.log' };
    const src = join(work, 'src');
    await mkdir(join(src, 'node_modules/x'), { recursive: true });
    await mkdir(join(src, 'notes'));
    await writeFile(join(src, 'notes/todo.md'), '# todo\n- ship\n');
    await writeFile(join(src, 'debug.log'), 'noise');
    await writeFile(join(src, 'node_modules/x/index.js'), 'noise');

    const push = homefs(['push', src, 'acme/alice', '--json'], env);
    assert.equal(push.code, 0, push.stderr);
    const res = JSON.parse(push.stdout) as Record<string, unknown>;
    for (const k of ['snapshot', 'files', 'bytes', 'blocksNew', 'bytesUploaded']) assert.ok(k in res, `--json has ${k}`);
    assert.match(String(res.snapshot), /^[0-9a-f]{64}$/);
    assert.equal(res.files, 1);
    assert.equal(res.excluded, 2);

    const plain = homefs(['push', src, 'acme/alice'], env);
    assert.equal(plain.code, 0);
    assert.match(plain.stdout, /^[0-9a-f]{64}\n$/);
    assert.match(plain.stderr, /0 of 1 blocks new/);

    const log = homefs(['log', 'acme/alice', '--json'], env);
    const rows = log.stdout.trim().split('\n').map((l) => JSON.parse(l) as { gen: number; id: string; parent: string | null });
    assert.deepEqual(rows.map((r) => r.gen), [1, 0]);
    assert.equal(rows[1]?.id, res.snapshot);
    assert.equal(rows[0]?.parent, res.snapshot);

    const ls = homefs(['ls', `acme/alice@${String(res.snapshot).slice(0, 8)}`, '-R'], env);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /^drwx.* notes\/\n-rw.* 14 .* notes\/todo\.md\n$/);

    const cat = homefs(['cat', 'acme/alice', 'notes/todo.md'], env);
    assert.equal(cat.stdout, '# todo\n- ship\n');

    const out = join(work, 'out');
    assert.equal(homefs(['pull', 'acme/alice', out], env).code, 0);
    assert.equal(await readFile(join(out, 'notes/todo.md'), 'utf8'), '# todo\n- ship\n');

    for (const [args, re] of [
      [['log', 'acme/nobody'], /^homefs: home acme\/nobody has no snapshots in file:/],
      [['cat', 'acme/alice', 'notes'], /^homefs: notes: not a regular file \(dir\)/],
      [['ls', 'acme/alice', 'missing'], /^homefs: missing: no such file or directory/],
      [['pull', 'acme/alice', out], /already exists and is not an empty directory/],
      [['push', join(work, 'nope'), 'acme/alice'], /no such directory/],
      [['push', src, 'acme'], /invalid home 'acme'/],
      [['log', 'acme/alice', '--store', 'ftp://x'], /unsupported store URL/],
    ] as const) {
      const r = homefs([...args], env);
      assert.notEqual(r.code, 0, `${args.join(' ')} fails`);
      assert.match(r.stderr, re);
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
    }

    const blocks = join(work, 'store/acme/blocks');
    const { readdirSync } = await import('node:fs');
    for (const d of readdirSync(blocks)) for (const f of readdirSync(join(blocks, d))) await writeFile(join(blocks, d, f), 'x');
    const bad = homefs(['cat', 'acme/alice', 'notes/todo.md'], env);
    assert.equal(bad.code, 4, 'damage found');
    assert.match(bad.stderr, /^homefs: corrupted object acme\/blocks\/.* \(notes\/todo\.md\)/);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('cli: a file store inside the pushed directory is never pushed', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-cli-self-'));
  try {
    await mkdir(join(work, 'notes'));
    await writeFile(join(work, 'notes/a.md'), 'a\n');
    const env = { HOMEFS_STORE: `file://${join(work, '.local/share/homefs/store')}` };
    for (let i = 0; i < 2; i++) {
      const r = homefs(['push', work, 'acme/self', '--json'], env);
      assert.equal(r.code, 0, r.stderr);
      const res = JSON.parse(r.stdout) as { files: number; excluded: number; blocksNew: number };
      assert.deepEqual([res.files, res.excluded, res.blocksNew], [1, 1, i === 0 ? 1 : 0]);
    }
    const self = homefs(['push', join(work, '.local/share/homefs/store'), 'acme/x'], env);
    assert.match(self.stderr, /^homefs: cannot push .*: it is the store itself\n$/);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('cli: pull of a snapshot with a missing block or tree fails in one line with exit 4 and leaves no destination', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-cli-missing-'));
  try {
    const env = { HOMEFS_STORE: `file://${join(work, 'store')}` };
    const src = join(work, 'src');
    await mkdir(join(src, 'docs/deep'), { recursive: true });
    await writeFile(join(src, 'docs/a.md'), 'kept\n');
    await writeFile(join(src, 'docs/deep/lost.md'), 'lost\n');
    assert.equal(homefs(['push', src, 'acme/miss', '--parallel', '4'], env).code, 0);
    const { hashBuffer } = await import('../src/hash/blake3.js');
    const { blockKey, metaKey } = await import('../src/store/keys.js');
    const { ObjectStore } = await import('../src/format/objects.js');
    const { resolvePath } = await import('../src/transfer/walk.js');
    const { readHead } = await import('../src/format/heads.js');
    const { FileStore } = await import('../src/store/file.js');
    const store = await new FileStore(join(work, 'store')).init();
    const objects = new ObjectStore(store, 'acme');
    const root = (await objects.getSnapshot((await readHead(store, 'acme', 'miss'))?.snapshot ?? assert.fail())).root;
    const deep = (await resolvePath(objects, root, 'docs/deep')).tree ?? assert.fail();

    const out = join(work, 'out');
    await store.delete(blockKey('acme', hashBuffer(Buffer.from('lost\n'))));
    const noBlock = homefs(['pull', 'acme/miss', out, '--parallel', '2'], env);
    assert.equal(noBlock.code, 4, noBlock.stderr);
    assert.match(noBlock.stderr, /^homefs: block [0-9a-f]{64} of docs\/deep\/lost\.md is missing from the store \(acme\/blocks\/.*\); run 'homefs verify'/);
    assert.equal(noBlock.stderr.trim().split('\n').length, 1, noBlock.stderr);

    await store.delete(metaKey('acme', deep));
    const noTree = homefs(['pull', 'acme/miss', out], env);
    assert.equal(noTree.code, 4, noTree.stderr);
    assert.match(noTree.stderr, /^homefs: tree [0-9a-f]{64} of docs\/deep is missing from the store/);
    assert.equal(noTree.stderr.trim().split('\n').length, 1, noTree.stderr);
    const { readdirSync } = await import('node:fs');
    assert.deepEqual(readdirSync(work).sort(), ['src', 'store'], 'neither the destination nor a temporary sibling is left');

    const bad = homefs(['pull', 'acme/miss', out, '--parallel', '0'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^homefs: invalid --parallel '0': expected a whole number from 1 to 1024\n$/);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

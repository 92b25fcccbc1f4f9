/**
 * sandbox/Dockerfile is built by hand (sandbox/test-image), so this test checks what can be checked without
 * a container engine: the runtime stage's `COPY --from=build /opt/homefs/...` lines, applied to this
 * checkout with only the production dependencies (what `npm prune --omit=dev` leaves), carry every addon
 * native/binding.gyp builds and every entry point package.json names, and give a homefs that mounts a
 * home, serves a write, seals it and pulls it; and the entrypoint the image starts is the tested
 * sandbox/homefs-entrypoint.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, TestHome, run, shOk } from './support/homefs-mount.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const DOCKERFILE = readFileSync(path.join(REPO, 'sandbox/Dockerfile'), 'utf8');
const h = new TestHome('acme', 'image');
after(() => h.cleanup());

test('the runtime stage copies everything homefs needs to mount, write and seal', async () => {
  const runtime = DOCKERFILE.slice(DOCKERFILE.lastIndexOf('\nFROM '));
  const copies = [...runtime.matchAll(/^COPY --from=build \/opt\/homefs\/(\S+) \/opt\/homefs\/(\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']);
  assert.ok(copies.length >= 5, 'the runtime stage copies the build output');
  const opt = path.join(h.root, 'opt/homefs');
  for (const [from, to] of copies) {
    if (from === 'node_modules') continue;
    const star = from.lastIndexOf('*');
    if (star >= 0) {
      // A glob in its last component (`dir/*.node`) into that same directory.
      const dir = path.dirname(from);
      assert.equal(to.replace(/\/$/, ''), dir, `${from} goes to its own directory`);
      const [prefix, suffix] = path.basename(from).split('*');
      mkdirSync(path.join(opt, dir), { recursive: true });
      for (const f of readdirSync(path.join(REPO, dir))) {
        if (f.startsWith(prefix ?? '') && f.endsWith(suffix ?? '')) cpSync(path.join(REPO, dir, f), path.join(opt, dir, f));
      }
      continue;
    }
    assert.equal(from, to);
    mkdirSync(path.dirname(path.join(opt, to)), { recursive: true });
    cpSync(path.join(REPO, from), path.join(opt, to), { recursive: true });
  }
  for (const [, addon] of readFileSync(path.join(REPO, 'native/binding.gyp'), 'utf8').matchAll(/"target_name":\s*"([^"]+)"/g)) {
    assert.ok(existsSync(path.join(opt, 'native/build/Release', `${addon ?? ''}.node`)), `the image carries the ${addon ?? ''} addon`);
  }
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { main?: string; bin?: Record<string, string> | string };
  const entries = [...(pkg.main ? [pkg.main] : []), ...(typeof pkg.bin === 'string' ? [pkg.bin] : Object.values(pkg.bin ?? {}))];
  assert.ok(entries.length > 0);
  for (const entry of entries) assert.ok(existsSync(path.join(opt, entry)), `the image carries ${entry}`);
  for (const m of readFileSync(path.join(REPO, 'bin/homefs'), 'utf8').matchAll(/\.\.\/(dist\/[\w/.-]+\.js)/g)) {
    assert.ok(existsSync(path.join(opt, m[1] ?? '')), `the image carries ${m[1] ?? ''}, which bin/homefs starts`);
  }
  assert.ok(copies.some(([f]) => f === 'node_modules'));
  // node_modules as `npm prune --omit=dev` leaves it: the production dependency tree only.
  const ls = await run('npm', ['ls', '--omit=dev', '--parseable', '--all'], { cwd: REPO });
  assert.equal(ls.code, 0, ls.stderr);
  for (const dir of ls.stdout.split('\n').filter((l) => l.includes(`${path.sep}node_modules${path.sep}`))) {
    cpSync(dir, path.join(opt, path.relative(REPO, dir)), { recursive: true });
  }
  assert.match(runtime, /^COPY sandbox\/homefs-entrypoint \/usr\/local\/bin\/homefs-entrypoint$/m);
  assert.match(runtime, /^ENTRYPOINT \["tini", "--", "homefs-entrypoint"\]$/m);

  const homefs = path.join(opt, 'bin/homefs');
  const mnt = h.mountpoint();
  const d = h.hostDirs('host1');
  const mounted = await run(process.execPath, [homefs, 'mount', h.ref, mnt, '--store', h.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache, '--metrics-addr', '0']);
  assert.equal(mounted.code, 0, mounted.stderr);
  h.mounts.add(mnt);
  await shOk(`echo from-the-image > ${mnt}/a.txt`);
  const slept = await run(process.execPath, [homefs, 'sleep', mnt]);
  assert.equal(slept.code, 0, slept.stderr);
  h.mounts.delete(mnt);
  const cat = await run(process.execPath, [homefs, 'cat', h.ref, 'a.txt', '--store', h.storeUrl]);
  assert.equal(cat.stdout, 'from-the-image\n');
  const pulled = path.join(h.root, 'pulled');
  const pull = await run(process.execPath, [homefs, 'pull', h.ref, pulled, '--store', h.storeUrl]);
  assert.equal(pull.code, 0, pull.stderr);
  assert.equal(readFileSync(path.join(pulled, 'a.txt'), 'utf8'), 'from-the-image\n', 'pull works from the image (its file-writer addon)');
});

test("pull as a container's root without CAP_FOWNER: the files are root's, nothing fails", async () => {
  const src = path.join(h.root, 'owned');
  mkdirSync(path.join(src, 'd'), { recursive: true });
  await shOk(`echo mine > ${src}/d/f.txt && chmod 640 ${src}/d/f.txt && chown -R 1000:1000 ${src}`);
  const pushed = await run(process.execPath, [BIN, 'push', src, 'acme/owned', '--store', h.storeUrl]);
  assert.equal(pushed.code, 0, pushed.stderr);
  const dest = path.join(h.root, 'owned-pulled');
  const pull = await run('setpriv', ['--bounding-set=-fowner', process.execPath, BIN, 'pull', 'acme/owned', dest, '--store', h.storeUrl]);
  assert.equal(pull.code, 0, pull.stderr);
  const st = statSync(path.join(dest, 'd/f.txt'));
  assert.equal(st.uid, 0, 'owners are not restored without CAP_FOWNER');
  assert.equal(st.mode & 0o777, 0o640);
  assert.equal(readFileSync(path.join(dest, 'd/f.txt'), 'utf8'), 'mine\n');
});

/**
 * sandbox/Dockerfile cannot be built here (no container engine), so this test checks what can be checked:
 * the runtime stage's `COPY --from=build /opt/homefs/...` lines, applied to this checkout with only the
 * production dependencies (what `npm prune --omit=dev` leaves), give a homefs that mounts a home, serves
 * a write and seals it; and the entrypoint the image starts is the tested sandbox/homefs-entrypoint.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestHome, run, shOk } from './support/homefs-mount.js';

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
    assert.equal(from, to);
    if (from === 'node_modules') continue;
    mkdirSync(path.dirname(path.join(opt, to)), { recursive: true });
    cpSync(path.join(REPO, from), path.join(opt, to), { recursive: true });
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
});

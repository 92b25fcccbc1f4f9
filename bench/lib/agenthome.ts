/**
 * A synthetic agent home shaped like the measured ones: mostly derivable bulk (a toolchain with large
 * binaries and many libraries, an .npm-like cache of tarballs, a git checkout with its node_modules) and
 * a small unique remainder scattered at the top level (history, notes, configs, scratch files).
 *
 * The "shared" part depends only on the scale, so homes generated with different `uniqueSeed`s share it
 * byte for byte (what agents on one toolchain share); the checkout's sources and the remainder depend on
 * the seed. Scale 1 is ~1 GiB and ~26k files; scale 8 is ~7.7 GiB and ~200k files.
 */
import { mkdirSync, writeFileSync, readFileSync, existsSync, openSync, writeSync, closeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Prng, hash32 } from './prng.js';
import { bash, q } from './sh.js';

export const GENERATOR_VERSION = 4;
const KiB = 1024;
const MiB = 1024 * 1024;

export interface HomeManifest {
  version: number;
  scale: number;
  seed: string;
  files: number;
  bytes: number;
  /** Relative path of a small file: the wake scenario's first `cat`. */
  smallFile: string;
  /** Relative path of the git checkout. */
  checkout: string;
  /** Relative paths of files totalling ~5 % of the bytes: the "build" reads them. */
  buildFiles: string[];
  buildBytes: number;
  /** Bytes of the part shared by all homes of this scale. */
  sharedBytes: number;
}

interface Acc {
  files: number;
  bytes: number;
  list: { path: string; size: number }[];
}

function put(root: string, rel: string, data: Buffer, acc: Acc): void {
  const p = join(root, rel);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, data);
  acc.files++;
  acc.bytes += data.length;
  acc.list.push({ path: rel, size: data.length });
}

function putLarge(root: string, rel: string, size: number, rng: Prng, acc: Acc): void {
  const p = join(root, rel);
  mkdirSync(dirname(p), { recursive: true });
  const fd = openSync(p, 'w');
  for (let left = size; left > 0; left -= 4 * MiB) writeSync(fd, rng.bytes(Math.min(left, 4 * MiB)));
  closeSync(fd);
  acc.files++;
  acc.bytes += size;
  acc.list.push({ path: rel, size });
}

const n = (base: number, scale: number): number => Math.max(1, Math.round(base * scale));

/** The derivable bulk shared by all homes of one scale. */
function generateShared(root: string, scale: number, acc: Acc): void {
  const rng = new Prng(`shared/${scale}`);
  for (let i = 0; i < n(4, scale); i++) putLarge(root, `.local/toolchain/bin/tool${i}`, 80 * MiB + rng.int(0, MiB), rng, acc);
  for (let i = 0; i < n(1500, scale); i++) {
    put(root, `.local/toolchain/lib/pkg${i % 60}/lib${i}.so`, rng.bytes(rng.int(20 * KiB, 300 * KiB)), acc);
  }
  for (let i = 0; i < n(1500, scale); i++) {
    const h = rng.bytes(16).toString('hex');
    put(root, `.npm/_cacache/content-v2/sha512/${h.slice(0, 2)}/${h.slice(2, 4)}/${h.slice(4)}`, rng.bytes(rng.int(4 * KiB, 400 * KiB)), acc);
  }
  for (let i = 0; i < n(18000, scale); i++) {
    const pkg = `pkg${Math.floor(i / 20)}`;
    put(root, `projects/app/node_modules/${pkg}/${i % 4 === 0 ? 'lib/' : ''}f${i}.js`, rng.text(rng.int(200, 8 * KiB)), acc);
  }
}

/** The checkout's own sources and the top-level remainder, unique to the seed. */
function generateUnique(root: string, scale: number, seed: string, acc: Acc): void {
  const rng = new Prng(`unique/${seed}/${scale}`);
  put(root, 'projects/app/.gitignore', Buffer.from('node_modules/\n'), acc);
  for (let i = 0; i < n(3000, scale); i++) {
    put(root, `projects/app/src/m${i % 40}/s${Math.floor(i / 40) % 10}/file${i}.ts`, rng.text(rng.int(KiB, 16 * KiB)), acc);
  }
  put(root, '.config/agent/settings.json', Buffer.from(`{"seed":"${seed}","theme":"dark"}\n`), acc);
  put(root, '.bash_history', rng.text(64 * KiB), acc);
  for (let i = 0; i < n(300, scale); i++) {
    const dir = ['notes', 'scratch', '.config/tools', 'downloads', ''][i % 5] as string;
    put(root, join(dir, `u${i}.${i % 2 ? 'md' : 'txt'}`), rng.text(rng.int(KiB, 64 * KiB)), acc);
  }
}

async function commitCheckout(root: string): Promise<void> {
  const app = join(root, 'projects/app');
  await bash(
    `cd ${q(app)}; export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
     git init -q -b main . && git -c user.name=bench -c user.email=bench@localhost add -A &&
     git -c gc.auto=0 -c user.name=bench -c user.email=bench@localhost commit -q -m init && git gc -q`,
  );
}

function chooseBuild(list: { path: string; size: number }[], total: number): { files: string[]; bytes: number } {
  const candidates = list.filter((f) => f.size <= 8 * MiB).sort((a, b) => hash32(a.path) - hash32(b.path));
  const files: string[] = [];
  let bytes = 0;
  for (const f of candidates) {
    if (bytes >= total * 0.05) break;
    files.push(f.path);
    bytes += f.size;
  }
  return { files, bytes };
}

/**
 * Generates a home into `root` (which must not exist) unless `root` already holds one of this version,
 * scale and seed, and returns its manifest (also stored as `<root>.manifest.json`).
 * With `sharedFrom`, the shared part is hard-linked from that already generated home instead of written.
 */
export async function agentHome(root: string, scale: number, seed: string, sharedFrom?: string): Promise<HomeManifest> {
  const manifestPath = `${root}.manifest.json`;
  if (existsSync(manifestPath)) {
    const m = JSON.parse(readFileSync(manifestPath, 'utf8')) as HomeManifest;
    if (m.version === GENERATOR_VERSION && m.scale === scale && m.seed === seed) return m;
  }
  await bash(`rm -rf ${q(root)} ${q(manifestPath)}`);
  mkdirSync(root, { recursive: true });
  const acc: Acc = { files: 0, bytes: 0, list: [] };
  if (sharedFrom) {
    await bash(`cp -al ${q(sharedFrom)}/.local ${q(sharedFrom)}/.npm ${q(root)}/ && mkdir -p ${q(root)}/projects/app && cp -al ${q(sharedFrom)}/projects/app/node_modules ${q(root)}/projects/app/`);
    const sm = JSON.parse(readFileSync(`${sharedFrom}.manifest.json`, 'utf8')) as HomeManifest & { shared: Acc };
    acc.files += sm.shared.files;
    acc.bytes += sm.shared.bytes;
    acc.list.push(...sm.shared.list);
  } else {
    generateShared(root, scale, acc);
  }
  const shared: Acc = { files: acc.files, bytes: acc.bytes, list: [...acc.list] };
  generateUnique(root, scale, seed, acc);
  await commitCheckout(root);
  const gitFiles = await bash(`cd ${q(root)}/projects/app/.git && find . -type f -printf '%s\\n'`);
  for (const s of gitFiles.stdout.trim().split('\n')) {
    acc.files++;
    acc.bytes += Number(s);
  }
  const build = chooseBuild(acc.list, acc.bytes);
  const m: HomeManifest & { shared: Acc } = {
    version: GENERATOR_VERSION, scale, seed, files: acc.files, bytes: acc.bytes,
    smallFile: '.config/agent/settings.json', checkout: 'projects/app',
    buildFiles: build.files, buildBytes: build.bytes, sharedBytes: shared.bytes, shared,
  };
  writeFileSync(manifestPath, JSON.stringify(m));
  return m;
}

/**
 * A home of `files` small files in directories of 100, for seal scaling: file i always has the same
 * content (drawn from a pool of 2,000 contents), so homes of different sizes share their blocks and
 * pushing the large ones costs hashing, not uploading.
 */
export async function manyFilesHome(root: string, files: number): Promise<void> {
  const marker = `${root}.done-${GENERATOR_VERSION}`;
  if (existsSync(marker)) return;
  await bash(`rm -rf ${q(root)} ${q(marker)}`);
  const pool: Buffer[] = [];
  const rng = new Prng('many');
  for (let i = 0; i < 2000; i++) pool.push(rng.text(rng.int(200, 4 * KiB)));
  for (let d = 0; d * 100 < files; d++) {
    const dir = join(root, `d${Math.floor(d / 100)}`, `e${d % 100}`);
    mkdirSync(dir, { recursive: true });
    for (let i = d * 100; i < Math.min(files, (d + 1) * 100); i++) writeFileSync(join(dir, `f${i}.txt`), pool[(i * 7919) % 2000] as Buffer);
  }
  writeFileSync(marker, '');
}

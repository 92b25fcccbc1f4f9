/**
 * The S3 server for tests: a real single-node Ceph RGW on 127.0.0.1 (test/support/ceph.sh), never a mock.
 *
 * `testS3Url()` returns a fresh, unique `s3://<bucket>/<prefix>-<random>?...` URL, so tests never see each
 * other's objects. With HOMEFS_TEST_S3_URL set (test/run-all starts the cluster and exports it with the
 * credentials) it derives from that; otherwise it starts the cluster itself, once per process, as a
 * "holder", and stops it when the process exits unless another live process still holds it.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** From dist/test/support/s3.js (or test/support/s3.ts) to the repository's test/support/ceph.sh. */
export const CEPH_SH = fileURLToPath(new URL('../../../test/support/ceph.sh', import.meta.url));

let started: Promise<string> | undefined;

/** Applies the `export NAME='value'` lines ceph.sh prints to this process's environment. */
export function applyExports(text: string, env: NodeJS.ProcessEnv = process.env): void {
  for (const line of text.split('\n')) {
    const m = /^export ([A-Z0-9_]+)='([^']*)'$/.exec(line.trim());
    if (m && m[1] !== undefined && m[2] !== undefined) env[m[1]] = m[2];
  }
}

async function startCeph(): Promise<string> {
  const holder = String(process.pid);
  const { stdout } = await promisify(execFile)(CEPH_SH, ['start'], {
    env: { ...process.env, HOMEFS_CEPH_HOLDER: holder },
    maxBuffer: 1 << 20,
  }).catch((e: unknown) => {
    const stderr = (e as { stderr?: string }).stderr ?? '';
    throw new Error(`could not start the Ceph test cluster with ${CEPH_SH}:\n${stderr}`);
  });
  applyExports(stdout);
  process.on('exit', () => {
    spawnSync(CEPH_SH, ['stop', '--holder', holder], { stdio: 'ignore' });
  });
  const url = process.env.HOMEFS_TEST_S3_URL;
  if (!url) throw new Error(`${CEPH_SH} start printed no HOMEFS_TEST_S3_URL`);
  return url;
}

/** The base URL: HOMEFS_TEST_S3_URL, or a cluster this process starts. */
export function testS3Base(): Promise<string> {
  const fromEnv = process.env.HOMEFS_TEST_S3_URL;
  if (fromEnv) return Promise.resolve(fromEnv);
  started ??= startCeph();
  return started;
}

/** A fresh, unique prefix under the test bucket: `s3://bucket/<prefix>-<random>?<same options>`. */
export async function testS3Url(): Promise<string> {
  const base = new URL(await testS3Base());
  const prefix = base.pathname.replace(/^\/+|\/+$/g, '') || 'test';
  base.pathname = `/${prefix}-${randomBytes(6).toString('hex')}`;
  return base.toString();
}

/** A loopback port nothing listens on (bound, then closed): an unreachable endpoint. */
export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const addr = srv.address();
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

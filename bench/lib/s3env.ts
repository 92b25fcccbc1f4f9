/**
 * The S3 store of `bench/run --rtt`: the test Ceph RGW that test/support/ceph.sh starts (or reuses) on
 * 127.0.0.1, and the URLs each system under test is given for one prefix of its bucket, pointed either at
 * RGW directly or at a latency proxy in front of it. Also reads the daemon's store request counts out of
 * `homefs status --metrics`.
 */
import { resolve } from 'node:path';
import { bash } from './sh.js';

export interface CephS3 {
  host: string;
  port: number;
  bucket: string;
  region: string;
  accessKey: string;
  secretKey: string;
}

/** Parses the `export NAME='value'` lines ceph.sh prints. */
export function parseExports(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^export ([A-Za-z_][A-Za-z0-9_]*)='([^']*)'$/.exec(line.trim());
    if (m?.[1] !== undefined && m[2] !== undefined) out[m[1]] = m[2];
  }
  return out;
}

/** The endpoint, bucket and credentials from ceph.sh's exports. */
export function cephFromExports(vars: Record<string, string>): CephS3 {
  const url = vars.HOMEFS_TEST_S3_URL;
  const accessKey = vars.AWS_ACCESS_KEY_ID;
  const secretKey = vars.AWS_SECRET_ACCESS_KEY;
  if (!url || !accessKey || !secretKey) throw new Error('ceph.sh printed no HOMEFS_TEST_S3_URL / AWS_* exports');
  const m = /^s3:\/\/([^/?]+)[^?]*\?(.*)$/.exec(url);
  const params = new URLSearchParams(m?.[2] ?? '');
  const endpoint = new URL(params.get('endpoint') ?? 'http://invalid');
  if (!m?.[1] || endpoint.hostname !== '127.0.0.1') throw new Error(`ceph.sh gave an unexpected S3 URL ${url} (want an endpoint on 127.0.0.1)`);
  return { host: endpoint.hostname, port: Number(endpoint.port), bucket: m[1], region: params.get('region') ?? 'us-east-1', accessKey, secretKey };
}

/**
 * Starts (or reuses) the test Ceph and sets the AWS_* credentials in this process for every child. The run
 * registers as a holder (HOMEFS_CEPH_HOLDER), so a test process that started the cluster for itself does
 * not stop it under the benchmark; it never stops the shared cluster. With `ownDir`, a private cluster is
 * started there instead (free ports, its own memstore), out of reach of other people's `ceph.sh stop`;
 * `stopOwnCeph` stops it.
 */
export async function startCeph(repo: string, ownDir?: string): Promise<CephS3> {
  const env = { ...process.env, HOMEFS_CEPH_HOLDER: String(process.pid), ...(ownDir ? { HOMEFS_CEPH_DIR: ownDir } : {}) };
  const r = await bash(`${resolve(repo, 'test/support/ceph.sh')} start`, { timeoutMs: 600_000, env });
  const c = cephFromExports(parseExports(r.stdout));
  process.env.AWS_ACCESS_KEY_ID = c.accessKey;
  process.env.AWS_SECRET_ACCESS_KEY = c.secretKey;
  delete process.env.AWS_CA_BUNDLE; // plain http on loopback; rclone 1.60 fails while it is set
  return c;
}

/** Stops the private cluster `startCeph(repo, ownDir)` started (never the shared one). */
export async function stopOwnCeph(repo: string, ownDir: string): Promise<void> {
  await bash(`${resolve(repo, 'test/support/ceph.sh')} stop`, { timeoutMs: 120_000, allowFail: true, env: { ...process.env, HOMEFS_CEPH_DIR: ownDir } });
}

/** What each system is given for `prefix` of the bucket, through 127.0.0.1:`port` (a proxy, or RGW itself). */
export function s3Urls(c: CephS3, port: number, prefix: string): { homefs: string; restic: string; rclone: string; endpoint: string } {
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    homefs: `s3://${c.bucket}/${prefix}/homefs?endpoint=${endpoint}&region=${c.region}&pathStyle=true`,
    restic: `s3:${endpoint}/${c.bucket}/${prefix}/restic`,
    rclone: `${c.bucket}/${prefix}/plain`,
  };
}

/** Store requests by op from `homefs status --metrics` (the homefs_store_request_seconds histogram's counts). */
export function storeRequestCounts(metrics: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of metrics.split('\n')) {
    const m = /^homefs_store_request_seconds_count\{(?:[^}]*,)?op="([^"]+)"[^}]*\}\s+([0-9.eE+-]+)$/.exec(line.trim());
    if (m?.[1] !== undefined) out[m[1]] = (out[m[1]] ?? 0) + Number(m[2]);
  }
  return out;
}

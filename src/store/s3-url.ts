/**
 * `s3://` URLs (their grammar is documented in s3.ts): parsing into an S3Location and printing back. No
 * AWS SDK here, so that the store without the SDK (s3lean.ts) can use it without loading the SDK.
 */
import { defaults } from '../config.js';
import { UsageError } from '../util/errors.js';

export interface S3Location {
  bucket: string;
  /** Key prefix without leading or trailing slash; '' for the bucket root. */
  prefix: string;
  endpoint?: string;
  region?: string;
  pathStyle: boolean;
  profile?: string;
  parallelism: number;
}

const OPTIONS = new Set(['endpoint', 'region', 'pathStyle', 'profile', 'parallelism']);
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/;

/** Parses and validates an `s3://` URL; every problem is a one-line UsageError (exit code 2). */
export function parseS3Url(url: URL, env: NodeJS.ProcessEnv = process.env): S3Location {
  const shown = `s3://${url.host}${url.pathname}`;
  if (url.protocol !== 's3:') throw new UsageError(`not an s3:// URL: ${shown}`);
  if (url.username || url.password) {
    throw new UsageError(`store URL ${shown}: credentials do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE`);
  }
  const bucket = url.hostname;
  if (!BUCKET.test(bucket)) throw new UsageError(`store URL ${shown}: '${bucket}' is not a valid bucket name`);
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
  if (prefix && prefix.split('/').some((c) => c === '' || c === '.' || c === '..')) {
    throw new UsageError(`store URL ${shown}: invalid key prefix '${prefix}'`);
  }
  for (const k of url.searchParams.keys()) {
    if (!OPTIONS.has(k)) throw new UsageError(`store URL ${shown}: unknown option '${k}' (known: ${[...OPTIONS].join(', ')})`);
  }
  const q = (k: string): string | undefined => url.searchParams.get(k) ?? undefined;
  const endpoint = q('endpoint');
  if (endpoint !== undefined) {
    let e: URL;
    try {
      e = new URL(endpoint);
    } catch {
      throw new UsageError(`store URL ${shown}: endpoint '${endpoint}' is not a URL (expected http(s)://host[:port])`);
    }
    if (e.protocol !== 'http:' && e.protocol !== 'https:') throw new UsageError(`store URL ${shown}: endpoint must be http:// or https://`);
  }
  const pathStyleRaw = q('pathStyle');
  if (pathStyleRaw !== undefined && !['true', 'false', '1', '0'].includes(pathStyleRaw)) {
    throw new UsageError(`store URL ${shown}: pathStyle must be true or false`);
  }
  const pathStyle = pathStyleRaw === undefined ? endpoint !== undefined : pathStyleRaw === 'true' || pathStyleRaw === '1';
  const parRaw = q('parallelism');
  const parallelism = parRaw === undefined ? defaults.storeParallelism : Number(parRaw);
  if (!Number.isInteger(parallelism) || parallelism < 1 || parallelism > 1024) {
    throw new UsageError(`store URL ${shown}: parallelism must be an integer from 1 to 1024`);
  }
  let region = q('region');
  if (region === undefined && endpoint !== undefined && !env.AWS_REGION && !env.AWS_DEFAULT_REGION) region = 'us-east-1';
  const loc: S3Location = { bucket, prefix, pathStyle, parallelism };
  if (endpoint !== undefined) loc.endpoint = endpoint;
  if (region !== undefined) loc.region = region;
  const profile = q('profile');
  if (profile !== undefined) loc.profile = profile;
  return loc;
}

/** The URL of a location, without credentials (none are ever in it). */
export function formatS3Url(loc: S3Location): string {
  const params = new URLSearchParams();
  if (loc.endpoint) params.set('endpoint', loc.endpoint);
  if (loc.region) params.set('region', loc.region);
  if (loc.endpoint && !loc.pathStyle) params.set('pathStyle', 'false');
  if (!loc.endpoint && loc.pathStyle) params.set('pathStyle', 'true');
  if (loc.profile) params.set('profile', loc.profile);
  const qs = params.toString();
  return `s3://${loc.bucket}${loc.prefix ? `/${loc.prefix}` : ''}${qs ? `?${decodeURIComponent(qs)}` : ''}`;
}

/**
 * Maps what @aws-sdk/client-s3 throws onto homefs errors, in one place:
 *   - throttling (429, 503 SlowDown), 5xx, RequestTimeout, AWS's 409 ConditionalRequestConflict (a
 *     concurrent conditional write: AWS says to retry) and network failures → TransientStoreError (retried);
 *   - unknown bucket, refused or missing credentials, missing region, unresolvable host → one-line UserErrors
 *     with the "store unreachable" exit code (3);
 *   - any other 4xx → a one-line UserError naming the key and the service's error code (never retried).
 * Missing keys and failed preconditions are not errors for the callers in s3.ts: see isMissing and
 * isPreconditionFailed. Both S3 stores (s3.ts, s3lean.ts) answer `has()` through presentKeys, which
 * settles what a HEAD's 404 means.
 */
import { StoreUnavailableError, UserError, errorMessage } from '../util/errors.js';
import { ExitCode } from '../util/exit-codes.js';
import { mapLimit } from '../util/concurrency.js';
import { TransientStoreError, isTransientCode } from './transient.js';

interface SdkErrorShape {
  name?: string;
  code?: unknown;
  message?: string;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

function shape(e: unknown): SdkErrorShape {
  return typeof e === 'object' && e !== null ? (e as SdkErrorShape) : {};
}

export function httpStatus(e: unknown): number | undefined {
  return shape(e).$metadata?.httpStatusCode;
}

/** 404 for a key: HeadObject says `NotFound` (no body), GetObject `NoSuchKey`. Not for a missing bucket. */
export function isMissing(e: unknown): boolean {
  const s = shape(e);
  if (s.name === 'NoSuchBucket') return false;
  return s.name === 'NoSuchKey' || s.name === 'NotFound' || httpStatus(e) === 404;
}

/**
 * `has()` of an S3 store: one `head` a key, `parallelism` at once, answering true (found) or false (404),
 * else throwing. A HEAD answer has no body, so a 404 cannot tell a missing key from a missing bucket: after
 * any miss, `bucketExists` decides (it throws when the bucket is missing).
 */
export async function presentKeys(keys: readonly string[], parallelism: number, head: (key: string) => Promise<boolean>, bucketExists: () => Promise<void>): Promise<Set<string>> {
  const found = new Set<string>();
  let missed = false;
  await mapLimit(keys, parallelism, async (key) => {
    if (await head(key)) found.add(key);
    else missed = true;
  });
  if (missed) await bucketExists();
  return found;
}

/** `If-None-Match: *` found an existing object. */
export function isPreconditionFailed(e: unknown): boolean {
  return httpStatus(e) === 412 || shape(e).name === 'PreconditionFailed';
}

const THROTTLING = new Set(['SlowDown', 'Throttling', 'ThrottlingException', 'TooManyRequestsException', 'RequestThrottled', 'RequestLimitExceeded']);
const TRANSIENT_NAMES = new Set(['RequestTimeout', 'RequestTimeoutException', 'InternalError', 'ServiceUnavailable', 'ConditionalRequestConflict', 'TimeoutError']);
const BAD_CREDENTIALS = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'InvalidToken', 'ExpiredToken', 'TokenRefreshRequired']);

/**
 * The error to throw for a failed request to `bucket` of store `url`. `key` is the object involved, if any
 * (a 404 without a key comes from HeadBucket or a listing: the bucket is missing).
 */
export function classifyS3Error(e: unknown, url: string, bucket: string, key?: string): Error {
  const s = shape(e);
  const status = httpStatus(e);
  const name = s.name ?? 'Error';
  const what = key ? ` (${key})` : '';

  if (name === 'CredentialsProviderError') {
    return new UserError(`store ${url}: no S3 credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE`, ExitCode.storeUnreachable);
  }
  if (/region is missing/i.test(s.message ?? '')) {
    return new UserError(`store ${url}: no S3 region; add ?region=... to the URL or set AWS_REGION`, ExitCode.storeUnreachable);
  }
  if (status === 429 || status === 503 || (status !== undefined && status >= 500) || THROTTLING.has(name) || TRANSIENT_NAMES.has(name)) {
    const throttled = status === 429 || status === 503 || THROTTLING.has(name);
    return new TransientStoreError(url, `${name}${status ? ` (HTTP ${status})` : ''}${what}`, throttled);
  }
  if (name === 'NoSuchBucket' || (status === 404 && key === undefined)) {
    return new UserError(`store ${url}: bucket '${bucket}' does not exist (create it first, or fix the URL)`, ExitCode.storeUnreachable);
  }
  if (BAD_CREDENTIALS.has(name)) {
    return new UserError(`store ${url} refused the credentials (${name}); check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the profile`, ExitCode.storeUnreachable);
  }
  if (status === 403) {
    // HEAD answers carry no error code, so a wrong secret and a missing permission look the same here
    return new UserError(`store ${url}: access denied (HTTP 403${name === 'Unknown' || name === 'Forbidden' ? '' : ` ${name}`})${what}; check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the profile) and that they may read and write bucket '${bucket}'`, ExitCode.storeUnreachable);
  }
  if (status !== undefined && status >= 400) {
    return new UserError(`store ${url}: request failed${what}: HTTP ${status} ${name}: ${s.message ?? ''}`.trimEnd(), ExitCode.storeUnreachable);
  }
  if (s.code === 'ENOTFOUND') {
    return new StoreUnavailableError(url, `host not found (${errorMessage(e)})`);
  }
  if (isTransientCode(s.code) || s.$retryable) {
    return new TransientStoreError(url, errorMessage(e) || String(s.code ?? name));
  }
  return e instanceof Error ? e : new Error(String(e));
}

/**
 * The S3 store's pure parts, no server needed: `s3://` URL parsing and printing, and the mapping of SDK
 * failures onto retried, user and not-found errors.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatS3Url, parseS3Url } from '../src/store/s3.js';
import { classifyS3Error, isMissing, isPreconditionFailed } from '../src/store/s3-errors.js';
import { TransientStoreError, isTransient } from '../src/store/transient.js';
import { StoreUnavailableError, UserError } from '../src/util/errors.js';

const parse = (u: string, env: NodeJS.ProcessEnv = {}) => parseS3Url(new URL(u), env);

describe('s3:// URLs', () => {
  it('parses bucket, prefix and every option', () => {
    const loc = parse('s3://my-bucket/homes/prod/?endpoint=http://127.0.0.1:7480&region=eu-west-1&pathStyle=false&profile=ci&parallelism=8');
    assert.deepEqual(loc, {
      bucket: 'my-bucket',
      prefix: 'homes/prod',
      endpoint: 'http://127.0.0.1:7480',
      region: 'eu-west-1',
      pathStyle: false,
      profile: 'ci',
      parallelism: 8,
    });
  });

  it('defaults: AWS needs no options; an endpoint implies path style and, without AWS_REGION, us-east-1', () => {
    const aws = parse('s3://bkt');
    assert.equal(aws.prefix, '');
    assert.equal(aws.pathStyle, false);
    assert.equal(aws.region, undefined);
    assert.equal(aws.endpoint, undefined);
    assert.equal(aws.parallelism, 64);
    const ceph = parse('s3://bkt/p?endpoint=https://rgw.example:8443');
    assert.equal(ceph.pathStyle, true);
    assert.equal(ceph.region, 'us-east-1');
    assert.equal(parse('s3://bkt/p?endpoint=https://rgw.example', { AWS_REGION: 'auto' }).region, undefined);
  });

  it('prints a URL without credentials that parses back to the same location', () => {
    for (const u of ['s3://bkt', 's3://bkt/x/y', 's3://bkt/p?endpoint=http://127.0.0.1:9000&region=us-east-1', 's3://bkt?endpoint=https://e.example&region=auto&pathStyle=false', 's3://bkt/p?pathStyle=true&profile=x']) {
      const loc = parse(u);
      assert.deepEqual(parse(formatS3Url(loc)), loc, u);
    }
  });

  it('rejects bad URLs with one clear line', () => {
    const bad: Array<[string, RegExp]> = [
      ['s3://AKIA:secret@b/p', /credentials do not belong in the URL/],
      ['s3://bkt/p?endpoit=http://x', /unknown option 'endpoit'/],
      ['s3://bkt/p?endpoint=ftp://x', /endpoint must be http/],
      ['s3://bkt/p?endpoint=nope', /not a URL/],
      ['s3://bkt/p?pathStyle=yes', /pathStyle must be true or false/],
      ['s3://bkt/p?parallelism=0', /parallelism must be/],
      ['s3://bkt/a/%2F/c', /invalid key prefix/],
      ['s3://bkt/a//c', /invalid key prefix/],
    ];
    for (const [u, re] of bad) {
      assert.throws(() => parse(u), (e: unknown) => e instanceof UserError && re.test(e.message) && !e.message.includes('\n'), u);
    }
  });
});

/** An error shaped like the SDK's ServiceException. */
function sdkError(name: string, status?: number, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name} message`), { name, $metadata: status === undefined ? {} : { httpStatusCode: status } }, extra);
}

describe('S3 error classification', () => {
  const classify = (e: unknown, key?: string) => classifyS3Error(e, 's3://bkt/p', 'bkt', key);

  it('throttling, 5xx, timeouts and network errors are transient', () => {
    for (const e of [
      sdkError('SlowDown', 503),
      sdkError('TooManyRequestsException', 429),
      sdkError('InternalError', 500),
      sdkError('Unknown', 502),
      sdkError('RequestTimeout', 400),
      sdkError('ConditionalRequestConflict', 409),
      sdkError('TimeoutError'),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    ]) {
      const c = classify(e, 'k');
      assert.ok(c instanceof TransientStoreError && isTransient(c), `${(e as Error).name}: ${String(c)}`);
      assert.ok(c instanceof StoreUnavailableError);
    }
  });

  it('other 4xx, bad credentials and a missing bucket are user errors, never transient', () => {
    const cases: Array<[Error, string | undefined, RegExp]> = [
      [sdkError('NoSuchBucket', 404), 'k', /bucket 'bkt' does not exist/],
      [sdkError('NotFound', 404), undefined, /bucket 'bkt' does not exist/],
      [sdkError('InvalidAccessKeyId', 403), 'k', /refused the credentials/],
      [sdkError('SignatureDoesNotMatch', 403), 'k', /refused the credentials/],
      [sdkError('Unknown', 403), undefined, /access denied \(HTTP 403\)/],
      [sdkError('AccessDenied', 403), 'k', /access denied \(HTTP 403 AccessDenied\) \(k\)/],
      [sdkError('EntityTooLarge', 400), 'k', /HTTP 400 EntityTooLarge/],
      [sdkError('CredentialsProviderError'), undefined, /no S3 credentials found/],
      [new Error('Region is missing'), undefined, /no S3 region/],
      [Object.assign(new Error('getaddrinfo ENOTFOUND nope.example'), { code: 'ENOTFOUND' }), 'k', /unreachable: host not found/],
    ];
    for (const [e, key, re] of cases) {
      const c = classify(e, key);
      assert.ok(c instanceof UserError, String(c));
      assert.ok(!isTransient(c), `${e.name} must not be retried`);
      assert.match(c.message, re);
      assert.ok(!c.message.includes('\n'));
    }
  });

  it('recognises missing keys and failed preconditions', () => {
    assert.ok(isMissing(sdkError('NoSuchKey', 404)));
    assert.ok(isMissing(sdkError('NotFound', 404)));
    assert.ok(!isMissing(sdkError('NoSuchBucket', 404)));
    assert.ok(!isMissing(sdkError('AccessDenied', 403)));
    assert.ok(isPreconditionFailed(sdkError('PreconditionFailed', 412)));
    assert.ok(!isPreconditionFailed(sdkError('ConditionalRequestConflict', 409)));
  });

  it('leaves unknown non-HTTP errors (bugs) as they are', () => {
    const bug = new TypeError('x is undefined');
    assert.equal(classify(bug), bug);
  });
});

/**
 * `s3://` backend: a Store in a bucket of any S3-compatible service (AWS S3, Ceph RGW, MinIO, R2), through
 * @aws-sdk/client-s3. One object per key, under an optional key prefix.
 *
 * URL: `s3://<bucket>[/<prefix>][?option=value&...]`, options (docs/store.md has examples per service):
 *   endpoint=<http(s) URL>   the service's endpoint; default AWS (or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL).
 *   region=<name>            signing region; default from AWS_REGION / AWS_DEFAULT_REGION / the profile, else
 *                            us-east-1 when an endpoint is given (Ceph and MinIO accept any region).
 *   pathStyle=true|false     `endpoint/bucket/key` instead of `bucket.endpoint/key`; default true when an
 *                            endpoint is given (self-hosted services rarely have wildcard DNS), false on AWS.
 *   profile=<name>           the AWS shared-config profile for credentials and region (else AWS_PROFILE).
 *   parallelism=<n>          concurrent HEAD requests in `has()`; default `defaults.storeParallelism`.
 * Credentials never go in the URL: they come from the standard AWS chain (AWS_ACCESS_KEY_ID +
 * AWS_SECRET_ACCESS_KEY [+ AWS_SESSION_TOKEN], ~/.aws/credentials and config, SSO, web identity, ECS/EC2
 * roles).
 *
 * Assumptions: the service enforces `If-None-Match: *` on PUT (probe.ts checks it before HEAD moves);
 * `has()` needs s3:ListBucket on AWS, which otherwise answers 403 instead of 404 for a missing key. This
 * class never retries (the SDK's own retries are off): RetryingStore (retry.ts) wraps it, and failures are
 * classified here into NotFoundError, TransientStoreError (retried) and one-line UserErrors (not retried).
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { defaults } from '../config.js';
import { NotFoundError } from '../util/errors.js';
import { checkRange, validateKey } from './file.js';
import { classifyS3Error, httpStatus, isMissing, isPreconditionFailed, presentKeys } from './s3-errors.js';
import type { ObjectInfo, PendingUpload, Store, Uploads } from './store.js';
import { formatS3Url, parseS3Url, type S3Location } from './s3-url.js';

export { formatS3Url, parseS3Url, type S3Location };

/**
 * SDK middleware every request would run for nothing here (docs/decisions/0045-s3-sdk-lean-middleware.md has the measurement): the
 * SDK's logger (no logger is configured), the User-Agent builder and the Lambda recursion-detection
 * header. (The retry middleware stays although retries are off: signing is anchored to it.)
 */
const UNNEEDED_MIDDLEWARE = ['loggerMiddleware', 'getUserAgentMiddleware', 'recursionDetectionMiddleware'];

export class S3Store implements Store {
  readonly url: string;
  protected readonly client: S3Client;
  private readonly keyPrefix: string;
  /** Set once HeadBucket has shown the bucket exists (see `bucketExists`). */
  private bucketChecked: Promise<void> | undefined;
  private readonly pageSize: number;

  constructor(readonly loc: S3Location, opts: { clientConfig?: S3ClientConfig; listPageSize?: number; lean?: boolean } = {}) {
    this.pageSize = Math.min(1000, opts.listPageSize ?? 1000);
    this.url = formatS3Url(loc);
    this.keyPrefix = loc.prefix ? `${loc.prefix}/` : '';
    const config: S3ClientConfig = {
      forcePathStyle: loc.pathStyle,
      // RetryingStore retries with our policy and deadline; SDK retries underneath would multiply them.
      maxAttempts: 1,
      // The SDK's default CRC32 checksum headers and aws-chunked bodies are not understood by every
      // S3-compatible service (older Ceph, MinIO, R2); integrity is checked by hash at a higher level.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // Kept-alive connections, enough for every request a mount or a push keeps in flight at once.
      requestHandler: {
        connectionTimeout: 5_000, requestTimeout: 120_000, throwOnRequestTimeout: true,
        httpAgent: { keepAlive: true, maxSockets: defaults.storeSockets }, httpsAgent: { keepAlive: true, maxSockets: defaults.storeSockets },
      },
      ...opts.clientConfig,
    };
    if (loc.endpoint) config.endpoint = loc.endpoint;
    else config.followRegionRedirects = true;
    if (loc.region) config.region = loc.region;
    if (loc.profile) config.profile = loc.profile;
    this.client = new S3Client(config);
    if (opts.lean ?? true) for (const name of UNNEEDED_MIDDLEWARE) this.client.middlewareStack.remove(name);
  }

  /** The identity requests are signed as: the credentials and region of the client's resolved chain. */
  async identity(): Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string; region: string }> {
    const [c, region] = await Promise.all([this.client.config.credentials(), this.client.config.region()]);
    return { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}), region };
  }

  protected objectKey(key: string): string {
    return this.keyPrefix + validateKey(key);
  }

  protected fail(e: unknown, key?: string): never {
    throw classifyS3Error(e, this.url, this.loc.bucket, key);
  }

  /**
   * A HEAD answer has no body, so its 404 cannot tell a missing key from a missing bucket (every other
   * request names NoSuchBucket). After a 404 in `has()` this asks HeadBucket, once per store: 404 means the
   * bucket is missing (a UserError). A 403 counts as present: credentials scoped to an org's prefix
   * (docs/operations.md) may not be allowed HeadBucket, and a missing bucket would have said 404.
   */
  protected bucketExists(): Promise<void> {
    if (!this.bucketChecked) {
      this.bucketChecked = this.client.send(new HeadBucketCommand({ Bucket: this.loc.bucket })).then(
        () => undefined,
        (e: unknown) => {
          if (httpStatus(e) === 403) return;
          this.bucketChecked = undefined; // ask again next time (after a transient failure)
          this.fail(e);
        },
      );
    }
    return this.bucketChecked;
  }

  has(keys: readonly string[]): Promise<Set<string>> {
    return presentKeys(keys, this.loc.parallelism, async (key) => {
      try {
        await this.client.send(new HeadObjectCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key) }));
        return true;
      } catch (e) {
        if (!isMissing(e)) this.fail(e, key);
        return false;
      }
    }, () => this.bucketExists());
  }

  async get(key: string): Promise<Buffer> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key) }));
      if (!out.Body) throw new Error('response without a body');
      const bytes = await out.Body.transformToByteArray();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (e) {
      if (isMissing(e)) throw new NotFoundError(key);
      this.fail(e, key);
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    checkRange(offset, length);
    if (length === 0) return Buffer.alloc(0);
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key), Range: `bytes=${offset}-${offset + length - 1}` }),
      );
      if (!out.Body) throw new Error('response without a body');
      const bytes = await out.Body.transformToByteArray();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).subarray(0, length);
    } catch (e) {
      if (isMissing(e)) throw new NotFoundError(key);
      // 416: the range starts at or past the end of the object.
      if (httpStatus(e) === 416) return Buffer.alloc(0);
      this.fail(e, key);
    }
  }

  async put(key: string, data: Buffer): Promise<void> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key), Body: data, ContentLength: data.length }));
    } catch (e) {
      this.fail(e, key);
    }
  }

  async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key), Body: data, ContentLength: data.length, IfNoneMatch: '*' }),
      );
      return true;
    } catch (e) {
      if (isPreconditionFailed(e)) return false;
      this.fail(e, key);
    }
  }

  async *list(prefix: string, limit = Infinity): AsyncIterable<ObjectInfo> {
    if (limit <= 0) return;
    let left = limit;
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.loc.bucket,
            Prefix: this.keyPrefix + prefix,
            MaxKeys: Math.min(this.pageSize, left),
            ContinuationToken: token,
          }),
        );
      } catch (e) {
        this.fail(e);
      }
      for (const o of page.Contents ?? []) {
        if (left <= 0) return;
        if (!o.Key || !o.Key.startsWith(this.keyPrefix)) continue;
        left--;
        yield { key: o.Key.slice(this.keyPrefix.length), size: o.Size ?? 0, mtimeMs: o.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token && left > 0);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key) }));
    } catch (e) {
      if (!isMissing(e)) this.fail(e, key);
    }
  }

  /** Multipart uploads (the push pack: pushpack-writer.ts). */
  readonly uploads: Uploads = {
    minPartBytes: 5 * 1024 * 1024,
    start: async (key) => {
      try {
        const out = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key) }));
        if (!out.UploadId) throw new Error('CreateMultipartUpload answered without an UploadId');
        return out.UploadId;
      } catch (e) {
        this.fail(e, key);
      }
    },
    part: async (key, id, n, data) => {
      try {
        const out = await this.client.send(new UploadPartCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key), UploadId: id, PartNumber: n, Body: data, ContentLength: data.length }));
        if (!out.ETag) throw new Error('UploadPart answered without an ETag');
        return out.ETag;
      } catch (e) {
        this.fail(e, key);
      }
    },
    complete: async (key, id, etags) => {
      try {
        await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key), UploadId: id, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }));
      } catch (e) {
        this.fail(e, key);
      }
    },
    abort: async (key, id) => {
      try {
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.loc.bucket, Key: this.objectKey(key), UploadId: id }));
      } catch (e) {
        if (!isMissing(e)) this.fail(e, key);
      }
    },
    list: async (prefix) => {
      const out: PendingUpload[] = [];
      let marker: { KeyMarker?: string; UploadIdMarker?: string } = {};
      for (;;) {
        let page;
        try {
          page = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.loc.bucket, Prefix: this.keyPrefix + prefix, ...marker }));
        } catch (e) {
          this.fail(e);
        }
        for (const u of page.Uploads ?? []) {
          if (u.Key?.startsWith(this.keyPrefix) && u.UploadId) out.push({ key: u.Key.slice(this.keyPrefix.length), id: u.UploadId, startedMs: u.Initiated?.getTime() ?? 0 });
        }
        if (!page.IsTruncated || !page.NextKeyMarker) return out;
        marker = { KeyMarker: page.NextKeyMarker, ...(page.NextUploadIdMarker ? { UploadIdMarker: page.NextUploadIdMarker } : {}) };
      }
    },
  };

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/** The factory openStore() calls for `s3://` URLs. */
export function createS3Store(url: URL): Store {
  return new S3Store(parseS3Url(url));
}

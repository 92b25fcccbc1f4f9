/**
 * The s3:// store without the AWS SDK, for stores with an explicit endpoint (Ceph RGW, MinIO, R2, or AWS
 * given its endpoint): every request (HEAD, GET, ranged GET, PUT, conditional PUT, DELETE, ListObjectsV2,
 * HeadBucket, and multipart uploads) is signed here (AWS Signature V4, node:crypto) and sent over node:http(s) with kept-alive
 * connections. The SDK costs about 1.2 ms of CPU per request on this project's benchmark machine, this
 * about 0.35 ms (docs/decisions/0039-s3-requests-without-the-sdk.md); and loading the SDK costs a
 * mount about a quarter of a second before its first request (docs/decisions/0054-wake-serving-sooner.md).
 *
 * The identity: static credentials from AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY [+ AWS_SESSION_TOKEN]
 * when no profile is named (URL `profile=` or AWS_PROFILE; the SDK's default chain also takes the
 * environment first then), and the region of the URL or AWS_REGION. Any other case (a profile, SSO, web
 * identity, instance roles, a region only in the shared config) loads the SDK, once, and signs as the
 * identity its resolved chain gives, so both paths always sign as the same identity.
 *
 * AWS without an endpoint keeps the SDK for everything (s3.ts), which follows region redirects. A non-2xx
 * answer becomes an error of the SDK's shape (name from the XML `<Code>`, the HTTP status in `$metadata`),
 * so `classifyS3Error` maps both paths onto the same homefs errors; socket errors keep their `code`
 * (transient ones are retried).
 */
import { createHash, createHmac } from 'node:crypto';
import type { Agent as HttpAgent, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { defaults } from '../config.js';
import { http, https } from '../util/node-http.js';
import { NotFoundError, UsageError } from '../util/errors.js';
import { checkRange, validateKey } from './file.js';
import { classifyS3Error, isMissing, presentKeys } from './s3-errors.js';
import { formatS3Url, parseS3Url, type S3Location } from './s3-url.js';
import type { ObjectInfo, PendingUpload, Store, Uploads } from './store.js';

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
/** As the SDK's request handler (s3.ts): a connection attempt and a whole request time out. */
const CONNECT_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 120_000;
/** A GET answer longer than this is assembled as it arrives (`send`). */
const LARGE_BODY = 256 * 1024;

type Method = 'HEAD' | 'GET' | 'PUT' | 'POST' | 'DELETE';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Who signs: credentials and signing region. */
export interface S3Identity {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  region: string;
}

export interface LeanS3Options {
  /** As S3Store's: its `credentials` (static ones) and `region` are used here; the rest if the SDK is loaded. */
  clientConfig?: S3ClientConfig;
  listPageSize?: number;
}

/** An error shaped like the SDK's, for classifyS3Error / isMissing / isPreconditionFailed. */
class S3HttpError extends Error {
  readonly $metadata: { httpStatusCode: number };
  constructor(status: number, body: Buffer) {
    const text = body.subarray(0, 2048).toString('utf8');
    const code = /<Code>([^<]{1,100})<\/Code>/.exec(text)?.[1];
    const message = /<Message>([^<]{0,300})<\/Message>/.exec(text)?.[1] ?? '';
    super(message || `HTTP ${status}`);
    this.name = code ?? (status === 404 ? 'NotFound' : status === 403 ? 'Forbidden' : status === 412 ? 'PreconditionFailed' : 'Unknown');
    this.$metadata = { httpStatusCode: status };
  }
}

/** RFC 3986 encoding (S3's canonical form): everything but unreserved characters is %-encoded. */
function encode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The encoding of a key, '/' kept: S3's canonical URI (and the request path). */
function encodeKey(key: string): string {
  return encode(key).replace(/%2F/g, '/');
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** The text of an XML element's content, entities decoded. */
function xmlText(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) =>
    e.startsWith('#x') ? String.fromCodePoint(parseInt(e.slice(2), 16)) : e.startsWith('#') ? String.fromCodePoint(Number(e.slice(1))) : ENTITIES[e] ?? m);
}

function element(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return m?.[1] === undefined ? undefined : xmlText(m[1]);
}

/**
 * The identity when it needs no SDK: static credentials (the options', else the environment's when no
 * profile is named) and a known region. undefined: ask the SDK.
 */
export function staticIdentity(loc: S3Location, opts: LeanS3Options, env: NodeJS.ProcessEnv = process.env): S3Identity | undefined {
  const region = typeof opts.clientConfig?.region === 'string' ? opts.clientConfig.region : loc.region ?? env.AWS_REGION;
  if (!region) return undefined;
  const given = opts.clientConfig?.credentials;
  if (given !== undefined) {
    if (typeof given !== 'object' || typeof given.accessKeyId !== 'string') return undefined;
    return { accessKeyId: given.accessKeyId, secretAccessKey: given.secretAccessKey, ...(given.sessionToken ? { sessionToken: given.sessionToken } : {}), region };
  }
  if (loc.profile || env.AWS_PROFILE || !env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY) return undefined;
  return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}), region };
}

export class LeanS3Store implements Store {
  readonly url: string;
  private readonly keyPrefix: string;
  private readonly pageSize: number;
  private readonly endpoint: URL;
  /** The path of the bucket: `<endpoint path>/<bucket>` path-style, `<endpoint path>` virtual-hosted. */
  private readonly bucketPath: string;
  private readonly agent: HttpAgent;
  private readonly https: boolean;
  private readonly fixed: S3Identity | undefined;
  /** The SDK's resolved chain, loaded on first use when the identity is not static. */
  private sdk: Promise<{ identity(): Promise<S3Identity>; close(): Promise<void> }> | undefined;
  /** The derived signing key of one day (it depends only on the date, the region and the secret). */
  private signing: { day: string; region: string; secret: string; key: Buffer } | null = null;
  /** Set once HeadBucket has shown the bucket exists (see `bucketExists`). */
  private bucketChecked: Promise<void> | undefined;

  constructor(readonly loc: S3Location & { endpoint: string }, private readonly opts: LeanS3Options = {}) {
    this.url = formatS3Url(loc);
    this.keyPrefix = loc.prefix ? `${loc.prefix}/` : '';
    this.pageSize = Math.min(1000, opts.listPageSize ?? 1000);
    const e = new URL(loc.endpoint);
    if (!loc.pathStyle) e.hostname = `${loc.bucket}.${e.hostname}`;
    this.endpoint = e;
    const base = e.pathname.replace(/\/+$/, '');
    this.bucketPath = loc.pathStyle ? `${base}/${encode(loc.bucket)}` : base;
    this.https = e.protocol === 'https:';
    const agentOpts = { keepAlive: true, maxSockets: defaults.storeSockets, timeout: REQUEST_TIMEOUT_MS };
    this.agent = this.https ? new (https().Agent)(agentOpts) : new http.Agent(agentOpts);
    this.fixed = staticIdentity(loc, opts);
  }

  /** Whether requests are signed without loading the SDK (static credentials and a known region). */
  get sdkFree(): boolean {
    return this.fixed !== undefined;
  }

  private identity(): Promise<S3Identity> {
    if (this.fixed) return Promise.resolve(this.fixed);
    this.sdk ??= import('./s3.js').then((m) => new m.S3Store(this.loc, this.opts.clientConfig ? { clientConfig: this.opts.clientConfig } : {}));
    return this.sdk.then((s) => s.identity());
  }

  private objectKey(key: string): string {
    return this.keyPrefix + validateKey(key);
  }

  private fail(e: unknown, key?: string): never {
    throw classifyS3Error(e, this.url, this.loc.bucket, key);
  }

  private signingKey(day: string, region: string, secret: string): Buffer {
    if (this.signing?.day !== day || this.signing.region !== region || this.signing.secret !== secret) {
      const h = (k: string | Buffer, s: string): Buffer => createHmac('sha256', k).update(s).digest();
      this.signing = { day, region, secret, key: h(h(h(h(`AWS4${secret}`, day), region), 's3'), 'aws4_request') };
    }
    return this.signing.key;
  }

  /** Sends one signed request; resolves with any HTTP answer, rejects on socket errors. */
  private async send(method: Method, path: string, query: Record<string, string> = {}, extra: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
    const id = await this.identity();
    const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
    const day = amzDate.slice(0, 8);
    // Over https the payload needs no hash of its own (TLS protects it, and every object is verified by its
    // BLAKE3 when read); over plain http it is signed, as the SDK does.
    const payload = body === undefined ? EMPTY_SHA256 : this.https ? 'UNSIGNED-PAYLOAD' : createHash('sha256').update(body).digest('hex');
    const signed: Record<string, string> = { host: this.endpoint.host, 'x-amz-content-sha256': payload, 'x-amz-date': amzDate, ...extra };
    if (id.sessionToken) signed['x-amz-security-token'] = id.sessionToken;
    const names = Object.keys(signed).sort();
    const qs = Object.keys(query).sort().map((k) => `${encode(k)}=${encode(query[k] ?? '')}`).join('&');
    const canonical = `${method}\n${path}\n${qs}\n${names.map((n) => `${n}:${signed[n]}\n`).join('')}\n${names.join(';')}\n${payload}`;
    const scope = `${day}/${id.region}/s3/aws4_request`;
    const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${createHash('sha256').update(canonical).digest('hex')}`;
    const signature = createHmac('sha256', this.signingKey(day, id.region, id.secretAccessKey)).update(toSign).digest('hex');
    const headers: OutgoingHttpHeaders = { ...signed, authorization: `AWS4-HMAC-SHA256 Credential=${id.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}` };
    if (body !== undefined) headers['content-length'] = body.length;
    const request = this.https ? https().request : http.request;
    const target = qs ? `${path}?${qs}` : path;
    return new Promise<Answer>((resolve, reject) => {
      const req = request({ protocol: this.endpoint.protocol, hostname: this.endpoint.hostname, port: this.endpoint.port, method, path: target, headers, agent: this.agent }, (res) => {
        const length = Number(res.headers['content-length']);
        if (method === 'GET' && Number.isSafeInteger(length) && length > LARGE_BODY) {
          // A large body is copied into its buffer as it arrives, so each socket read's buffer is free at
          // once (and reused by the next read) instead of all of them living until a concat at the end.
          const body = Buffer.allocUnsafe(length);
          let at = 0;
          res.on('data', (c: Buffer) => {
            if (at + c.length <= length) c.copy(body, at);
            at += c.length;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: at === length ? body : body.subarray(0, Math.min(at, length)) }));
        } else {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) }));
        }
        res.on('error', reject);
      });
      const connect = setTimeout(() => req.destroy(Object.assign(new Error('connection timed out'), { code: 'ETIMEDOUT' })), CONNECT_TIMEOUT_MS);
      req.on('socket', (s) => (s.connecting ? s.once('connect', () => clearTimeout(connect)) : clearTimeout(connect)));
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(Object.assign(new Error('request timed out'), { code: 'ETIMEDOUT' })));
      req.on('error', (e) => {
        clearTimeout(connect);
        reject(e);
      });
      req.on('close', () => clearTimeout(connect));
      req.end(body);
    });
  }

  /**
   * `send` for object `key` (or the bucket itself when undefined), with socket errors and unexpected answers
   * classified (s3-errors.ts); `ok` answers returned. A missing key is NotFoundError, except for a PUT.
   */
  private async ask(ok: (status: number) => boolean, method: Method, key: string | undefined, extra?: Record<string, string>, body?: Buffer, query?: Record<string, string>): Promise<Answer> {
    let a: Answer;
    try {
      a = await this.send(method, key === undefined ? this.bucketPath || '/' : `${this.bucketPath}/${encodeKey(this.objectKey(key))}`, query, extra, body);
    } catch (e) {
      this.fail(e, key);
    }
    if (ok(a.status)) return a;
    const e = new S3HttpError(a.status, a.body);
    if (key !== undefined && isMissing(e) && method !== 'PUT') throw new NotFoundError(key);
    this.fail(e, key);
  }

  /**
   * A HEAD answer has no body, so its 404 cannot tell a missing key from a missing bucket. After a 404 in
   * `has()` this asks HeadBucket, once per store: 404 means the bucket is missing (a UserError). A 403 counts
   * as present: credentials scoped to an org's prefix may not be allowed HeadBucket (as in s3.ts).
   */
  private bucketExists(): Promise<void> {
    this.bucketChecked ??= this.ask((s) => s === 200 || s === 403, 'HEAD', undefined).then(
      () => undefined,
      (e: unknown) => {
        this.bucketChecked = undefined; // ask again next time (after a transient failure)
        throw e;
      },
    );
    return this.bucketChecked;
  }

  has(keys: readonly string[]): Promise<Set<string>> {
    return presentKeys(keys, this.loc.parallelism, async (key) => {
      try {
        await this.ask((s) => s === 200, 'HEAD', key);
        return true;
      } catch (e) {
        if (!(e instanceof NotFoundError)) throw e;
        return false;
      }
    }, () => this.bucketExists());
  }

  async get(key: string): Promise<Buffer> {
    return (await this.ask((s) => s === 200, 'GET', key)).body;
  }

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    checkRange(offset, length);
    if (length === 0) return Buffer.alloc(0);
    const a = await this.ask((s) => s === 200 || s === 206 || s === 416, 'GET', key, { range: `bytes=${offset}-${offset + length - 1}` });
    if (a.status === 416) return Buffer.alloc(0); // the range starts at or past the end of the object
    // A 200 is the whole object (a service that ignores Range): cut the range out of it.
    return a.status === 200 ? a.body.subarray(offset, offset + length) : a.body.subarray(0, length);
  }

  async put(key: string, data: Buffer): Promise<void> {
    await this.ask((s) => s === 200, 'PUT', key, {}, data);
  }

  async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    const a = await this.ask((s) => s === 200 || s === 412, 'PUT', key, { 'if-none-match': '*' }, data);
    return a.status === 200;
  }

  async delete(key: string): Promise<void> {
    try {
      await this.ask((s) => s === 200 || s === 204, 'DELETE', key);
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
    }
  }

  /** Multipart uploads (the push pack: pushpack-writer.ts). */
  readonly uploads: Uploads = {
    minPartBytes: 5 * 1024 * 1024,
    start: async (key) => {
      const xml = (await this.ask((s) => s === 200, 'POST', key, {}, undefined, { uploads: '' })).body.toString('utf8');
      const id = element(xml, 'UploadId');
      if (!id) this.fail(new S3HttpError(502, Buffer.from('<Code>InvalidResponse</Code><Message>CreateMultipartUpload answered without an UploadId</Message>')), key);
      return id;
    },
    part: async (key, id, n, data) => {
      const a = await this.ask((s) => s === 200, 'PUT', key, {}, data, { partNumber: String(n), uploadId: id });
      const etag = a.headers.etag;
      if (typeof etag !== 'string' || !etag) this.fail(new S3HttpError(502, Buffer.from('<Code>InvalidResponse</Code><Message>UploadPart answered without an ETag</Message>')), key);
      return etag;
    },
    complete: async (key, id, etags) => {
      const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
      const body = Buffer.from(`<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${esc(e)}</ETag></Part>`).join('')}</CompleteMultipartUpload>`);
      const a = await this.ask((s) => s === 200, 'POST', key, { 'content-type': 'application/xml' }, body, { uploadId: id });
      // S3 may answer 200 and then report a failure in the body.
      if (/<Error>/.test(a.body.subarray(0, 4096).toString('utf8'))) this.fail(new S3HttpError(500, a.body), key);
    },
    abort: async (key, id) => {
      try {
        await this.ask((s) => s === 200 || s === 204, 'DELETE', key, {}, undefined, { uploadId: id });
      } catch (e) {
        if (!(e instanceof NotFoundError)) throw e;
      }
    },
    list: async (prefix) => {
      const out: PendingUpload[] = [];
      let marker: { key: string; id: string } | undefined;
      do {
        const query: Record<string, string> = { uploads: '', prefix: this.keyPrefix + prefix };
        if (marker) Object.assign(query, { 'key-marker': marker.key, 'upload-id-marker': marker.id });
        const xml = (await this.ask((s) => s === 200, 'GET', undefined, {}, undefined, query)).body.toString('utf8');
        for (const m of xml.matchAll(/<Upload>([\s\S]*?)<\/Upload>/g)) {
          const u = m[1] ?? '';
          const key = element(u, 'Key');
          const id = element(u, 'UploadId');
          const started = element(u, 'Initiated');
          if (key?.startsWith(this.keyPrefix) && id) out.push({ key: key.slice(this.keyPrefix.length), id, startedMs: started ? Date.parse(started) : 0 });
        }
        const next = { key: element(xml, 'NextKeyMarker') ?? '', id: element(xml, 'NextUploadIdMarker') ?? '' };
        marker = element(xml, 'IsTruncated') === 'true' && next.key ? next : undefined;
      } while (marker);
      return out;
    },
  };

  /** ListObjectsV2, page by page (a 404 names the bucket: classifyS3Error without a key). */
  async *list(prefix: string, limit = Infinity): AsyncIterable<ObjectInfo> {
    if (limit <= 0) return;
    let left = limit;
    let token: string | undefined;
    do {
      const query: Record<string, string> = { 'list-type': '2', prefix: this.keyPrefix + prefix, 'max-keys': String(Math.min(this.pageSize, left)) };
      if (token !== undefined) query['continuation-token'] = token;
      const xml = (await this.ask((s) => s === 200, 'GET', undefined, {}, undefined, query)).body.toString('utf8');
      for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        const c = m[1] ?? '';
        const key = element(c, 'Key');
        if (left <= 0) return;
        if (!key || !key.startsWith(this.keyPrefix)) continue;
        left--;
        const modified = element(c, 'LastModified');
        yield { key: key.slice(this.keyPrefix.length), size: Number(element(c, 'Size') ?? 0), mtimeMs: modified ? Date.parse(modified) : 0 };
      }
      token = element(xml, 'IsTruncated') === 'true' ? element(xml, 'NextContinuationToken') : undefined;
    } while (token && left > 0);
  }

  async close(): Promise<void> {
    this.agent.destroy();
    if (this.sdk) await (await this.sdk).close();
  }
}

/** The lean store of an `s3://` URL with an endpoint (a UsageError without one: that needs s3.ts). */
export function createS3Store(url: URL): LeanS3Store {
  const loc = parseS3Url(url);
  if (loc.endpoint === undefined) throw new UsageError(`store URL ${formatS3Url(loc)}: the store without the SDK needs an endpoint`);
  return new LeanS3Store({ ...loc, endpoint: loc.endpoint });
}

/** The factory openStore() calls for `s3://` URLs: without the SDK when an endpoint is given. */
export async function openS3Store(url: URL): Promise<Store> {
  const loc = parseS3Url(url);
  if (loc.endpoint !== undefined) return new LeanS3Store({ ...loc, endpoint: loc.endpoint });
  const { S3Store } = await import('./s3.js');
  return new S3Store(loc);
}

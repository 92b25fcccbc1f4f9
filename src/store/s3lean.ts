/**
 * The s3:// store's object requests (HEAD, GET, ranged GET, PUT, conditional PUT) without the AWS SDK's
 * middleware stack: each is signed here (AWS Signature V4, node:crypto) and sent over node:http(s) with
 * kept-alive connections. The SDK costs about 1.2 ms of CPU per request on this project's benchmark machine,
 * this about 0.35 ms (docs/decisions.md, "push and pull: requests without the SDK"), and push and pull make
 * one request per object. Listing, deleting and HeadBucket stay on the SDK (S3Store), as do credentials
 * and region: they come from the SDK client's resolved chain, so both paths sign as the same identity.
 *
 * Only for stores with an explicit endpoint (Ceph RGW, MinIO, R2, or AWS given its endpoint): AWS without
 * one keeps the SDK for everything, which follows region redirects. A non-2xx answer becomes an error of
 * the SDK's shape (name from the XML `<Code>`, the HTTP status in `$metadata`), so `classifyS3Error` maps
 * both paths onto the same homefs errors; socket errors keep their `code` (transient ones are retried).
 */
import { createHash, createHmac } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { defaults } from '../config.js';
import { mapLimit } from '../util/concurrency.js';
import { NotFoundError } from '../util/errors.js';
import { checkRange } from './file.js';
import { isMissing } from './s3-errors.js';
import { S3Store, parseS3Url, type S3Location } from './s3.js';
import type { Store } from './store.js';

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
/** As the SDK's request handler (s3.ts): a connection attempt and a whole request time out. */
const CONNECT_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 120_000;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
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

/** RFC 3986 encoding of a key, '/' kept: S3's canonical URI (and the request path). */
function encodeKey(key: string): string {
  return encodeURIComponent(key).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%2F/g, '/');
}

export class LeanS3Store extends S3Store {
  private readonly endpoint: URL;
  private readonly agent: HttpAgent;
  private readonly https: boolean;
  /** The derived signing key of one day (it depends only on the date, the region and the secret). */
  private signing: { day: string; secret: string; key: Buffer } | null = null;

  constructor(loc: S3Location & { endpoint: string }, opts: ConstructorParameters<typeof S3Store>[1] = {}) {
    super(loc, opts);
    const e = new URL(loc.endpoint);
    if (!loc.pathStyle) e.hostname = `${loc.bucket}.${e.hostname}`;
    this.endpoint = e;
    this.https = e.protocol === 'https:';
    const agentOpts = { keepAlive: true, maxSockets: defaults.storeSockets, timeout: REQUEST_TIMEOUT_MS };
    this.agent = this.https ? new HttpsAgent(agentOpts) : new HttpAgent(agentOpts);
  }

  private path(key: string): string {
    const base = this.endpoint.pathname.replace(/\/+$/, '');
    return `${base}${this.loc.pathStyle ? `/${this.loc.bucket}` : ''}/${encodeKey(this.objectKey(key))}`;
  }

  private signingKey(day: string, region: string, secret: string): Buffer {
    if (this.signing?.day !== day || this.signing.secret !== secret) {
      const h = (k: string | Buffer, s: string): Buffer => createHmac('sha256', k).update(s).digest();
      this.signing = { day, secret, key: h(h(h(h(`AWS4${secret}`, day), region), 's3'), 'aws4_request') };
    }
    return this.signing.key;
  }

  /** Sends one signed request for object `key`; resolves with any HTTP answer, rejects on socket errors. */
  private async send(method: 'HEAD' | 'GET' | 'PUT', key: string, extra: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
    const path = this.path(key);
    const [creds, region] = await Promise.all([this.client.config.credentials(), this.client.config.region()]);
    const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
    const day = amzDate.slice(0, 8);
    // Over https the payload needs no hash of its own (TLS protects it, and every object is verified by its
    // BLAKE3 when read); over plain http it is signed, as the SDK does.
    const payload = body === undefined ? EMPTY_SHA256 : this.https ? 'UNSIGNED-PAYLOAD' : createHash('sha256').update(body).digest('hex');
    const signed: Record<string, string> = { host: this.endpoint.host, 'x-amz-content-sha256': payload, 'x-amz-date': amzDate, ...extra };
    if (creds.sessionToken) signed['x-amz-security-token'] = creds.sessionToken;
    const names = Object.keys(signed).sort();
    const canonical = `${method}\n${path}\n\n${names.map((n) => `${n}:${signed[n]}\n`).join('')}\n${names.join(';')}\n${payload}`;
    const scope = `${day}/${region}/s3/aws4_request`;
    const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${createHash('sha256').update(canonical).digest('hex')}`;
    const signature = createHmac('sha256', this.signingKey(day, region, creds.secretAccessKey)).update(toSign).digest('hex');
    const headers: OutgoingHttpHeaders = { ...signed, authorization: `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}` };
    if (body !== undefined) headers['content-length'] = body.length;
    const request = this.https ? httpsRequest : httpRequest;
    return new Promise<Answer>((resolve, reject) => {
      const req = request({ protocol: this.endpoint.protocol, hostname: this.endpoint.hostname, port: this.endpoint.port, method, path, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) }));
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

  /** `send`, with socket errors and unexpected answers classified (s3-errors.ts); `ok` answers returned. */
  private async ask(ok: (status: number) => boolean, method: 'HEAD' | 'GET' | 'PUT', key: string, extra?: Record<string, string>, body?: Buffer): Promise<Answer> {
    let a: Answer;
    try {
      a = await this.send(method, key, extra, body);
    } catch (e) {
      this.fail(e, key);
    }
    if (ok(a.status)) return a;
    const e = new S3HttpError(a.status, a.body);
    if (isMissing(e) && method !== 'PUT') throw new NotFoundError(key);
    this.fail(e, key);
  }

  override async has(keys: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    let missed = false;
    await mapLimit(keys, this.loc.parallelism, async (key) => {
      try {
        await this.ask((s) => s === 200, 'HEAD', key);
        found.add(key);
      } catch (e) {
        if (!(e instanceof NotFoundError)) throw e;
        missed = true;
      }
    });
    if (missed) await this.bucketExists();
    return found;
  }

  override async get(key: string): Promise<Buffer> {
    return (await this.ask((s) => s === 200, 'GET', key)).body;
  }

  override async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    checkRange(offset, length);
    if (length === 0) return Buffer.alloc(0);
    const a = await this.ask((s) => s === 200 || s === 206 || s === 416, 'GET', key, { range: `bytes=${offset}-${offset + length - 1}` });
    if (a.status === 416) return Buffer.alloc(0); // the range starts at or past the end of the object
    // A 200 is the whole object (a service that ignores Range): cut the range out of it.
    return a.status === 200 ? a.body.subarray(offset, offset + length) : a.body.subarray(0, length);
  }

  override async put(key: string, data: Buffer): Promise<void> {
    await this.ask((s) => s === 200, 'PUT', key, {}, data);
  }

  override async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    const a = await this.ask((s) => s === 200 || s === 412, 'PUT', key, { 'if-none-match': '*' }, data);
    return a.status === 200;
  }

  override async close(): Promise<void> {
    this.agent.destroy();
    await super.close();
  }
}

/** The factory openStore() calls for `s3://` URLs: requests without the SDK when an endpoint is given. */
export function createS3Store(url: URL): Store {
  const loc = parseS3Url(url);
  return loc.endpoint !== undefined ? new LeanS3Store({ ...loc, endpoint: loc.endpoint }) : new S3Store(loc);
}

/**
 * Opens a Store from a URL: `file:///abs/path` (or an absolute path), `s3://bucket/prefix?options`, or
 * `memory://` (tests). Remote stores are wrapped in the retrying store. Bad URLs are one-line UsageErrors;
 * a missing file store is created only when the caller asks for it (`create`).
 */
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError, errorMessage } from '../util/errors.js';
import { FileStore } from './file.js';
import { MemoryStore } from './memory.js';
import type { RetryOptions } from './retry.js';
import type { Store } from './store.js';

export interface OpenOptions {
  /** The caller will advance HEADs: check that the store enforces create-if-absent. */
  write?: boolean;
  /** Called before each retry of a remote store's request (the daemon logs and counts them). */
  onRetry?: RetryOptions['onRetry'];
  /** A missing file store directory may be created (push, a read-write mount); otherwise it is an error. */
  create?: boolean;
  /**
   * With `write`: return at once instead of after the create-if-absent probe; the probe runs alongside, and
   * the store's writes wait for it (GatedStore, gated.ts). A mount reads meanwhile.
   */
  overlapProbe?: boolean;
}

/** The path of a `file:` URL; only an absolute path (`file:///abs/path`) is accepted. */
function filePath(url: string, parsed: URL): string {
  if (parsed.host !== '' && parsed.host !== 'localhost') {
    throw new UsageError(`invalid store URL '${url}': a file URL needs an absolute path after three slashes, like file:///var/lib/homefs/store ('${parsed.host}' would be a host name)`);
  }
  try {
    return fileURLToPath(parsed);
  } catch (e) {
    throw new UsageError(`invalid store URL '${url}': ${errorMessage(e)}`);
  }
}

type S3Module = { openS3Store(url: URL): Promise<Store> };
type RetryModule = { RetryingStore: new (inner: Store, opts?: Partial<RetryOptions>) => Store };
type ProbeModule = { startProbe(store: Store): { confirmed: Promise<void>; settled: Promise<void> } };
type GatedModule = { GatedStore: new (inner: Store, gate: Promise<void>, settled?: Promise<void>) => Store };

export async function openStore(url: string, opts: OpenOptions = {}): Promise<Store> {
  if (!url) throw new UsageError('no store given: pass --store URL or set HOMEFS_STORE');
  if (isAbsolute(url)) return new FileStore(resolve(url)).init(opts.create === true);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`invalid store URL '${url}': expected file:///path or s3://bucket/prefix`);
  }
  switch (parsed.protocol) {
    case 'file:':
      return new FileStore(filePath(url, parsed)).init(opts.create === true);
    case 'memory:':
      return new MemoryStore();
    case 's3:': {
      const s3 = (await import('./s3lean.js' as string)) as S3Module; // without the SDK when an endpoint is given
      const retry = (await import('./retry.js' as string)) as RetryModule;
      const store = new retry.RetryingStore(await s3.openS3Store(parsed), opts.onRetry ? { onRetry: opts.onRetry } : {});
      if (opts.write) {
        const probe = ((await import('./probe.js' as string)) as ProbeModule).startProbe(store);
        if (opts.overlapProbe) return new ((await import('./gated.js' as string)) as GatedModule).GatedStore(store, probe.confirmed, probe.settled);
        await probe.settled;
        await probe.confirmed;
      }
      return store;
    }
    default:
      throw new UsageError(`unsupported store URL '${url}': use file:///path or s3://bucket/prefix`);
  }
}

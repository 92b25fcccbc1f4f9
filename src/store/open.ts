/**
 * Opens a Store from a URL: `file:///abs/path` (or an absolute path), `s3://bucket/prefix?options`, or
 * `memory://` (tests). Remote stores are wrapped in the retrying store. Bad URLs are one-line UserErrors.
 */
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UserError } from '../util/errors.js';
import { FileStore } from './file.js';
import { MemoryStore } from './memory.js';
import type { RetryOptions } from './retry.js';
import type { Store } from './store.js';

export interface OpenOptions {
  /** The caller will advance HEADs: check that the store enforces create-if-absent. */
  write?: boolean;
  /** Called before each retry of a remote store's request (the daemon logs and counts them). */
  onRetry?: RetryOptions['onRetry'];
}

type S3Module = { createS3Store(url: URL): Store };
type RetryModule = { RetryingStore: new (inner: Store, opts?: Partial<RetryOptions>) => Store };
type ProbeModule = { assertCreateIfAbsent(store: Store): Promise<void> };

export async function openStore(url: string, opts: OpenOptions = {}): Promise<Store> {
  if (!url) throw new UserError('no store given: pass --store URL or set HOMEFS_STORE');
  if (isAbsolute(url)) return new FileStore(resolve(url)).init();
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UserError(`invalid store URL '${url}': expected file:///path or s3://bucket/prefix`);
  }
  switch (parsed.protocol) {
    case 'file:':
      return new FileStore(fileURLToPath(parsed)).init();
    case 'memory:':
      return new MemoryStore();
    case 's3:': {
      const s3 = (await import('./s3.js' as string)) as S3Module;
      const retry = (await import('./retry.js' as string)) as RetryModule;
      const store = new retry.RetryingStore(s3.createS3Store(parsed), opts.onRetry ? { onRetry: opts.onRetry } : {});
      if (opts.write) {
        const probe = (await import('./probe.js' as string)) as ProbeModule;
        await probe.assertCreateIfAbsent(store);
      }
      return store;
    }
    default:
      throw new UserError(`unsupported store URL '${url}': use file:///path or s3://bucket/prefix`);
  }
}

/**
 * Which store failures are worth retrying. A backend that knows a failure is transient (throttling, a 5xx,
 * a dropped connection, a timeout) throws `TransientStoreError`; the retrying wrapper (retry.ts) retries
 * exactly those plus raw network errors from code that does not classify its failures, and nothing else:
 * a missing object, a refused credential or a precondition never becomes a success by asking again.
 *
 * `TransientStoreError` is a `StoreUnavailableError`, so when retries run out the user sees one line naming
 * the store and the cause.
 */
import { StoreUnavailableError } from '../util/errors.js';

export class TransientStoreError extends StoreUnavailableError {
  readonly transient = true;
  /** `throttled`: the store asked to slow down (503 SlowDown, 429): every request should back off, not just this one. */
  constructor(url: string, readonly detail: string, readonly throttled = false) {
    super(url, detail);
    this.name = 'TransientStoreError';
  }
}

/** Socket-level failures that say nothing about the request itself; worth another attempt. */
const TRANSIENT_CODES = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'EHOSTUNREACH',
  'ENETUNREACH', 'ENETDOWN', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT',
]);

export function isTransientCode(code: unknown): boolean {
  return typeof code === 'string' && TRANSIENT_CODES.has(code);
}

/** True for a store's request to slow down (retry.ts then pauses every request of the store). */
export function isThrottled(e: unknown): boolean {
  return e instanceof TransientStoreError && (e.throttled || /\bSlowDown\b|HTTP (503|429)/.test(e.detail));
}

/** True for failures a retry may cure. */
export function isTransient(e: unknown): boolean {
  if (e instanceof TransientStoreError) return true;
  if (typeof e !== 'object' || e === null) return false;
  return isTransientCode((e as { code?: unknown }).code);
}

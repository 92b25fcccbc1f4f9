/**
 * Typed errors that cross layers. A `UserError` is a failure the user can act on (bad flag, unknown home,
 * unreachable store, corrupt object); the CLI prints its message as one line and exits with its
 * `exitCode` (util/exit-codes.ts), never a stack trace. Everything else is a bug and is reported with its
 * stack.
 *
 * The store's errors are UserErrors too, because their message is what the user needs (fix the URL, the
 * network, the credentials; restore the object). So `instanceof UserError` says only "print it as one
 * line": code that expects one particular failure catches that class (NotFoundError, FormatError,
 * HeadConflictError), never UserError as a whole, or it would also swallow an unreachable store or a
 * corrupt object. Which store errors may be retried is stated in store/store.ts.
 */
import { ExitCode } from './exit-codes.js';

export class UserError extends Error {
  constructor(message: string, readonly exitCode: number = ExitCode.userError) {
    super(message);
    this.name = 'UserError';
  }
}

/** A malformed command line: an option value of the wrong form, conflicting options. */
export class UsageError extends UserError {
  constructor(message: string) {
    super(message, ExitCode.usage);
    this.name = 'UsageError';
  }
}

/** The object does not exist in the store. */
export class NotFoundError extends UserError {
  constructor(readonly key: string) {
    super(`not found in store: ${key}`, ExitCode.damage);
    this.name = 'NotFoundError';
  }
}

/** An object's bytes do not hash to its key: corruption in the store or in transit. Never served. */
export class CorruptObjectError extends UserError {
  constructor(readonly key: string, readonly path?: string) {
    super(`corrupted object ${key}${path ? ` (${path})` : ''}: its content does not match its hash; run 'homefs verify' and restore it from another copy`, ExitCode.damage);
    this.name = 'CorruptObjectError';
  }
}

/** HEAD moved since this writer read it: another writer won. Nothing was overwritten. */
export class HeadConflictError extends UserError {
  constructor(readonly home: string, readonly expectedGen: number | null, readonly snapshot: string) {
    const from = expectedGen === null || expectedGen < 0 ? 'its empty state' : `generation ${expectedGen}`;
    super(`conflict: HEAD of ${home} moved past ${from} while this snapshot was written; snapshot ${snapshot} is kept in the store (under conflicts/) but HEAD was not changed`);
    this.name = 'HeadConflictError';
  }
}

/** The store could not be reached or kept failing after retries. */
export class StoreUnavailableError extends UserError {
  constructor(readonly url: string, cause: string) {
    super(`store ${url} is unreachable: ${cause}; check the URL, the network and the credentials`, ExitCode.storeUnreachable);
    this.name = 'StoreUnavailableError';
  }
}

/** A malformed or hostile encoded object (tree, snapshot, head). */
export class FormatError extends UserError {
  constructor(what: string, detail: string) {
    super(`invalid ${what}: ${detail}`, ExitCode.damage);
    this.name = 'FormatError';
  }
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

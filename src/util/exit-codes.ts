/**
 * The exit codes of the `homefs` command, one per kind of outcome, so that scripts and supervisors can
 * tell them apart: a bad command line, a request the user can fix, a store that cannot be used (retry or
 * fix the store, not the request), damage found in the store, a push that left files out, and a bug.
 * README.md and `homefs --help` print `EXIT_CODE_HELP`.
 */
export const ExitCode = {
  ok: 0,
  /** The request cannot be done as asked: unknown home, invalid name, a lease held elsewhere, ... */
  userError: 1,
  /** The command line is malformed: unknown command or option, missing argument, bad option value. */
  usage: 2,
  /** The store cannot be used: unreachable, missing, credentials or permissions refused. */
  storeUnreachable: 3,
  /** The store holds damaged or missing objects (verify, or a read that met one). */
  damage: 4,
  /** push finished a snapshot but left out files it could not read (named on stderr). */
  incomplete: 5,
  /** A bug in homefs (EX_SOFTWARE); the message carries a stack trace. */
  internal: 70,
} as const;

export const EXIT_CODE_HELP = [
  'Exit codes:',
  '  0   success',
  '  1   user error: the request cannot be done as asked (unknown home, invalid name, lease held elsewhere)',
  '  2   usage: unknown command or option, missing argument, invalid option value',
  '  3   store unreachable: the store cannot be reached, does not exist, or refused the credentials',
  '  4   damage found: verify (or a read) met missing or corrupted objects',
  '  5   incomplete: push committed a snapshot without the files it could not read (named on stderr)',
  '  70  internal error: a bug in homefs (printed with a stack trace)',
].join('\n');

/**
 * The logger every long-running part of homefs uses: pino, one structured event per line with `org`,
 * `home`, `op`, durations and byte counts as fields. JSON lines by default (daemons, journald, files);
 * on a TTY a compact human format (`12:00:01 INFO  sealed  org=acme home=a op=seal ms=12`), written by
 * the small formatter below rather than pino-pretty, which is not a dependency (one fewer package in the
 * daemon's install; the format is a dozen lines).
 *
 * pino itself is required when the first logger is created, not when this module loads: a command that only
 * checks `--log-level` (the `homefs mount` that spawns the daemon) does not pay for loading it.
 */
import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import type * as Pino from 'pino';
import { UsageError } from './errors.js';

const require = createRequire(import.meta.url);

export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type Level = (typeof LEVELS)[number];

const NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const OMIT = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

export function parseLevel(v: string): Level {
  if ((LEVELS as readonly string[]).includes(v)) return v as Level;
  throw new UsageError(`invalid --log-level '${v}': use one of ${LEVELS.join(', ')}`);
}

function fieldValue(v: unknown): string {
  if (typeof v === 'string') return /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  return JSON.stringify(v) ?? String(v);
}

/** Turns one pino JSON line into the human format; lines that are not JSON pass through unchanged. */
export function prettyLine(line: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const time = typeof o.time === 'number' ? new Date(o.time).toISOString().slice(11, 19) : '--:--:--';
  const level = (NAMES[Number(o.level)] ?? String(o.level)).padEnd(5);
  const fields = Object.entries(o)
    .filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => (k === 'err' && v && typeof v === 'object' && 'message' in v ? `err=${fieldValue((v as { message: unknown }).message)}` : `${k}=${fieldValue(v)}`));
  return `${time} ${level} ${String(o.msg ?? '')}${fields.length ? '  ' + fields.join(' ') : ''}\n`;
}

export interface LoggerOptions {
  level?: string;
  /** Default: pretty when `stream` is a TTY. */
  pretty?: boolean;
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Fields on every line, e.g. { org, home }. */
  base?: Record<string, unknown>;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const stream = opts.stream ?? process.stderr;
  const level = parseLevel(opts.level ?? 'info');
  const pretty = opts.pretty ?? Boolean(stream.isTTY);
  const dest = pretty ? { write: (s: string) => stream.write(prettyLine(s)) } : stream;
  const pino = require('pino') as typeof Pino.pino;
  return pino({ level, base: opts.base ?? {} }, dest);
}

/**
 * Parsing of human-friendly sizes ("10G", "512MiB", "1048576") and durations ("30s", "5m", "24h", "1500ms").
 * Bad input is a UsageError naming the option.
 */
import { UsageError } from './errors.js';

const SIZE: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1000, kib: 1024, m: 1024 ** 2, mb: 1000 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1000 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1000 ** 4, tib: 1024 ** 4 };
const TIME: Record<string, number> = { ms: 1, s: 1000, '': 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseBytes(option: string, v: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(v);
  const mult = m ? SIZE[(m[2] ?? '').toLowerCase()] : undefined;
  if (!m || mult === undefined) throw new UsageError(`invalid ${option} '${v}': expected a size like 1048576, 512M or 10G`);
  return Math.floor(Number(m[1]) * mult);
}

export function parseDuration(option: string, v: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/.exec(v);
  const mult = m ? TIME[m[2] ?? ''] : undefined;
  if (!m || mult === undefined) throw new UsageError(`invalid ${option} '${v}': expected a duration like 30s, 5m, 24h or 1500ms`);
  return Math.floor(Number(m[1]) * mult);
}

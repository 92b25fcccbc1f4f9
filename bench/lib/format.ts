/**
 * Number formatting for the tables: durations, sizes, rates and ratios, each cell a median with its
 * min–max range when there was more than one sample.
 */
import type { Summary } from './stats.js';

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

export function fmtBytes(b: number): string {
  if (!Number.isFinite(b)) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = b;
  while (x >= 1024 && i < u.length - 1) {
    x /= 1024;
    i++;
  }
  return `${x.toFixed(i === 0 ? 0 : x < 10 ? 2 : 1)} ${u[i]}`;
}

export function fmtNum(x: number, digits = 0): string {
  if (!Number.isFinite(x)) return '–';
  return x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function fmtRatio(x: number): string {
  if (!Number.isFinite(x)) return '–';
  return x >= 100 ? `${x.toFixed(0)}×` : x >= 10 ? `${x.toFixed(1)}×` : `${x.toFixed(2)}×`;
}

/** "median (min–max)" using one of the formatters above. */
export function cell(s: Summary, f: (x: number) => string): string {
  if (s.n === 0) return '–';
  if (s.n === 1 || s.min === s.max) return f(s.median);
  return `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}

/** "2.50× faster" / "2.50× slower" for ratio = reference time / homefs time. */
export function fmtSpeedup(ratio: number): string {
  if (!Number.isFinite(ratio)) return '–';
  return ratio >= 1 ? `homefs ${fmtRatio(ratio)} faster` : `homefs ${fmtRatio(1 / ratio)} slower`;
}

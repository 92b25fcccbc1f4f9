/**
 * The tables and the "where the time goes" paragraph of `bench/run --rtt`, from the samples of
 * bench/scenarios/rtt.ts: one row per (what, system), one column per added round-trip time.
 */
import { concurrency } from './latencyproxy.js';
import { cell, fmtBytes, fmtMs, fmtNum } from './format.js';
import type { Table } from './report.js';
import type { Samples } from './stats.js';
import type { RttRun } from '../scenarios/rtt.js';

type Fmt = (x: number) => string;

const ms: Fmt = (x) => (x === Infinity ? 'not done' : fmtMs(x));
const num: Fmt = (x) => fmtNum(x);

/** The rows of the main table: label, system, metric, format. */
const ROWS: [string, string, string, Fmt][] = [
  ['agent resumes on an empty host: mount (restore) returns', 'homefs', 'wake.mount', ms],
  ['', 'restic restore + work', 'wake.mount', ms],
  ['', 'restic mount', 'wake.mount', ms],
  ['', 'rclone mount', 'wake.mount', ms],
  ['… cat of a notes file ends (first byte)', 'homefs', 'wake.cat', ms],
  ['', 'restic restore + work', 'wake.cat', ms],
  ['', 'restic mount', 'wake.cat', ms],
  ['', 'rclone mount', 'wake.cat', ms],
  ['… git status ends', 'homefs', 'wake.git', ms],
  ['', 'restic restore + work', 'wake.git', ms],
  ['', 'restic mount', 'wake.git', ms],
  ['', 'rclone mount', 'wake.git', ms],
  ['… grep -r through the repo\'s sources ends', 'homefs', 'wake.grep', ms],
  ['', 'restic restore + work', 'wake.grep', ms],
  ['', 'restic mount', 'wake.grep', ms],
  ['', 'rclone mount', 'wake.grep', ms],
  ['store requests of that wake (proxy count)', 'homefs', 'wake.requests', num],
  ['', 'restic restore + work', 'wake.requests', num],
  ['', 'restic mount', 'wake.requests', num],
  ['', 'rclone mount', 'wake.requests', num],
  ['bytes pulled by that wake (status bytesFetched)', 'homefs', 'wake.pulled', fmtBytes],
  ['… bytes it touched (status hotset.touchedBytes: objects read) / pulled ÷ touched', 'homefs', 'wake.touched', fmtBytes],
  ['GETs of that wake (status --metrics)', 'homefs', 'wake.getRequests', num],
  ['move: the same on a 2nd empty host after a session did that work, grep ends', 'homefs', 'move.grep', ms],
  ['… its mount returns / cat ends / git status ends', 'homefs', 'move.catgit', ms],
  ['… its store requests (proxy) / bytes pulled', 'homefs', 'move.reqbytes', ms],
  ['… bytes it touched / pulled ÷ touched', 'homefs', 'move.touched', fmtBytes],
  ['`find` over the whole home, pushed and never mounted (from mount)', 'homefs', 'find', ms],
  ['', 'restic mount', 'find', ms],
  ['', 'rclone mount', 'find', ms],
  ['… entries it listed', 'homefs', 'find.entries', num],
  ['', 'restic mount', 'find.entries', num],
  ['', 'rclone mount', 'find.entries', num],
  ['first sync (first push of the home)', 'homefs push', 'firstsync', ms],
  ['', 'restic backup', 'firstsync', ms],
  ['… its store requests (proxy)', 'homefs push', 'firstsync.requests', num],
  ['', 'restic backup', 'firstsync.requests', num],
  ['pull of the whole home', 'homefs pull', 'pull', ms],
  ['', 'restic restore', 'pull', ms],
  ['… its store requests (proxy)', 'homefs pull', 'pull.requests', num],
  ['', 'restic restore', 'pull.requests', num],
];

/** Which sample holds a row's system: `homefs push` and `homefs pull` are the homefs samples, etc. */
function sampleSystem(system: string): string {
  if (system.startsWith('homefs')) return 'homefs';
  if (system === 'restic backup' || system === 'restic restore') return 'restic';
  if (system === 'restic restore + work') return 'restic restore';
  return system;
}

function rowCell(s: Samples, system: string, metric: string, rtt: number, f: Fmt): string {
  const k = `${sampleSystem(system)}@${rtt}`;
  const failed = s.failed.get(`${k}#${metric.split('.')[0] ?? ''}`);
  if (failed !== undefined) return `failed: ${failed}`;
  if (metric === 'move.catgit') return ['move.mount', 'move.cat', 'move.git'].map((m) => cell(s.get(k, m), ms)).join(' / ');
  if (metric === 'move.reqbytes') return `${cell(s.get(k, 'move.requests'), num)} / ${cell(s.get(k, 'move.pulled'), fmtBytes)}`;
  if (metric.endsWith('.touched')) {
    const step = metric.split('.')[0] ?? '';
    const touched = s.get(k, metric).median;
    const ratio = s.get(k, `${step}.pulled`).median / touched;
    return `${cell(s.get(k, metric), fmtBytes)} / ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : '–'}`;
  }
  return cell(s.get(k, metric), f);
}

export function rttTable(s: Samples, rtts: number[]): Table {
  return {
    caption: 'Over the test Ceph RGW through the latency proxy (each cell: the median of the rounds, with min–max)',
    columns: ['step on a fresh host (time from the start of the mount or restore)', 'system', ...rtts.map((r) => `+${r} ms RTT`)],
    rows: ROWS.map(([label, system, metric, f]) => [label, system, ...rtts.map((r) => rowCell(s, system, metric, r, f))]),
  };
}

/** "Where the time goes" for the homefs wakes profiled by the proxy. */
export function whereTimeGoes(run: RttRun): string[] {
  return run.profiles.map((p) => {
    const c = concurrency(p.spans, p.from, p.to);
    const byMethod = new Map<string, number>();
    for (const x of p.spans) byMethod.set(x.method, (byMethod.get(x.method) ?? 0) + 1);
    const methods = [...byMethod].sort((a, b) => b[1] - a[1]).map(([m, n]) => `${fmtNum(n)} ${m}`).join(', ');
    const ops = Object.entries(p.byOp).map(([op, n]) => `${op} ${fmtNum(n)}`).join(', ');
    const perRequest = c.requests ? p.wallMs / c.requests : NaN;
    return `- +${p.rtt} ms: the wake (mount → end of grep) took ${fmtMs(p.wallMs)} and made ${fmtNum(c.requests)} store requests (${methods || 'none'}; the daemon's metrics count ${ops || 'none'}). At least one request was in flight for ${fmtMs(c.busyMs)} (${fmtNum((100 * c.busyMs) / Math.max(1, p.to - p.from))} % of the wake); while busy, ${c.meanInFlight.toFixed(2)} requests were in flight on average, at most ${c.maxInFlight}. That is ${fmtMs(perRequest)} of wall time per request.`;
  });
}

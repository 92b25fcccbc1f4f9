/**
 * The observability pieces in isolation: a home's metrics registry in the Prometheus text format (series
 * checked line by line), the metered store, the pretty log formatter and --log-level parsing, and the
 * progress bar that draws nothing when its stream is not a TTY.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { HomeMetrics } from '../src/metrics/homefs.js';
import { LateMeters, MeteredStore } from '../src/store/metered.js';
import { MemoryStore } from '../src/store/memory.js';
import { createLogger, parseLevel, prettyLine } from '../src/util/log.js';
import { progressBar, renderBar } from '../src/util/progress.js';

test('metrics: a registry per home, labelled with org and home, in the Prometheus text format', async () => {
  const m = new HomeMetrics({ org: 'acme', home: 'a' });
  m.ops.inc('read');
  m.ops.inc('read', 2);
  m.ops.inc('lookup');
  m.cacheBytes.set(1024);
  m.sealSeconds.observe({ reason: 'fsync' }, 0.05);
  m.sealSeconds.observe({ reason: 'fsync' }, 3);
  m.errors.inc({ kind: 'a "quoted"\nvalue' });
  m.ops.observe('read', 0.25);
  m.ops.observe('read', 0.5);
  const text = await m.render();
  for (const name of ['homefs_fuse_ops_total', 'homefs_fuse_op_seconds', 'homefs_store_fetched_bytes_total', 'homefs_store_uploaded_bytes_total',
    'homefs_store_request_seconds', 'homefs_store_retries_total', 'homefs_cache_hits_total', 'homefs_cache_misses_total',
    'homefs_cache_evictions_total', 'homefs_cache_bytes', 'homefs_seals_total', 'homefs_seal_seconds', 'homefs_errors_total', 'homefs_dirty_bytes']) {
    assert.match(text, new RegExp(`^# TYPE ${name} (counter|gauge|histogram)$`, 'm'));
  }
  assert.match(text, /^homefs_fuse_ops_total\{op="read",org="acme",home="a"\} 3$/m);
  assert.match(text, /^homefs_fuse_ops_total\{op="lookup",org="acme",home="a"\} 1$/m);
  assert.match(text, /^homefs_cache_bytes\{org="acme",home="a"\} 1024$/m);
  assert.match(text, /^homefs_seal_seconds_bucket\{le="0.05",org="acme",home="a",reason="fsync"\} 1$/m);
  assert.match(text, /^homefs_seal_seconds_bucket\{le="\+Inf",org="acme",home="a",reason="fsync"\} 2$/m);
  assert.match(text, /^homefs_seal_seconds_sum\{org="acme",home="a",reason="fsync"\} 3.05$/m);
  assert.match(text, /^homefs_errors_total\{kind="a \\"quoted\\"\\nvalue",org="acme",home="a"\} 1$/m);
  assert.match(text, /^homefs_fuse_op_seconds_bucket\{le="0.1",op="read",org="acme",home="a"\} 0$/m);
  assert.match(text, /^homefs_fuse_op_seconds_bucket\{le="0.25",op="read",org="acme",home="a"\} 1$/m);
  assert.match(text, /^homefs_fuse_op_seconds_bucket\{le="0.5",op="read",org="acme",home="a"\} 2$/m);
  assert.match(text, /^homefs_fuse_op_seconds_bucket\{le="\+Inf",op="read",org="acme",home="a"\} 2$/m);
  assert.match(text, /^homefs_fuse_op_seconds_sum\{op="read",org="acme",home="a"\} 0.75$/m);
  assert.match(text, /^homefs_fuse_op_seconds_count\{op="read",org="acme",home="a"\} 2$/m);
  assert.doesNotMatch(text, /^process_/m, 'process metrics only when asked for');
  const other = new HomeMetrics({ org: 'acme', home: 'b' });
  assert.doesNotMatch(await other.render(), /op="read"/, 'two homes never share a registry');
});

test('metrics: homefs_dirty_bytes is read from the bound source at scrape time; process metrics on request', async () => {
  const m = new HomeMetrics({ process: true });
  let dirty = 4096;
  m.bindDirtyBytes(() => dirty);
  assert.match(await m.render(), /^homefs_dirty_bytes 4096$/m);
  dirty = 0;
  const text = await m.render();
  assert.match(text, /^homefs_dirty_bytes 0$/m);
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_open_fds', 'process_start_time_seconds', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
    assert.match(text, new RegExp(`^${name} [0-9.e+-]+$`, 'm'));
  }
});

test('log: JSON lines by default, the pretty format on request, --log-level validated', () => {
  const lines: string[] = [];
  const sink = new Writable({ write: (c: Buffer, _e, cb) => { lines.push(c.toString()); cb(); } });
  const log = createLogger({ level: 'debug', stream: sink, base: { org: 'acme', home: 'a' } });
  log.info({ op: 'seal', ms: 12, bytes: 4096 }, 'sealed');
  log.trace('hidden');
  assert.equal(lines.length, 1);
  const o = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  assert.deepEqual([o.level, o.org, o.home, o.op, o.ms, o.bytes, o.msg], [30, 'acme', 'a', 'seal', 12, 4096, 'sealed']);
  const pretty = prettyLine(lines[0] ?? '');
  assert.match(pretty, /^\d\d:\d\d:\d\d INFO  sealed {2}org=acme home=a op=seal ms=12 bytes=4096\n$/);
  assert.equal(prettyLine('not json'), 'not json\n');
  assert.match(prettyLine(JSON.stringify({ level: 50, time: 0, msg: 'x', err: { message: 'boom now' } })), /^00:00:00 ERROR x {2}err="boom now"\n$/);
  const out: string[] = [];
  const tty = new Writable({ write: (c: Buffer, _e, cb) => { out.push(c.toString()); cb(); } });
  createLogger({ stream: tty, pretty: true }).warn({ home: 'b' }, 'slow store');
  assert.match(out.join(''), /^\d\d:\d\d:\d\d WARN  slow store {2}home=b\n$/);
  assert.equal(parseLevel('warn'), 'warn');
  assert.throws(() => parseLevel('loud'), /invalid --log-level 'loud'/);
});

test('progress: a bar on a TTY, nothing when piped', () => {
  assert.equal(renderBar('gc', 5, 10), `gc [${'#'.repeat(15)}${'.'.repeat(15)}]  50% 5/10`);
  assert.equal(renderBar('scan', 1234, 0), 'scan: 1234');
  const written: string[] = [];
  const piped = Object.assign(new Writable({ write: (c: Buffer, _e, cb) => { written.push(c.toString()); cb(); } }), { isTTY: false }) as unknown as NodeJS.WriteStream;
  const p = progressBar({ stream: piped, delayMs: 0 });
  p.update('gc', 1, 2);
  p.stop();
  assert.equal(written.length, 0);
  const tty = Object.assign(new Writable({ write: (c: Buffer, _e, cb) => { written.push(c.toString()); cb(); } }), { isTTY: true }) as unknown as NodeJS.WriteStream;
  const q = progressBar({ stream: tty, delayMs: 0 });
  q.update('verify hash', 3, 4);
  q.stop();
  assert.deepEqual(written, [`\r\x1b[K${renderBar('verify hash', 3, 4)}`, '\n']);
});

test('metrics: MeteredStore counts bytes fetched and uploaded by kind, latency by op, store errors', async () => {
  const m = new HomeMetrics();
  const s = new MeteredStore(new MemoryStore(), m.storeMeters());
  const h = 'ab'.repeat(32);
  await s.put(`acme/blocks/ab/${h}`, Buffer.alloc(100));
  await s.put(`acme/meta/ab/${h}`, Buffer.alloc(7));
  assert.equal(await s.putIfAbsent('acme/homes/a/heads/0', Buffer.alloc(64)), true);
  assert.equal(await s.putIfAbsent('acme/homes/a/heads/0', Buffer.alloc(64)), false);
  assert.equal((await s.get(`acme/blocks/ab/${h}`)).length, 100);
  await assert.rejects(s.get('acme/blocks/cd/missing'));
  const text = await m.render();
  assert.match(text, /^homefs_store_uploaded_bytes_total\{kind="block"\} 100$/m);
  assert.match(text, /^homefs_store_uploaded_bytes_total\{kind="meta"\} 7$/m);
  assert.match(text, /^homefs_store_uploaded_bytes_total\{kind="other"\} 64$/m, 'a putIfAbsent that created nothing uploads nothing');
  assert.match(text, /^homefs_store_fetched_bytes_total\{kind="block"\} 100$/m);
  assert.doesNotMatch(text, /kind="store"/, 'a missing object is not an error');
  assert.match(text, /^homefs_store_request_seconds_count\{op="put"\} 2$/m);
  assert.match(text, /^homefs_store_request_seconds_count\{op="get"\} 2$/m);
});

test('metrics: LateMeters keeps the requests made before the metrics exist, with their latency, and hands them over at bind', async () => {
  const late = new LateMeters();
  const mem = new MemoryStore();
  const s = new MeteredStore(mem, late);
  await s.put('acme/homes/a/LEASE', Buffer.alloc(10));
  const slow = new MeteredStore({ ...mem, get: () => new Promise<Buffer>((r) => setTimeout(() => r(Buffer.alloc(3)), 60)) } as unknown as MemoryStore, late);
  const inFlight = slow.get('acme/homes/a/LEASE'); // ends after bind
  await assert.rejects(s.get('acme/homes/a/HEAD-missing'));
  const m = new HomeMetrics();
  assert.doesNotMatch(await m.render(), /op="put"/, 'nothing is counted before bind');
  late.bind(m.storeMeters());
  await inFlight;
  await s.get('acme/homes/a/LEASE');
  const text = await m.render();
  assert.match(text, /^homefs_store_request_seconds_count\{op="put"\} 1$/m, 'the write before bind');
  assert.match(text, /^homefs_store_request_seconds_count\{op="get"\} 3$/m, 'the reads before, across and after bind');
  assert.match(text, /^homefs_store_uploaded_bytes_total\{kind="other"\} 10$/m);
  const sum = Number(/^homefs_store_request_seconds_sum\{op="get"\} ([0-9.e-]+)$/m.exec(text)?.[1]);
  assert.ok(sum >= 0.05, `the request across bind keeps its latency (gets took ${sum} s in all)`);
});

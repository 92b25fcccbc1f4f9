/**
 * The observability pieces in isolation: the Prometheus text rendering of counters, gauges and
 * histograms (format checked line by line), the pretty log formatter and --log-level parsing, and the
 * progress bar that draws nothing when its stream is not a TTY.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { Registry } from '../src/metrics/registry.js';
import { HomeMetrics } from '../src/metrics/homefs.js';
import { MeteredStore } from '../src/metrics/store.js';
import { MemoryStore } from '../src/store/memory.js';
import { createLogger, parseLevel, prettyLine } from '../src/util/log.js';
import { progressBar, renderBar } from '../src/util/progress.js';

test('metrics: Prometheus text exposition of counters, gauges and histograms', () => {
  const r = new Registry();
  const ops = r.counter('homefs_fuse_ops_total', 'FUSE operations served, by op');
  ops.inc({ op: 'read' });
  ops.inc({ op: 'read' }, 2);
  ops.inc({ op: 'lookup' });
  assert.equal(ops.get({ op: 'read' }), 3);
  assert.equal(r.counter('homefs_fuse_ops_total', 'again'), ops, 'registering twice returns the same metric');
  assert.throws(() => r.gauge('homefs_fuse_ops_total', 'x'), /already registered as a counter/);
  assert.throws(() => ops.inc(undefined, -1), /cannot decrease/);
  r.gauge('homefs_cache_bytes', 'bytes in the disk cache').set(1024);
  const h = r.histogram('homefs_seal_seconds', 'seal duration', [0.1, 1]);
  h.observe(0.05, { reason: 'fsync' });
  h.observe(0.5, { reason: 'fsync' });
  h.observe(3, { reason: 'fsync' });
  r.counter('homefs_errors_total', 'errors').inc({ kind: 'a "quoted"\nvalue' });
  assert.equal(
    r.render(),
    [
      '# HELP homefs_fuse_ops_total FUSE operations served, by op',
      '# TYPE homefs_fuse_ops_total counter',
      'homefs_fuse_ops_total{op="read"} 3',
      'homefs_fuse_ops_total{op="lookup"} 1',
      '# HELP homefs_cache_bytes bytes in the disk cache',
      '# TYPE homefs_cache_bytes gauge',
      'homefs_cache_bytes 1024',
      '# HELP homefs_seal_seconds seal duration',
      '# TYPE homefs_seal_seconds histogram',
      'homefs_seal_seconds_bucket{reason="fsync",le="0.1"} 1',
      'homefs_seal_seconds_bucket{reason="fsync",le="1"} 2',
      'homefs_seal_seconds_bucket{reason="fsync",le="+Inf"} 3',
      'homefs_seal_seconds_sum{reason="fsync"} 3.55',
      'homefs_seal_seconds_count{reason="fsync"} 3',
      '# HELP homefs_errors_total errors',
      '# TYPE homefs_errors_total counter',
      'homefs_errors_total{kind="a \\"quoted\\"\\nvalue"} 1',
      '',
    ].join('\n'),
  );
  const m = new HomeMetrics();
  m.cacheHits.inc({ tier: 'memory' });
  const stop = m.opSeconds.startTimer({ op: 'read' });
  assert.ok(stop() >= 0);
  const text = m.render();
  for (const name of ['homefs_fuse_ops_total', 'homefs_fuse_op_seconds', 'homefs_store_fetched_bytes_total', 'homefs_store_uploaded_bytes_total',
    'homefs_cache_hits_total', 'homefs_cache_misses_total', 'homefs_cache_evictions_total', 'homefs_seals_total', 'homefs_seal_seconds', 'homefs_errors_total']) {
    assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'));
  }
  assert.match(text, /^homefs_cache_hits_total\{tier="memory"\} 1$/m);
  assert.match(text, /^homefs_fuse_op_seconds_count\{op="read"\} 1$/m);
  assert.match(text, /^homefs_resident_memory_bytes \d+$/m);
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
  const s = new MeteredStore(new MemoryStore(), m);
  const h = 'ab'.repeat(32);
  await s.put(`acme/blocks/ab/${h}`, Buffer.alloc(100));
  await s.put(`acme/meta/ab/${h}`, Buffer.alloc(7));
  assert.equal(await s.putIfAbsent('acme/homes/a/heads/0', Buffer.alloc(64)), true);
  assert.equal(await s.putIfAbsent('acme/homes/a/heads/0', Buffer.alloc(64)), false);
  assert.equal((await s.get(`acme/blocks/ab/${h}`)).length, 100);
  await assert.rejects(s.get('acme/blocks/cd/missing'));
  assert.equal(m.bytesUploaded.get({ kind: 'block' }), 100);
  assert.equal(m.bytesUploaded.get({ kind: 'meta' }), 7);
  assert.equal(m.bytesUploaded.get({ kind: 'other' }), 64, 'a putIfAbsent that created nothing uploads nothing');
  assert.equal(m.bytesFetched.get({ kind: 'block' }), 100);
  assert.equal(m.errors.get({ kind: 'store' }), 0, 'a missing object is not an error');
  const text = m.render();
  assert.match(text, /^homefs_store_request_seconds_count\{op="put"\} 2$/m);
  assert.match(text, /^homefs_store_request_seconds_count\{op="get"\} 2$/m);
});

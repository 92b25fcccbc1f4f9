/**
 * The plumbing of `bench/run --rtt` (bench/lib/latencyproxy.ts, s3env.ts, rttreport.ts, rttrun.ts): request
 * detection and ordering in the latency proxy, the proxy forwarding kept-alive HTTP requests on loopback and
 * counting each one, concurrency over request spans, ceph.sh's exports and the metrics parser, the --rtt
 * argument, and the report's table and docs block. Fast and deterministic: no timing is asserted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { request, Agent } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LatencyProxy, concurrency, releaseTime, startsRequest, type RequestSpan } from '../bench/lib/latencyproxy.js';
import { cephFromExports, parseExports, s3Urls, storeRequestCounts } from '../bench/lib/s3env.js';
import { parseRtts } from '../bench/lib/rttrun.js';
import { rttTable } from '../bench/lib/rttreport.js';
import { readBlock, writeBlock } from '../bench/lib/report.js';
import { Samples } from '../bench/lib/stats.js';

test('startsRequest: a request line after the server answered, nothing else', () => {
  const get = Buffer.from('GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(startsRequest(get, true), true);
  assert.equal(startsRequest(get, false), false); // the client is still sending the previous request
  assert.equal(startsRequest(Buffer.from('\x00\x01binary body'), true), false); // a body after 100 Continue
  assert.equal(startsRequest(Buffer.from('PUT /b/k HTTP/1.1\r\n'), true), true);
  assert.equal(startsRequest(Buffer.from('GET no-version\r\n'), true), false);
});

test('releaseTime delays by the latency and never reorders a connection', () => {
  assert.equal(releaseTime(100, 20, 0), 120);
  assert.equal(releaseTime(105, 20, 120), 125);
  assert.equal(releaseTime(105, 0, 130), 130); // behind a chunk still held
});

test('concurrency: busy time is the union of spans, mean and max in flight', () => {
  const span = (start: number, firstByte: number): RequestSpan => ({ start, firstByte, method: 'GET', target: '/k' });
  const serial = concurrency([span(0, 20), span(20, 40), span(40, 60)], 0, 100);
  assert.deepEqual(serial, { requests: 3, busyMs: 60, meanInFlight: 1, maxInFlight: 1 });
  const parallel = concurrency([span(0, 20), span(0, 20), span(10, 30), span(200, 220)], 0, 100);
  assert.equal(parallel.requests, 3); // the last one starts outside the window
  assert.equal(parallel.busyMs, 30);
  assert.equal(parallel.maxInFlight, 3);
  assert.equal(parallel.meanInFlight, 60 / 30);
  assert.equal(concurrency([], 0, 10).meanInFlight, 0);
});

test('the proxy forwards kept-alive HTTP requests in order and counts each one', async () => {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const body: Buffer[] = [];
    req.on('data', (b: Buffer) => body.push(b));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url} ${Buffer.concat(body).length}`);
      res.end(`${req.url}`);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  assert.ok(addr && typeof addr === 'object');
  const proxy = new LatencyProxy('127.0.0.1', addr.port, 1);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await proxy.start();
    const call = (method: string, path: string, body?: Buffer): Promise<string> =>
      new Promise((ok, fail) => {
        const r = request({ host: '127.0.0.1', port: proxy.port, method, path, agent }, (res) => {
          const out: Buffer[] = [];
          res.on('data', (b: Buffer) => out.push(b));
          res.on('end', () => ok(Buffer.concat(out).toString()));
        });
        r.on('error', fail);
        r.end(body);
      });
    assert.equal(await call('GET', '/a'), '/a');
    assert.equal(await call('PUT', '/b', Buffer.alloc(300_000, 7)), '/b');
    assert.equal(await call('GET', '/c'), '/c');
    assert.deepEqual(seen, ['GET /a 0', 'PUT /b 300000', 'GET /c 0']);
    assert.equal(proxy.requests, 3);
    assert.deepEqual(proxy.spans.map((x) => x.method), ['GET', 'PUT', 'GET']);
    assert.ok(proxy.spans.every((x) => x.firstByte >= x.start));
  } finally {
    agent.destroy();
    await proxy.stop();
    await new Promise<void>((ok) => server.close(() => ok()));
  }
});

test('ceph.sh exports give the endpoint, bucket and credentials; the URLs of each system', () => {
  const vars = parseExports("export HOMEFS_TEST_S3_URL='s3://homefs-test/test?endpoint=http://127.0.0.1:45161&region=us-east-1&pathStyle=true'\nexport AWS_ACCESS_KEY_ID='AK'\nexport AWS_SECRET_ACCESS_KEY='SK'\nnoise\n");
  const c = cephFromExports(vars);
  assert.deepEqual(c, { host: '127.0.0.1', port: 45161, bucket: 'homefs-test', region: 'us-east-1', accessKey: 'AK', secretKey: 'SK' });
  const u = s3Urls(c, 9999, 'bench-rtt/x');
  assert.equal(u.homefs, 's3://homefs-test/bench-rtt/x/homefs?endpoint=http://127.0.0.1:9999&region=us-east-1&pathStyle=true');
  assert.equal(u.restic, 's3:http://127.0.0.1:9999/homefs-test/bench-rtt/x/restic');
  assert.equal(u.rclone, 'homefs-test/bench-rtt/x/plain');
  assert.throws(() => cephFromExports({ ...vars, HOMEFS_TEST_S3_URL: 's3://b/p?endpoint=http://10.0.0.1:80' }), /127\.0\.0\.1/);
  assert.throws(() => cephFromExports({}), /exports/);
});

test('storeRequestCounts reads the request histogram counts by op', () => {
  const text = [
    '# TYPE homefs_store_request_seconds histogram',
    'homefs_store_request_seconds_bucket{op="get",le="0.1"} 3',
    'homefs_store_request_seconds_count{op="get"} 373',
    'homefs_store_request_seconds_sum{op="get"} 1.5',
    'homefs_store_request_seconds_count{op="put"} 1',
    'homefs_fuse_ops_total{op="get"} 99',
  ].join('\n');
  assert.deepEqual(storeRequestCounts(text), { get: 373, put: 1 });
});

test('parseRtts takes whole milliseconds, comma-separated', () => {
  assert.deepEqual(parseRtts('0,20'), [0, 20]);
  assert.deepEqual(parseRtts('20'), [20]);
  assert.deepEqual(parseRtts('5,5'), [5]);
  assert.throws(() => parseRtts('20ms'), /whole numbers/);
  assert.throws(() => parseRtts('-1'), /whole numbers/);
});

test('rttTable: one column per latency, failures shown in their cell', () => {
  const s = new Samples();
  s.add('homefs@0', 'wake.grep', 2000);
  s.add('homefs@20', 'wake.grep', 30_000);
  s.add('rclone mount@20', 'find', Infinity);
  s.fail('restic@20#pull', 'boom');
  const t = rttTable(s, [0, 20]);
  assert.deepEqual(t.columns.slice(2), ['+0 ms RTT', '+20 ms RTT']);
  const row = (label: string, system: string): string[] => {
    const i = t.rows.findIndex((r, k) => r[1] === system && (r[0] === label || (r[0] === '' && t.rows.slice(0, k).reverse().find((x) => x[0] !== '')?.[0] === label)));
    return t.rows[i] ?? [];
  };
  assert.deepEqual(row("… grep -r through the repo's sources ends", 'homefs').slice(2), ['2.00 s', '30.0 s']);
  assert.equal(row('`find` over the whole home, pushed and never mounted (from mount)', 'rclone mount')[3], 'not done');
  assert.equal(row('pull of the whole home', 'restic restore')[3], 'failed: boom');
});

test('writeBlock with a tag keeps the bench/run block and the rest of the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-rtt-'));
  try {
    const p = join(dir, 'b.md');
    writeFileSync(p, '# t\n\nmine\n');
    writeBlock(p, 'scenarios', 'bench/run');
    writeBlock(p, 'rtt one', 'bench/run --rtt');
    writeBlock(p, 'rtt two', 'bench/run --rtt');
    const text = readFileSync(p, 'utf8');
    assert.ok(text.startsWith('# t\n\nmine\n'));
    assert.equal(readBlock(p).trim(), 'scenarios');
    assert.equal(readBlock(p, 'bench/run --rtt').trim(), 'rtt two');
    assert.equal(text.split('rtt').length - 1, 3); // two markers and one body: the first body is gone
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

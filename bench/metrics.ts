/**
 * Cost of a home's metrics on the FUSE path and at scrape time: an op count and a latency observation
 * (what every FUSE op does once each, metrics/opmeter.ts), the same through prom-client's labelled counter
 * and histogram (what the store's metrics still use, and the FUSE path used before), rendering the registry
 * with prom-client's default process metrics, and the time to import prom-client (daemon start).
 * Usage: node dist/bench/metrics.js [count=2000000]
 */
import { performance } from 'node:perf_hooks';

const n = Number(process.argv[2] ?? 2_000_000);
let t0 = performance.now();
const { HomeMetrics } = await import('../src/metrics/homefs.js');
const importMs = performance.now() - t0;
const m = new HomeMetrics({ org: 'acme', home: 'bench', process: true });
const ops = ['lookup', 'getattr', 'read', 'write', 'open', 'release', 'readdir', 'flush'];

t0 = performance.now();
for (let i = 0; i < n; i++) m.ops.inc(ops[i & 7] ?? 'read');
const incNs = ((performance.now() - t0) * 1e6) / n;
t0 = performance.now();
for (let i = 0; i < n; i++) m.ops.observe(ops[i & 7] ?? 'read', i * 1e-7);
const observeNs = ((performance.now() - t0) * 1e6) / n;
t0 = performance.now();
for (let i = 0; i < n; i++) m.storeRequests.inc({ op: ops[i & 7] ?? 'read', kind: 'block' });
const promIncNs = ((performance.now() - t0) * 1e6) / n;
t0 = performance.now();
for (let i = 0; i < n; i++) m.storeSeconds.observe({ op: ops[i & 7] ?? 'read' }, i * 1e-7);
const promObserveNs = ((performance.now() - t0) * 1e6) / n;
let text = '';
t0 = performance.now();
for (let i = 0; i < 100; i++) text = await m.render();
const renderUs = ((performance.now() - t0) * 1000) / 100;

console.log(`import metrics module (prom-client): ${importMs.toFixed(1)} ms`);
console.log(`FUSE op count: ${incNs.toFixed(0)} ns each over ${n}`);
console.log(`FUSE op latency observation: ${observeNs.toFixed(0)} ns each over ${n}`);
console.log(`prom-client labelled counter inc: ${promIncNs.toFixed(0)} ns each over ${n}`);
console.log(`prom-client labelled histogram observe: ${promObserveNs.toFixed(0)} ns each over ${n}`);
console.log(`render the registry (${text.length} bytes, ${text.split('\n').filter((l) => l.startsWith('# TYPE')).length} metrics): ${renderUs.toFixed(0)} µs`);

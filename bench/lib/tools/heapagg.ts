/**
 * What a V8 heap snapshot holds, by kind of object: the self size and count of each type and constructor
 * name, biggest first (strings counted together, whatever their text).
 *
 *   node dist/bench/lib/tools/heapagg.js <file.heapsnapshot> [top=30]
 *
 * A daemon writes one on SIGUSR2 when started with `--heapsnapshot-signal=SIGUSR2` (for instance
 * `NODE_OPTIONS="--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR" bin/homefs mount …`, then
 * `kill -USR2 <daemon pid>`).
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: heapagg <file.heapsnapshot> [top]\n');
  process.exit(2);
}
const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = s.snapshot.meta.node_fields;
const types = s.snapshot.meta.node_types[0];
const width = fields.length;
const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
const byKind = new Map<string, { bytes: number; count: number }>();
let total = 0;
for (let i = 0; i < s.nodes.length; i += width) {
  const type = types[s.nodes[i + iType] as number] ?? '?';
  const name = type.endsWith('string') ? '' : (s.strings[s.nodes[i + iName] as number] ?? '').slice(0, 60);
  const size = s.nodes[i + iSize] as number;
  total += size;
  const k = `${type} ${name}`;
  const a = byKind.get(k) ?? { bytes: 0, count: 0 };
  a.bytes += size;
  a.count++;
  byKind.set(k, a);
}
const mb = (n: number): string => (n / 1048576).toFixed(1).padStart(7);
process.stdout.write(`total ${mb(total)} MB\n`);
for (const [k, a] of [...byKind].sort((x, y) => y[1].bytes - x[1].bytes).slice(0, Number(topArg ?? 30))) {
  process.stdout.write(`${mb(a.bytes)} MB ${String(a.count).padStart(8)}  ${k}\n`);
}

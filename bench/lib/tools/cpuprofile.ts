/**
 * Summarizes a V8 .cpuprofile (from `node --cpu-prof`, e.g. a homefs daemon started with
 * NODE_OPTIONS=--cpu-prof): self time per function and per source file, biggest first, and the share
 * of time the main thread sat idle (waiting on the kernel or I/O).
 *
 *   node dist/bench/lib/tools/cpuprofile.js <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: cpuprofile <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
for (let i = 0; i < p.samples.length; i++) {
  const id = p.samples[i] as number;
  selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i + 1] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const fn = new Map<string, number>();
const src = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id);
  if (!n) continue;
  const short = n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^file:\/\//, '');
  const name = `${n.callFrame.functionName || '(anonymous)'} ${short}:${n.callFrame.lineNumber + 1}`;
  fn.set(name, (fn.get(name) ?? 0) + us);
  const key = short || n.callFrame.functionName;
  src.set(key, (src.get(key) ?? 0) + us);
}
const pct = (us: number): string => `${((us / total) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms`;
const print = (title: string, m: Map<string, number>): void => {
  process.stdout.write(`${title}\n`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${pct(us)}  ${k}\n`);
};
process.stdout.write(`profile ${file}: ${(total / 1e6).toFixed(2)} s sampled\n`);
print('self time by function:', fn);
print('self time by file:', src);

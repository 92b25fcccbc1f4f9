/**
 * The longest stretches of one V8 .cpuprofile (`node --cpu-prof`) during which the main thread ran without
 * a break under the same two outermost frames (e.g. `processImmediate > runNextTicks`): how long the event
 * loop was held at a time, and by what, in one window of wall time, longest first. A FUSE request that
 * arrives during such a stretch waits for its end.
 *
 *   node dist/bench/lib/tools/cpuruns.js <file.cpuprofile> <from> <to> [minMs=15]
 *
 * `from` and `to` are CLOCK_MONOTONIC seconds, as for cpuwindow.js.
 */
import { frameName, readProfileTree, type ProfileNode as Node } from './profiletree.js';

interface Run {
  key: string;
  start: number;
  end: number;
  leaves: Map<string, number>;
}

const [file, fromArg, toArg, minArg] = process.argv.slice(2);
if (!file || fromArg === undefined || toArg === undefined) {
  process.stderr.write('usage: cpuruns <file.cpuprofile> <from s> <to s> [minMs]\n');
  process.exit(2);
}
const from = Number(fromArg) * 1e6;
const to = Number(toArg) * 1e6;
const minUs = Number(minArg ?? 15) * 1000;
const { profile: p, byId, parent } = readProfileTree(file);
const nameOf = frameName;
const stack = (id: number): Node[] => {
  const out: Node[] = [];
  for (let c: number | undefined = id; c !== undefined; c = parent.get(c)) out.push(byId.get(c) as Node);
  return out.reverse();
};

const runs: Run[] = [];
let cur: Run | undefined;
let t = p.startTime;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i] ?? 0;
  if (t < from || t > to) continue;
  const s = stack(p.samples[i] as number);
  const idle = s[1]?.callFrame.functionName === '(idle)';
  const key = s.slice(1, 3).map(nameOf).join(' > ');
  const leaf = nameOf(s[s.length - 1] as Node);
  if (cur && !idle && cur.key === key) {
    cur.end = t;
    cur.leaves.set(leaf, (cur.leaves.get(leaf) ?? 0) + 1);
    continue;
  }
  if (cur) runs.push(cur);
  cur = idle ? undefined : { key, start: t, end: t, leaves: new Map([[leaf, 1]]) };
}
if (cur) runs.push(cur);
for (const r of runs.filter((x) => x.end - x.start >= minUs).sort((a, b) => b.end - b.start - (a.end - a.start)).slice(0, 20)) {
  const leaves = [...r.leaves].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([n]) => n).join(', ');
  process.stdout.write(`${((r.end - r.start) / 1000).toFixed(0).padStart(5)} ms at +${((r.start - from) / 1000).toFixed(0)} ms  ${r.key}  (mostly ${leaves})\n`);
}

/**
 * The part of a V8 .cpuprofile (`node --cpu-prof`) that falls in one window of wall time, such as the
 * seconds a `find` ran against a daemon that was profiled from its start: how busy the main thread was
 * per slice of the window, and the self and inclusive time of each function within it (a function counted
 * once per sample however often it recurs on the stack), biggest first.
 *
 *   node dist/bench/lib/tools/cpuwindow.js <file.cpuprofile> <from> <to> [top=30]
 *
 * `from` and `to` are CLOCK_MONOTONIC seconds (what V8 stamps profiles with on Linux; in bash
 * `python3 -c 'import time; print(time.monotonic())'` around the command to measure).
 */
import { frameName, readProfileTree, type ProfileNode as Node } from './profiletree.js';

const [file, fromArg, toArg, topArg] = process.argv.slice(2);
if (!file || fromArg === undefined || toArg === undefined) {
  process.stderr.write('usage: cpuwindow <file.cpuprofile> <from s> <to s> [top]\n');
  process.exit(2);
}
const from = Number(fromArg) * 1e6;
const to = Number(toArg) * 1e6;
const top = Number(topArg ?? 30);
const { profile: p, byId, parent } = readProfileTree(file);
const nameOf = frameName;
const idle = (n: Node): boolean => n.callFrame.functionName === '(idle)';
const SLICES = 10;
const slice = (to - from) / SLICES;
const busy = new Array<number>(SLICES).fill(0);
const self = new Map<string, number>();
const incl = new Map<string, number>();
let t = p.startTime;
let total = 0;
let idleUs = 0;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i] ?? 0;
  const dt = p.timeDeltas[i + 1] ?? 0;
  if (t < from || t >= to) continue;
  const n = byId.get(p.samples[i] as number);
  if (!n) continue;
  total += dt;
  if (idle(n)) {
    idleUs += dt;
    continue;
  }
  busy[Math.min(SLICES - 1, Math.floor((t - from) / slice))] += dt;
  self.set(nameOf(n), (self.get(nameOf(n)) ?? 0) + dt);
  const seen = new Set<string>();
  for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
    const a = byId.get(id);
    if (!a) break;
    const k = nameOf(a);
    if (seen.has(k)) continue;
    seen.add(k);
    incl.set(k, (incl.get(k) ?? 0) + dt);
  }
}
const ms = (us: number): string => `${(us / 1000).toFixed(0).padStart(6)} ms`;
process.stdout.write(`window ${((to - from) / 1e6).toFixed(3)} s: ${ms(total)} sampled, ${ms(total - idleUs)} busy, ${ms(idleUs)} idle\n`);
process.stdout.write(`busy per ${(slice / 1000).toFixed(0)} ms slice: ${busy.map((b) => `${Math.round((b / slice) * 100)}%`).join(' ')}\n`);
const print = (title: string, m: Map<string, number>): void => {
  process.stdout.write(`${title}\n`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${ms(us)}  ${k}\n`);
};
print('self time:', self);
print('inclusive time:', incl);

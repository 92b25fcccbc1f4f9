/**
 * Commands that talk to a running daemon over its control socket: `sync`, `sleep`, `status`.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { callControl } from '../home/control.js';
import { UserError } from '../util/errors.js';

async function call(mnt: string, op: 'sync' | 'sleep' | 'status' | 'metrics'): Promise<Record<string, unknown>> {
  const r = await callControl(resolve(mnt), { op });
  if (!r.ok) throw new UserError(`${op} failed: ${r.error}`);
  return r;
}

export function register(program: Command): void {
  program
    .command('sync')
    .description('seal the mounted home now and print the snapshot id')
    .argument('<mountpoint>')
    .option('--json', 'print the result as JSON')
    .action(async (mnt: string, o: { json?: boolean }) => {
      const r = await call(mnt, 'sync');
      process.stdout.write(o.json ? `${JSON.stringify(r)}\n` : `${String(r.snapshot ?? '')}\n`);
    });
  program
    .command('sleep')
    .description('final seal, unmount, and stop the daemon; exits 0 once the snapshot is committed')
    .argument('<mountpoint>')
    .option('--json', 'print the result as JSON')
    .action(async (mnt: string, o: { json?: boolean }) => {
      const r = await call(mnt, 'sleep');
      process.stdout.write(o.json ? `${JSON.stringify(r)}\n` : `${String(r.snapshot ?? '')}\n`);
    });
  program
    .command('status')
    .description('state, HEAD, dirty data, last seal, cache and fetch statistics of a mounted home')
    .argument('<mountpoint>')
    .option('--json', 'print the status as one JSON object')
    .option('--metrics', 'print the daemon\'s metrics in the Prometheus text format instead')
    .action(async (mnt: string, o: { json?: boolean; metrics?: boolean }) => {
      if (o.metrics) {
        process.stdout.write(String((await call(mnt, 'metrics')).text ?? ''));
        return;
      }
      const r = await call(mnt, 'status');
      delete r.ok;
      if (o.json) {
        process.stdout.write(`${JSON.stringify(r)}\n`);
        return;
      }
      for (const [k, v] of Object.entries(r)) process.stdout.write(`${k.padEnd(14)} ${v === null ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v)}\n`);
    });
}

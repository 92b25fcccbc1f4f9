/**
 * The `--store URL` option shared by commands that talk to a store: --store, else HOMEFS_STORE, else the
 * file:// store in the user's data directory (config.ts). Opens the store, runs the command, closes it.
 * Only commands that write may create a missing file store; the others say that it does not exist.
 */
import type { Command } from 'commander';
import { defaultStoreUrl, defaults } from '../config.js';
import { UsageError } from '../util/errors.js';
import { openStore, type OpenOptions } from '../store/open.js';
import type { Store } from '../store/store.js';

export function addStoreOption(cmd: Command): Command {
  return cmd.option('--store <url>', 'store URL: file:///path or s3://bucket/prefix (default: $HOMEFS_STORE, else the local data directory)');
}

/** `--parallel <n>` of push and pull: files (and so store requests) in flight at once. */
export function addParallelOption(cmd: Command, dflt: number): Command {
  return cmd.option('--parallel <n>', `files transferred at once, each with its store requests (default ${dflt}; more hides more store latency)`);
}

/**
 * A push or pull command with its arguments, `--store`, `--parallel` and `--json`: the two move a home
 * between a directory and the store, so they take the same options in the same order.
 */
export function transferCommand(program: Command, name: 'push' | 'pull', description: string, args: ReadonlyArray<readonly [string, string]>, parallelism: number): Command {
  const cmd = program.command(name).description(description);
  for (const [arg, about] of args) cmd.argument(arg, about);
  return addParallelOption(addStoreOption(cmd), parallelism).option('--json', 'print the result as one JSON object');
}

/** The value of `--parallel`, checked: undefined when not given. */
export function parallelOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > defaults.maxTransferParallelism) {
    throw new UsageError(`invalid --parallel '${value}': expected a whole number from 1 to ${defaults.maxTransferParallelism}`);
  }
  return n;
}

/** `access`: `write` for commands that advance HEADs, `create` for the ones that may start a new store. */
export async function withStore<T>(url: string | undefined, access: OpenOptions, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(url ?? defaultStoreUrl(), access);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Human-readable byte count (binary units). */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** A reader that goes away (`homefs ls ... | head`) ends the command quietly instead of with EPIPE. */
export function exitQuietlyOnEpipe(): void {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

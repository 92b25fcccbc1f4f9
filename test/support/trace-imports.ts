/**
 * Import tracing for tests and benches: `node --import <this file> ...` with HOMEFS_TRACE_IMPORTS=<path>
 * appends the URL of every module the process resolves (ES imports and requires) to <path>, one per line,
 * as the process exits. Child processes started with the same execArgv (the mount daemon) trace too.
 */
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const out = process.env.HOMEFS_TRACE_IMPORTS;
if (out) {
  const seen = new Set<string>();
  registerHooks({
    resolve(specifier, context, next) {
      const r = next(specifier, context);
      seen.add(r.url);
      return r;
    },
  });
  process.on('exit', () => appendFileSync(out, [...seen].map((u) => `${process.pid} ${u}\n`).join('')));
}

/**
 * Entry point of the `homefs` command. Parses arguments with commander and turns every user error into
 * one line on stderr and its exit code (util/exit-codes.ts, listed by `homefs --help`); only real bugs
 * print a stack trace.
 */
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { registerCommands } from './commands.js';
import { UserError, errorMessage } from '../util/errors.js';
import { EXIT_CODE_HELP, ExitCode } from '../util/exit-codes.js';

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    return pkg.version;
  } catch {
    return 'unknown';
  }
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command('homefs')
    .description('FUSE-mounted, content-addressed home directories that survive their sandbox')
    .version(version())
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `\n${EXIT_CODE_HELP}\n`);
  await registerCommands(program, argv);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    if (e instanceof UserError) {
      process.stderr.write(`homefs: ${e.message}\n`);
      return e.exitCode;
    }
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EPERM' || code === 'ENOSPC' || code === 'EROFS' || code === 'ENOTDIR' || code === 'EEXIST') {
      process.stderr.write(`homefs: ${errorMessage(e)}\n`);
      return ExitCode.userError;
    }
    process.stderr.write(`homefs: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
    return ExitCode.internal;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`homefs: ${errorMessage(e)}\n`);
    process.exitCode = ExitCode.internal;
  },
);

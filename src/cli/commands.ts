/**
 * The list of CLI command modules. Each module registers one command (or a small family) on the program.
 */
import type { Command } from 'commander';

export type Register = (program: Command) => void;

export async function loadCommands(): Promise<Register[]> {
  const modules: string[] = [
    // one line per command module, e.g. './push.js'
    './push.js',
    './pull.js',
    './log.js',
    './ls.js',
    './cat.js',
    './mount.js',
    './control-cmds.js',
    './fork.js',
    './rollback.js',
    './diff.js',
    './gc.js',
    './verify.js',
    './locality.js',
    './du.js',
    './install-helper.js',
  ];
  const out: Register[] = [];
  for (const m of modules) out.push(((await import(m)) as { register: Register }).register);
  return out;
}

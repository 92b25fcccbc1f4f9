/**
 * The table of CLI commands: name, usage term and description of each, and a loader for the module that
 * registers it. main.ts imports only the module of the command being run (a mount must not pay for the
 * AWS SDK that push or gc pull in), and lists the others in --help from this table alone.
 * test/cli-commands.test.ts keeps the table and the modules in step.
 */
import { Help, type Command } from 'commander';

export type Register = (program: Command) => void;

export interface CommandEntry {
  name: string;
  /** What --help shows after the name: `[options]` if the command has options, then its arguments. */
  args: string;
  description: string;
  /** The module's `register`, which adds this command (and the others of its module) to a program. */
  load: () => Promise<Register>;
}

type Module = { register: Register };
const push = async (): Promise<Register> => ((await import('./push.js')) as Module).register;
const pull = async (): Promise<Register> => ((await import('./pull.js')) as Module).register;
const log = async (): Promise<Register> => ((await import('./log.js')) as Module).register;
const ls = async (): Promise<Register> => ((await import('./ls.js')) as Module).register;
const cat = async (): Promise<Register> => ((await import('./cat.js')) as Module).register;
const mount = async (): Promise<Register> => ((await import('./mount.js')) as Module).register;
const control = async (): Promise<Register> => ((await import('./control-cmds.js')) as Module).register;
const fork = async (): Promise<Register> => ((await import('./fork.js')) as Module).register;
const rollback = async (): Promise<Register> => ((await import('./rollback.js')) as Module).register;
const diff = async (): Promise<Register> => ((await import('./diff.js')) as Module).register;
const gc = async (): Promise<Register> => ((await import('./gc.js')) as Module).register;
const verify = async (): Promise<Register> => ((await import('./verify.js')) as Module).register;
const locality = async (): Promise<Register> => ((await import('./locality.js')) as Module).register;
const du = async (): Promise<Register> => ((await import('./du.js')) as Module).register;
const copy = async (): Promise<Register> => ((await import('./copy.js')) as Module).register;
const helper = async (): Promise<Register> => ((await import('./install-helper.js')) as Module).register;

export const COMMANDS: readonly CommandEntry[] = [
  { name: 'push', args: '[options] <dir> <home>', load: push, description: 'snapshot a directory as the new HEAD of <org>/<home> (prints the snapshot id); exit 5 if paths it could not read were left out' },
  { name: 'pull', args: '[options] <home> <dir>', load: pull, description: 'materialize a snapshot of <org>/<home> (HEAD unless @<snapshot>) into a new directory' },
  { name: 'log', args: '[options] <home>', load: log, description: 'list the snapshots of <org>/<home>, newest first' },
  { name: 'ls', args: '[options] <home> [path]', load: ls, description: 'list a directory (or one entry) of a snapshot of <org>/<home> (HEAD unless @<snapshot>)' },
  { name: 'cat', args: '[options] <home> <path>', load: cat, description: 'print a file of a snapshot of <org>/<home> (HEAD unless @<snapshot>)' },
  { name: 'mount', args: '[options] <home> <mountpoint>', load: mount, description: 'mount <org>/<home> at <mountpoint> (returns once the mount is live; the daemon keeps running)' },
  { name: 'sync', args: '[options] <mountpoint>', load: control, description: 'seal the mounted home now and print the snapshot id' },
  { name: 'sleep', args: '[options] <mountpoint>', load: control, description: 'final seal, unmount, and stop the daemon; exits 0 once the snapshot is committed' },
  { name: 'status', args: '[options] <mountpoint>', load: control, description: 'state, HEAD, dirty data, last seal, cache and fetch statistics of a mounted home' },
  { name: 'fork', args: '[options] <source> <target>', load: fork, description: 'create <org>/<new> whose HEAD is <org>/<home>[@snap] (no data copied; prints the new snapshot id)' },
  { name: 'rollback', args: '[options] <home> <snapshot>', load: rollback, description: 'make an old snapshot of <org>/<home> current again as a NEW generation (prints its id)' },
  { name: 'diff', args: '[options] <home> [b]', load: diff, description: 'paths added (A), removed (D) and modified (M) between two snapshots of a home' },
  { name: 'gc', args: '[options]', load: gc, description: 'delete store objects no retained snapshot references (older than --grace); reports bytes freed' },
  { name: 'verify', args: '[options] [home]', load: verify, description: 'check that every object the retained snapshots reference is present and intact; exit 4 on damage' },
  { name: 'locality', args: '[options] <home>', load: locality, description: "how much of <org>/<home>'s HEAD is in this host's block cache (bytes cached, total, ratio)" },
  { name: 'du', args: '[options] <target>', load: du, description: 'logical, unique and shared bytes of the homes of an org (HEADs), and the store total' },
  { name: 'copy', args: '[options] [target]', load: copy, description: 'copy the retained history of homes to another store (backup, replication), sending only what it lacks; exit 4 on damage' },
  { name: 'install-helper', args: '[options]', load: helper, description: 'install mount.homefs (and mount.fuse.homefs) in <prefix>/sbin so mount -t fuse.homefs and fstab work' },
  { name: 'uninstall-helper', args: '[options]', load: helper, description: 'remove what install-helper installed under <prefix>' },
];

/** The command `argv` names: its first word that is not an option (the program's options take no value). */
export function commandOf(argv: readonly string[]): CommandEntry | undefined {
  let i = argv.findIndex((a) => !a.startsWith('-'));
  // `homefs help <cmd>` shows that command's own help: it needs the real command.
  if (argv[i] === 'help') i = argv.findIndex((a, j) => j > i && !a.startsWith('-'));
  const word = i < 0 ? undefined : argv[i];
  return COMMANDS.find((c) => c.name === word);
}

/**
 * Adds the commands to `program`: the one `argv` runs from its module (with every option and argument),
 * the others as entries for --help only (name, usage term, description). An unknown command finds them all
 * listed, so commander's own "unknown command" error (with its suggestion) is unchanged.
 */
export async function registerCommands(program: Command, argv: readonly string[]): Promise<void> {
  const run = commandOf(argv);
  if (run) (await run.load())(program);
  for (const c of COMMANDS) {
    if (program.commands.some((k) => k.name() === c.name)) continue;
    program.command(c.name).description(c.description);
  }
  const terms = new Map(COMMANDS.map((c) => [c.name, `${c.name} ${c.args}`]));
  const help = new Help();
  program.configureHelp({ subcommandTerm: (cmd) => terms.get(cmd.name()) ?? help.subcommandTerm(cmd) });
}

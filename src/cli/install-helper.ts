/**
 * `homefs install-helper [--prefix /] [--systemd]` and `homefs uninstall-helper`: put the mount(8) helper
 * in `<prefix>/sbin` as mount.homefs and mount.fuse.homefs (mount -t fuse.homefs looks for the latter,
 * -t homefs for the former), with this node binary (HOMEFS_NODE) and this CLI baked in as absolute paths
 * (mount(8) and systemd run helpers with a minimal PATH); both run the CLI as a program (bin/homefs). With --systemd, also `homefs@.service` in
 * `<prefix>/etc/systemd/system`. Uninstall removes exactly these files.
 */
import { chmod, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { UserError, errorMessage } from '../util/errors.js';
import { makeDirs } from '../util/mkdirs.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const HELPER_SRC = join(REPO, 'mount-helper', 'mount.homefs');
const UNIT_SRC = join(REPO, 'mount-helper', 'homefs@.service');
const CLI = join(REPO, 'bin', 'homefs');

export interface InstalledPaths {
  helper: string;
  fuseHelper: string;
  unit: string;
}

export function installedPaths(prefix: string): InstalledPaths {
  const p = resolve(prefix);
  return { helper: join(p, 'sbin', 'mount.homefs'), fuseHelper: join(p, 'sbin', 'mount.fuse.homefs'), unit: join(p, 'etc', 'systemd', 'system', 'homefs@.service') };
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

async function render(src: string, edit: (text: string) => string): Promise<string> {
  try {
    return edit(await readFile(src, 'utf8'));
  } catch (e) {
    throw new UserError(`cannot read ${src}: ${errorMessage(e)} (is the homefs package complete?)`);
  }
}

async function write(path: string, text: string, mode: number): Promise<void> {
  try {
    await makeDirs(join(path, '..'), 0o755);
    await rm(path, { force: true });
    await writeFile(path, text, { mode });
    await chmod(path, mode);
  } catch (e) {
    throw new UserError(`cannot install ${path}: ${errorMessage(e)}`);
  }
}

export async function installHelper(prefix: string, systemd: boolean): Promise<string[]> {
  const paths = installedPaths(prefix);
  const node = process.execPath;
  const helper = await render(HELPER_SRC, (t) =>
    t
      .replace(/^HOMEFS_NODE=.*$/m, `HOMEFS_NODE="\${HOMEFS_NODE:-${node}}"`)
      .replace(/^HOMEFS_CLI=.*$/m, `HOMEFS_CLI="\${HOMEFS_CLI:-${CLI}}"`),
  );
  await write(paths.helper, helper, 0o755);
  await rm(paths.fuseHelper, { force: true });
  await symlink('mount.homefs', paths.fuseHelper);
  const done = [paths.helper, paths.fuseHelper];
  if (systemd) {
    // bin/homefs runs as a program (bash: it starts Node with the daemon's V8 flags), with this node binary.
    const unit = await render(UNIT_SRC, (t) => t.replace(/^ExecStart=\/usr\/local\/bin\/homefs /m, `Environment="HOMEFS_NODE=${node}"\nExecStart=${shellQuote(CLI)} `));
    await write(paths.unit, unit, 0o644);
    done.push(paths.unit);
  }
  return done;
}

export async function uninstallHelper(prefix: string): Promise<string[]> {
  const paths = installedPaths(prefix);
  const removed: string[] = [];
  for (const p of [paths.helper, paths.fuseHelper, paths.unit]) {
    try {
      await rm(p);
      removed.push(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new UserError(`cannot remove ${p}: ${errorMessage(e)}`);
    }
  }
  return removed;
}

export function register(program: Command): void {
  program
    .command('install-helper')
    .description('install mount.homefs (and mount.fuse.homefs) in <prefix>/sbin so mount -t fuse.homefs and fstab work')
    .option('--prefix <dir>', 'installation root', '/')
    .option('--systemd', 'also install homefs@.service in <prefix>/etc/systemd/system')
    .action(async (o: { prefix: string; systemd?: boolean }) => {
      for (const p of await installHelper(o.prefix, !!o.systemd)) process.stdout.write(`installed ${p}\n`);
    });
  program
    .command('uninstall-helper')
    .description('remove what install-helper installed under <prefix>')
    .option('--prefix <dir>', 'installation root', '/')
    .action(async (o: { prefix: string }) => {
      const removed = await uninstallHelper(o.prefix);
      for (const p of removed) process.stdout.write(`removed ${p}\n`);
      if (removed.length === 0) process.stdout.write(`nothing installed under ${resolve(o.prefix)}\n`);
    });
}

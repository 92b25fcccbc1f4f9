/**
 * Test support for snapshot round trips: builds the "Done when" home (small files, a 20 MiB and an 8 MiB
 * file, empty files, symlinks incl. dangling, hard links, a FIFO, exec/setuid/sticky bits, xattrs,
 * non-ASCII names, excluded scrap) and describes a tree's metadata independently of homefs (lstat with
 * ns times, hard-link groups, and `getfattr` for xattrs) so two trees can be compared.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, link, lstat, mkdir, readdir, readlink, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Names the round trip compares with `diff -r`, minus the FIFO (diff cannot compare FIFOs). */
export const FIFO_NAME = 'pipe';

export async function makeHomeTree(root: string, opts: { seed?: number; chown?: boolean } = {}): Promise<void> {
  const seed = opts.seed ?? 1;
  await mkdir(root, { recursive: true });
  await mkdir(join(root, 'projects/app/src'), { recursive: true });
  await mkdir(join(root, '.config/tool'), { recursive: true });
  await mkdir(join(root, 'ünïcødé 日本'), { recursive: true });
  for (let i = 0; i < 40; i++) {
    await writeFile(join(root, 'projects/app/src', `file${i}.ts`), `export const v${i} = ${i * seed};\n`.repeat(i + 1));
  }
  await writeFile(join(root, '.bashrc'), `export PS1='$ ' # ${seed}\n`);
  await writeFile(join(root, 'ünïcødé 日本', 'ファイル 🎉.txt'), 'non-ascii\n');
  await writeFile(join(root, 'big-20m.bin'), randomBytes(20 * 1024 * 1024));
  await writeFile(join(root, 'exact-8m.bin'), randomBytes(8 * 1024 * 1024));
  await writeFile(join(root, 'empty1'), '');
  await writeFile(join(root, '.config/tool/empty2'), '');
  await writeFile(join(root, 'run.sh'), '#!/bin/sh\necho hi\n');
  await chmod(join(root, 'run.sh'), 0o755);
  await writeFile(join(root, 'suid'), 'x');
  await chmod(join(root, 'suid'), 0o4750);
  await mkdir(join(root, 'sticky'));
  await chmod(join(root, 'sticky'), 0o1777);
  await writeFile(join(root, 'secret'), 'key');
  await chmod(join(root, 'secret'), 0o600);
  await symlink('projects/app/src/file1.ts', join(root, 'rel-link'));
  await symlink('/nonexistent/target', join(root, 'dangling'));
  await symlink('ünïcødé 日本', join(root, 'dir-link'));
  await writeFile(join(root, 'hard-a'), 'linked content\n');
  await link(join(root, 'hard-a'), join(root, 'projects/hard-b'));
  await link(join(root, 'hard-a'), join(root, 'hard-c'));
  execFileSync('mkfifo', ['-m', '0640', join(root, FIFO_NAME)]);
  execFileSync('setfattr', ['-n', 'user.origin', '-v', `seed-${seed}`, join(root, '.bashrc')]);
  execFileSync('setfattr', ['-n', 'user.bin', '-v', '0x00ff00', join(root, 'projects')]);
  execFileSync('setfattr', ['-n', 'user.empty', join(root, 'run.sh')]);
  if (opts.chown) await chown(join(root, 'secret'), 1234, 5678);
  await mkdir(join(root, 'projects/app/__pycache__'));
  await writeFile(join(root, 'projects/app/__pycache__/m.cpython-311.pyc'), 'scrap');
  await writeFile(join(root, 'projects/app/x.pyc'), 'scrap');
  await utimes(join(root, 'projects/app/src/file0.ts'), new Date('2001-02-03T04:05:06.789Z'), new Date('2001-02-03T04:05:06.789Z'));
}

/** One line per entry below `root` (sorted): kind, mode, owner, size, mtime ns, target, hard-link group. */
export async function describeTree(root: string): Promise<string[]> {
  const lines: string[] = [];
  const groups = new Map<string, string>();
  const visit = async (rel: string): Promise<void> => {
    const names = (await readdir(join(root, rel))).sort();
    for (const name of names) {
      const r = rel ? `${rel}/${name}` : name;
      const p = join(root, r);
      const st = await lstat(p, { bigint: true });
      const kind = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : st.isFIFO() ? 'fifo' : st.isFile() ? 'file' : 'other';
      let group = '';
      if (!st.isDirectory() && st.nlink > 1n) {
        const k = `${st.ino}`;
        if (!groups.has(k)) groups.set(k, r);
        group = ` link=${groups.get(k)} nlink=${st.nlink}`;
      }
      const target = st.isSymbolicLink() ? ` -> ${await readlink(p)}` : '';
      const size = st.isDirectory() ? '' : ` size=${st.size}`;
      lines.push(`${r} ${kind} mode=${(st.mode & 0o7777n).toString(8)} owner=${st.uid}:${st.gid}${size} mtime=${st.mtimeNs}${target}${group}`);
      if (st.isDirectory()) await visit(r);
    }
  };
  await visit('');
  return lines;
}

/** Every xattr below `root` per getfattr (not following symlinks), as sorted "path name=hex" lines. */
export function describeXattrs(root: string): string[] {
  const out = execFileSync('getfattr', ['-R', '-P', '-h', '-d', '-m', '-', '-e', 'hex', '.'], { cwd: root, encoding: 'utf8' });
  const lines: string[] = [];
  let file = '';
  for (const line of out.split('\n')) {
    if (line.startsWith('# file: ')) file = line.slice(8);
    else if (line.trim()) lines.push(`${file} ${line}`);
  }
  return lines.sort();
}

/**
 * Where processes stand (fs/cwds.ts): the working and root directories /proc links into the mount, resolved
 * through the records with every directory above them; nothing until a scan has finished; a scan per
 * `maxAgeMs` at most.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessDirs } from '../src/fs/cwds.js';

test('working and root directories in the mount, and the directories above them', async () => {
  const proc = mkdtempSync(join(tmpdir(), 'homefs-proc-'));
  try {
    const link = (pid: string, name: string, to: string): void => {
      mkdirSync(join(proc, pid), { recursive: true });
      symlinkSync(to, join(proc, pid, name));
    };
    link('10', 'cwd', '/home/agent/projects/app');
    link('10', 'root', '/');
    link('11', 'cwd', '/home/agent-other/x'); // another mount whose path starts the same
    link('12', 'cwd', '/home/agent/gone (deleted)');
    link('13', 'root', '/home/agent/jail');
    mkdirSync(join(proc, 'self'));
    const asked: string[][] = [];
    const dirs = new Map<string, number>([['', 1], ['projects', 2], ['projects/app', 3], ['jail', 4]]);
    const resolve = (names: string[]): number[] => {
      asked.push(names);
      const out: number[] = [];
      for (let i = 0; i <= names.length; i++) {
        const ino = dirs.get(names.slice(0, i).join('/'));
        if (ino === undefined) break;
        out.push(ino);
      }
      return out;
    };
    assert.equal(new ProcessDirs('/home/agent/', () => [], 1000, proc).current(0), undefined, 'nothing known before a scan');
    const p = new ProcessDirs('/home/agent/', resolve, 1000, proc);
    await p.scan();
    assert.deepEqual([...(p.current(Date.now()) ?? [])].sort(), [1, 2, 3, 4]);
    assert.deepEqual(asked.map((a) => a.join('/')).sort(), ['gone (deleted)', 'jail', 'projects/app']);
    assert.equal(p.current(Date.now() + 5000), undefined, 'stale after maxAgeMs: a new scan starts');
  } finally {
    rmSync(proc, { recursive: true, force: true });
  }
});

/**
 * The project's files speak of the project alone: no file under docs/, src/, bench/, test/ or fstests/, and
 * not README.md, names a numbered work session, an issue by its number or a git branch by its name (the
 * patterns are in WORDS, and the second test shows what each catches). History belongs in git; a reader of
 * the docs or the code must never wonder which piece of work a number or a choice came from.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const ROOTS = ['docs', 'src', 'bench', 'test', 'fstests', 'README.md'];
const SKIP_DIRS = new Set(['node_modules', 'dist', 'build', '__pycache__', '.git']);

// Built from parts, so that this file does not match itself.
const WORDS: Array<[string, RegExp]> = [
  ['a work session', new RegExp(['\\bsess', 'ion\\s+#?\\d'].join(''), 'i')],
  ['an issue number', new RegExp(['\\biss', 'ues?\\s+#?\\d'].join(''), 'i')],
  ['a branch', new RegExp(['\\bbra', 'nch\\s+`|`[\\w.-]+`\\s+bra', 'nch\\b'].join(''), 'i')],
];

/** Every file under `path` (or `path` itself), but for build output and dependencies. */
function files(path: string): string[] {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return [];
  if (st.isFile()) return [path];
  if (!st.isDirectory()) return [];
  const out: string[] = [];
  for (const e of readdirSync(path, { withFileTypes: true })) {
    if (e.isDirectory() && SKIP_DIRS.has(e.name)) continue;
    out.push(...files(join(path, e.name)));
  }
  return out;
}

/** The file's text, or undefined for a binary file (one with a NUL byte). */
function text(path: string): string | undefined {
  const b = readFileSync(path);
  return b.includes(0) ? undefined : b.toString('utf8');
}

test('no file of the project names a work session, an issue number or a branch', () => {
  const found: string[] = [];
  let checked = 0;
  for (const root of ROOTS) {
    for (const f of files(join(REPO, root))) {
      const t = text(f);
      if (t === undefined) continue;
      checked++;
      t.split('\n').forEach((line, i) => {
        for (const [what, re] of WORDS) {
          const m = re.exec(line);
          if (m) found.push(`${relative(REPO, f)}:${i + 1}: ${what}: "${m[0]}" in ${line.trim().slice(0, 120)}`);
        }
      });
    }
  }
  assert.ok(checked > 100, `only ${checked} files checked: is the repository root right (${REPO})?`);
  assert.deepEqual(found, [], `history belongs in git, not in the project's files:\n${found.join('\n')}`);
});

test('the check finds each kind of word it looks for', () => {
  const samples = ['as measured in Sess' + 'ion 10', 'see iss' + 'ue 13, item 2', 'the `wpath` bra' + 'nch', 'on bra' + 'nch `x`', 'iss' + 'ue #4'];
  for (const s of samples) assert.ok(WORDS.some(([, re]) => re.test(s)), `not caught: ${s}`);
  for (const s of ['a FUSE session', 'the session ends', 'an issue of memory', 'branches of the tree']) {
    assert.ok(!WORDS.some(([, re]) => re.test(s)), `caught by mistake: ${s}`);
  }
});

/**
 * Exclude patterns (gitignore subset): directory-only patterns anywhere, basename globs, anchored paths,
 * `**`, character classes, and the defaults from config.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_EXCLUDES, excludePatterns } from '../src/config.js';
import { Excludes } from '../src/format/excludes.js';
import { UserError } from '../src/util/errors.js';

test('default scrap class', () => {
  const x = new Excludes(DEFAULT_EXCLUDES);
  assert.ok(x.excluded('__pycache__', true));
  assert.ok(x.excluded('src/pkg/__pycache__', true));
  assert.ok(!x.excluded('src/pkg/__pycache__', false), 'a trailing / matches directories only');
  assert.ok(x.excluded('a/b/mod.pyc', false));
  assert.ok(x.excluded('x.tmp', false));
  assert.ok(!x.excluded('x.tmpl', false));
  assert.ok(x.excluded('.cache/pip', true), 'anchored path');
  assert.ok(!x.excluded('other/.cache/pip', true), 'anchored: not at depth');
  assert.ok(!x.excluded('.cache', true));
  assert.ok(x.excluded('.cache/ms-playwright', true));
  assert.ok(x.excluded('proj/.dartServer', true));
  assert.ok(!x.excluded('notes.md', false));
});

test('globs, classes, ** and leading /', () => {
  const x = new Excludes(['/build', 'logs/**', '**/tmp/', 'file[0-9].txt', 'f?o', 'draft[!s]', 'a\\*b']);
  assert.ok(x.excluded('build', true));
  assert.ok(!x.excluded('sub/build', true), 'leading / anchors');
  assert.ok(x.excluded('logs/a/b.log', false));
  assert.ok(!x.excluded('logs', true));
  assert.ok(x.excluded('tmp', true));
  assert.ok(x.excluded('deep/er/tmp', true));
  assert.ok(x.excluded('d/file7.txt', false));
  assert.ok(!x.excluded('d/fileX.txt', false));
  assert.ok(x.excluded('foo', false) && x.excluded('fxo', false) && !x.excluded('fo', false));
  assert.ok(x.excluded('draft1', false) && !x.excluded('drafts', false));
  assert.ok(x.excluded('a*b', false) && !x.excluded('axb', false), 'escaped *');
  assert.ok(!new Excludes(['a.c']).excluded('abc', false), '. is literal');
});

test('unsupported or malformed patterns are one-line user errors', () => {
  assert.throws(() => new Excludes(['!keep']), (e: unknown) => e instanceof UserError && /negation is not supported/.test(e.message));
  assert.throws(() => new Excludes(['[abc']), (e: unknown) => e instanceof UserError && /unclosed/.test(e.message));
  assert.throws(() => new Excludes(['/']), (e: unknown) => e instanceof UserError && /empty/.test(e.message));
});

test('HOMEFS_EXCLUDES and its alias override the defaults', () => {
  assert.deepEqual(excludePatterns({}), DEFAULT_EXCLUDES);
  assert.deepEqual(excludePatterns({ HOMEFS_EXCLUDES: 'node_modules/, *.log\n.venv/' }), ['node_modules/', '*.log', '.venv/']);
  assert.deepEqual(excludePatterns({ COVEY_HOME_EXCLUDES: 'a/' }), ['a/']);
  assert.deepEqual(excludePatterns({ HOMEFS_EXCLUDES: '' }), []);
});

/**
 * The bench suite's own plumbing (bench/lib): statistics over alternated rounds, the docs block writer
 * that must leave other people's sections of docs/benchmarks.md alone, deterministic generated data, and
 * chart rendering. The benchmarks themselves are not tests; these are fast checks of the code that
 * reports them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Prng } from '../bench/lib/prng.js';
import { readBlock, tableMd, writeBlock } from '../bench/lib/report.js';
import { Samples, alternate, minFinite, summarize } from '../bench/lib/stats.js';
import { barChartSvg } from '../bench/lib/svg.js';
import { cell, fmtBytes, fmtMs } from '../bench/lib/format.js';

test('summarize: median of odd and even counts, min and max', () => {
  assert.deepEqual(summarize([5, 1, 3]), { median: 3, min: 1, max: 5, n: 3 });
  assert.deepEqual(summarize([4, 1, 3, 2]), { median: 2.5, min: 1, max: 4, n: 4 });
  assert.equal(summarize([]).n, 0);
  assert.equal(minFinite(NaN, 3, 2), 2);
  assert.ok(Number.isNaN(minFinite(NaN)));
});

test('alternate runs peers in the same order every round and skips a failed peer afterwards', async () => {
  const s = new Samples();
  const order: string[] = [];
  await alternate(3, ['a', 'b'], s, async (peer, r) => {
    order.push(`${peer}${r}`);
    if (peer === 'b' && r === 1) throw new Error('boom');
    s.add(peer, 'ms', r);
  }, () => {});
  assert.deepEqual(order, ['a0', 'b0', 'a1', 'b1', 'a2']);
  assert.equal(s.get('a', 'ms').n, 3);
  assert.equal(s.failed.get('b'), 'boom');
});

test('writeBlock replaces only its own block and keeps the rest of the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-lib-'));
  try {
    const p = join(dir, 'benchmarks.md');
    writeFileSync(p, '# title\n\n## someone else\nkeep me\n');
    writeBlock(p, 'first');
    writeBlock(p, 'second');
    const text = readFileSync(p, 'utf8');
    assert.match(text, /## someone else\nkeep me/);
    assert.equal(text.split('<!-- bench/run:begin -->').length, 2);
    assert.equal(readBlock(p).trim(), 'second');
    writeFileSync(p, `${text}\n## added later\nalso keep\n`);
    writeBlock(p, 'third');
    assert.match(readFileSync(p, 'utf8'), /also keep/);
    assert.doesNotMatch(readFileSync(p, 'utf8'), /second/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Prng is deterministic per seed and differs across seeds', () => {
  assert.deepEqual(new Prng('x').bytes(1000), new Prng('x').bytes(1000));
  assert.notDeepEqual(new Prng('x').bytes(64), new Prng('y').bytes(64));
  const t = new Prng('t').text(500);
  assert.equal(t.length, 500);
  assert.match(t.toString('latin1'), /^[A-Za-z0-9+/=\n]+$/);
});

test('formatting and Markdown tables', () => {
  assert.equal(fmtMs(1500), '1.50 s');
  assert.equal(fmtMs(0.25), '250 µs');
  assert.equal(fmtBytes(3 * 1024 * 1024), '3.00 MiB');
  assert.equal(cell(summarize([1000, 3000, 2000]), fmtMs), '2.00 s (1.00 s–3.00 s)');
  const md = tableMd({ caption: 'c', columns: ['a', 'b|c'], rows: [['1', '2']] });
  assert.match(md, /\| a \| b\\\|c \|/);
  assert.match(md, /\| --- \| ---: \|/);
});

test('barChartSvg draws one bar per series and label, escaping text', () => {
  const svg = barChartSvg({ file: 'x.svg', title: 'a<b', unit: 's', labels: ['one', 'two'], series: [{ name: 'p', values: [1, 2] }, { name: 'q', values: [3, NaN] }] });
  assert.match(svg, /^<svg /);
  assert.match(svg, /a&lt;b/);
  assert.equal(svg.match(/<rect x="230"/g)?.length, 4);
  assert.match(svg, />n\/a</);
});

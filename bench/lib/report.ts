/**
 * What a scenario hands back (tables, charts, headline ratios) and how it becomes Markdown: bench/run
 * writes its part of docs/benchmarks.md between the `<!-- bench/run:begin -->` / `<!-- bench/run:end -->`
 * markers and leaves everything else in the file (other benchmarks' sections) untouched.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export interface Table {
  caption: string;
  columns: string[];
  rows: string[][];
}

export interface BarChart {
  file: string; // name under docs/bench/
  title: string;
  unit: string;
  /** Groups of bars: one group per label, one bar per series. */
  labels: string[];
  series: { name: string; values: number[] }[];
  log?: boolean;
}

export interface Headline {
  /** One line for the summary: "<what>: <ratio> (<detail>)". */
  text: string;
  /**
   * How much worse homefs is than the reference it should approach (>1: slower / bigger), used to name
   * the worst scenario; NaN when the headline is not a cost.
   */
  slowdown: number;
}

export interface Section {
  name: string;
  title: string;
  intro: string;
  tables: Table[];
  charts: BarChart[];
  headlines: Headline[];
  notes: string[];
}

export function tableMd(t: Table): string {
  const esc = (s: string): string => s.replaceAll('|', '\\|');
  return [
    `**${t.caption}**`,
    '',
    `| ${t.columns.map(esc).join(' | ')} |`,
    `| ${t.columns.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
    ...t.rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
    '',
  ].join('\n');
}

export function tableText(t: Table): string {
  const widths = t.columns.map((c, i) => Math.max(c.length, ...t.rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [t.caption, line(t.columns), ...t.rows.map(line)].join('\n');
}

export function sectionMd(s: Section): string {
  const out = [`### ${s.title}`, '', s.intro, ''];
  for (const t of s.tables) out.push(tableMd(t));
  for (const c of s.charts) out.push(`![${c.title}](bench/${c.file})`, '');
  if (s.headlines.length) out.push('Headlines:', '', ...s.headlines.map((h) => `- ${h.text}`), '');
  for (const n of s.notes) out.push(`> ${n}`, '');
  return out.join('\n');
}

const BEGIN = '<!-- bench/run:begin -->';
const END = '<!-- bench/run:end -->';
const marks = (tag: string): [string, string] => (tag === 'bench/run' ? [BEGIN, END] : [`<!-- ${tag}:begin -->`, `<!-- ${tag}:end -->`]);

/**
 * Replaces the block `tag` of `path` (creating the file or the block if absent): `bench/run` for the
 * scenarios, `bench/run --rtt` for the run over a real store.
 */
export function writeBlock(path: string, body: string, tag = 'bench/run'): void {
  const [BEGIN, END] = marks(tag);
  const block = `${BEGIN}\n${body.trim()}\n${END}`;
  const old = existsSync(path) ? readFileSync(path, 'utf8') : '# homefs benchmarks\n';
  const b = old.indexOf(BEGIN);
  const e = old.indexOf(END);
  const next = b >= 0 && e > b ? old.slice(0, b) + block + old.slice(e + END.length) : `${old.trimEnd()}\n\n${block}\n`;
  writeFileSync(path, next);
}

/** Reads the bench/run block of `path` back (for --only runs that update one section). */
export function readBlock(path: string, tag = 'bench/run'): string {
  const [BEGIN, END] = marks(tag);
  if (!existsSync(path)) return '';
  const old = readFileSync(path, 'utf8');
  const b = old.indexOf(BEGIN);
  const e = old.indexOf(END);
  return b >= 0 && e > b ? old.slice(b + BEGIN.length, e) : '';
}

/** One benchmark scenario: `bench/run --only <name>` runs just it. */
export interface Scenario {
  name: string;
  title: string;
  run(ctx: import('./context.js').Ctx): Promise<Section>;
}

/**
 * Grouped horizontal bar charts as standalone SVG (no network, no dependencies): one group per label, one
 * coloured bar per series, the value printed at the end of each bar, optional log scale for values that
 * span orders of magnitude.
 */
import type { BarChart } from './report.js';

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2'];

function esc(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return 'n/a';
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toPrecision(2);
}

export function barChartSvg(c: BarChart): string {
  const bar = 14;
  const gap = 10;
  const labelW = 230;
  const plotW = 460;
  const legendH = 22 * Math.ceil(c.series.length / 3);
  const groupH = c.series.length * bar + gap;
  const top = 40 + legendH;
  const height = top + c.labels.length * groupH + 30;
  const width = labelW + plotW + 90;
  const all = c.series.flatMap((s) => s.values).filter((v) => Number.isFinite(v) && v > 0);
  const max = all.length ? Math.max(...all) : 1;
  const min = all.length ? Math.min(...all) : 1;
  const lo = c.log ? Math.log10(min) - 0.3 : 0;
  const scale = (v: number): number => {
    if (!Number.isFinite(v) || v <= 0) return 0;
    if (!c.log) return (v / max) * plotW;
    return Math.max(2, ((Math.log10(v) - lo) / (Math.log10(max) - lo)) * plotW);
  };
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">${esc(c.title)} (${esc(c.unit)}${c.log ? ', log scale' : ''})</text>`,
  ];
  c.series.forEach((s, i) => {
    const x = 10 + (i % 3) * 240;
    const y = 32 + Math.floor(i / 3) * 22;
    out.push(`<rect x="${x}" y="${y}" width="12" height="12" fill="${COLORS[i % COLORS.length]}"/>`);
    out.push(`<text x="${x + 18}" y="${y + 11}">${esc(s.name)}</text>`);
  });
  c.labels.forEach((label, g) => {
    const y0 = top + g * groupH;
    out.push(`<text x="${labelW - 8}" y="${y0 + (c.series.length * bar) / 2 + 4}" text-anchor="end">${esc(label)}</text>`);
    c.series.forEach((s, i) => {
      const v = s.values[g] ?? NaN;
      const w = scale(v);
      const y = y0 + i * bar;
      out.push(`<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${bar - 2}" fill="${COLORS[i % COLORS.length]}"/>`);
      out.push(`<text x="${labelW + w + 4}" y="${y + bar - 4}" font-size="10">${fmt(v)}</text>`);
    });
  });
  out.push(`<line x1="${labelW}" y1="${top - 4}" x2="${labelW}" y2="${height - 26}" stroke="#444"/>`);
  out.push('</svg>');
  return out.join('\n');
}

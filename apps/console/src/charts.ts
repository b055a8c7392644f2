import { html } from './html.js';

/*
 * The console's pictures, as inline SVG drawn from counts the coordinator computed: no chart
 * library, nothing fetched. Each picture has a text alternative (role="img" and a label), and the
 * numbers are also printed beside it, so nothing is said by colour alone.
 */

export interface Bar {
  readonly label: string;
  readonly value: number;
  /** A CSS class giving the bar its colour (fill-ok, fill-warn, fill-bad, fill-grey, fill-accent). */
  readonly tone?: string;
}

/** Horizontal bars, one a row, each with its label and count; the longest bar spans the width. */
export function Bars({ bars, title, width = 420 }: { bars: readonly Bar[]; title: string; width?: number }) {
  const row = 22;
  const labelW = 130;
  const countW = 64;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const span = width - labelW - countW;
  const height = bars.length * row;
  return html`<svg class="chart bars" role="img" aria-label=${`${title}: ${bars.map((b) => `${b.label} ${b.value}`).join(', ')}`} viewBox=${`0 0 ${width} ${height}`} width=${width} height=${height}>
    ${bars.map(
      (b, i) => html`<g transform=${`translate(0 ${i * row})`}>
        <text class="chart-label" x=${labelW - 6} y=${row / 2 + 4} text-anchor="end">${b.label}</text>
        <rect class=${b.tone ?? 'fill-accent'} x=${labelW} y="3" height=${row - 6} width=${b.value === 0 ? 0 : Math.max(2, (span * b.value) / max)} rx="2" />
        <text class="chart-count" x=${labelW + (b.value === 0 ? 0 : Math.max(2, (span * b.value) / max)) + 6} y=${row / 2 + 4}>${b.value.toLocaleString('en')}</text>
      </g>`,
    )}
  </svg>`;
}

/** Vertical columns over ordered buckets (a histogram), each labelled below and counted above. */
export function Columns({ bars, title, width = 420, height = 160 }: { bars: readonly Bar[]; title: string; width?: number; height?: number }) {
  const top = 16;
  const bottom = 20;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const slot = width / Math.max(1, bars.length);
  const plot = height - top - bottom;
  return html`<svg class="chart columns" role="img" aria-label=${`${title}: ${bars.map((b) => `${b.label} ${b.value}`).join(', ')}`} viewBox=${`0 0 ${width} ${height}`} width=${width} height=${height}>
    <line class="axis" x1="0" x2=${width} y1=${height - bottom} y2=${height - bottom} />
    ${bars.map((b, i) => {
      const h = b.value === 0 ? 0 : Math.max(2, (plot * b.value) / max);
      const x = i * slot + slot * 0.15;
      return html`<g>
        <rect class=${b.tone ?? 'fill-accent'} x=${x} y=${height - bottom - h} width=${slot * 0.7} height=${h} rx="2" />
        <text class="chart-count" x=${i * slot + slot / 2} y=${height - bottom - h - 4} text-anchor="middle">${b.value.toLocaleString('en')}</text>
        <text class="chart-label" x=${i * slot + slot / 2} y=${height - 5} text-anchor="middle">${b.label}</text>
      </g>`;
    })}
  </svg>`;
}

export interface TimelinePoint {
  readonly seconds: number;
  readonly applied: number;
  readonly failed: number;
  readonly reverted: number;
}

/** "90s", "12m", "3h", "2d": an axis label. */
export function shortSpan(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}

/**
 * A publish's convergence: applied, failed and reverted stacked from the bottom and outstanding on
 * top, against time since the publish; the total is the full height.
 */
export function ConvergenceChart({
  points,
  total,
  width = 640,
  height = 200,
}: {
  points: readonly TimelinePoint[];
  total: number;
  width?: number;
  height?: number;
}) {
  if (points.length === 0 || total === 0) return null;
  const left = 44;
  const bottom = 22;
  const top = 8;
  const w = width - left - 8;
  const h = height - top - bottom;
  const end = Math.max(1, points[points.length - 1].seconds);
  const x = (s: number) => left + (w * s) / end;
  const y = (n: number) => top + h - (h * n) / total;
  // Stacked bands: each is the area between the cumulative sums below and including it.
  const layers: { name: string; tone: string; value: (p: TimelinePoint) => number }[] = [
    { name: 'applied', tone: 'fill-ok', value: (p) => p.applied },
    { name: 'failed', tone: 'fill-bad', value: (p) => p.failed },
    { name: 'reverted', tone: 'fill-reverted', value: (p) => p.reverted },
    { name: 'outstanding', tone: 'fill-warn', value: (p) => total - p.applied - p.failed - p.reverted },
  ];
  const areas = layers.map((layer, i) => {
    const below = (p: TimelinePoint) => layers.slice(0, i).reduce((sum, l) => sum + l.value(p), 0);
    const upper = points.map((p) => `${x(p.seconds).toFixed(1)},${y(below(p) + layer.value(p)).toFixed(1)}`);
    const lower = [...points].reverse().map((p) => `${x(p.seconds).toFixed(1)},${y(below(p)).toFixed(1)}`);
    return { ...layer, d: `M${upper.join(' L')} L${lower.join(' L')} Z` };
  });
  const last = points[points.length - 1];
  const label = `Convergence since the publish, over ${shortSpan(end)}: now ${last.applied} applied, ${last.failed} failed, ${last.reverted} reverted, ${total - last.applied - last.failed - last.reverted} outstanding of ${total}`;
  const ticks = [...new Set([0, 0.25, 0.5, 0.75, 1].map((f) => Math.round(end * f)))];
  return html`<figure class="convergence">
    <svg class="chart" role="img" aria-label=${label} viewBox=${`0 0 ${width} ${height}`} width=${width} height=${height}>
      ${areas.map((a) => html`<path class=${a.tone} d=${a.d}><title>${a.name}</title></path>`)}
      <line class="axis" x1=${left} x2=${left + w} y1=${top + h} y2=${top + h} />
      <line class="axis" x1=${left} x2=${left} y1=${top} y2=${top + h} />
      <text class="chart-label" x=${left - 4} y=${top + 8} text-anchor="end">${total.toLocaleString('en')}</text>
      <text class="chart-label" x=${left - 4} y=${top + h} text-anchor="end">0</text>
      ${ticks.map((t) => html`<text class="chart-label" x=${x(t)} y=${height - 5} text-anchor="middle">${shortSpan(t)}</text>`)}
    </svg>
    <figcaption class="legend">
      ${layers.map((l) => html`<span><svg width="12" height="12" aria-hidden="true"><rect class=${l.tone} width="12" height="12" /></svg> ${l.name}</span>`)}
      <span class="muted">time since the publish →</span>
    </figcaption>
  </figure>`;
}

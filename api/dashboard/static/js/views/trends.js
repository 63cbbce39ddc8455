// Viral trends of the newest judged window, in the API's order (rising or peaking first,
// then declining, each by score): what trends (its label), where, how abnormal, its status,
// and its velocity against its own baseline as a small chart. Calls (docs/dashboard.md):
//   GET /viral-trends?limit=50[&status=&platform=&entity_type=]

import {call} from '../api.js';
import {ChartSet, sparkline} from '../charts.js';
import {colorOf} from '../colors.js';
import {fill, h, linkOut, select, table} from '../dom.js';
import {dateTime, dec} from '../format.js';
import {whereFrom} from '../provenance.js';
import {empty, errorBox, loading} from '../states.js';

const filters = {status: '', platform: '', entity_type: ''};
const PLATFORMS = ['x', 'instagram', 'facebook', 'linkedin', 'tiktok', 'youtube', 'threads', 'bluesky', 'pinterest'];

/** Velocities of windows W5 … W0 (oldest first) from the evidence; a missing window is null. */
export function windows(trend) {
  const e = trend.evidence || {};
  const values = [null, null, null, null, null, trend.velocity];
  const observed = new Set(e.windows_observed || [0]);
  if (observed.has(1) && typeof e.previous_velocity === 'number') values[4] = e.previous_velocity;
  // The baseline's windows are this entity's own only when the baseline is its own.
  if (e.baseline_source === 'own') {
    (e.baseline_windows || []).forEach((w, i) => {
      const v = (e.baseline_velocities || [])[i];
      if (w >= 2 && w <= 5 && typeof v === 'number') values[5 - w] = v;
    });
  }
  return values;
}

export async function render(view, ctx) {
  const toolbar = h('form', {class: 'toolbar', 'aria-label': 'Trend filters', on: {submit: (e) => e.preventDefault()}},
    select('trend-status', 'Status', [['', 'Any status'], ['emerging', 'Emerging'], ['peaking', 'Peaking'], ['declining', 'Declining']],
      filters.status, (v) => { filters.status = v; load(); }),
    select('trend-platform', 'Platform', [['', 'Every platform'], ...PLATFORMS.map((p) => [p, p])],
      filters.platform, (v) => { filters.platform = v; load(); }),
    select('trend-type', 'What', [['', 'Posts, hashtags, topics'], ['post', 'Posts'], ['hashtag', 'Hashtags'], ['topic', 'Topics']],
      filters.entity_type, (v) => { filters.entity_type = v; load(); }));
  const body = h('div', {});
  fill(view, h('h1', {}, 'Viral trends'),
    h('p', {class: 'muted'}, 'Rising first: emerging and peaking trends, then declining ones, each by score: log2 of velocity + 1 over baseline + 1 (abnormal at 1 and above). Velocity is engagements per hour in the latest window; the dashed line is the entity\'s own baseline.'),
    toolbar, body);

  async function load() {
    view.dataset.state = 'loading';
    fill(body, loading('viral trends'));
    let page;
    try {
      page = await call('/viral-trends', {params: {limit: 50, ...filters}, signal: ctx.signal});
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      view.dataset.state = 'error';
      fill(body, errorBox(error, {retry: load}));
      return;
    }
    if (!page.items.length) {
      view.dataset.state = 'empty';
      fill(body, empty('No viral trends', 'A trend needs readings in its latest two windows and a baseline to compare them with, so a new store shows none until the pipeline has run a few times.',
        [['murmur pipeline run', 'read the platforms again (Dagster does hourly under murmur up)']]));
      return;
    }
    const charts = new ChartSet(page.items.length, () => { view.dataset.state = 'ready'; });
    ctx.setCharts(charts);
    const sparks = [];
    const rows = page.items.map((t, i) => {
      // the label names it; the platform id only stands in where nothing else names it
      const label = t.label || t.entity;
      const spark = h('div', {class: 'spark-box', role: 'img',
        'aria-label': `Velocity ${dec(t.velocity)} per hour against a baseline of ${dec(t.baseline)} per hour`});
      sparks.push([spark, t]);
      return {data: {trend: t.id, status: t.status}, cells: [
        String(i + 1),
        [h('span', {class: 'label'}, label), h('span', {class: 'muted small'}, ` ${t.entity_type}`)],
        t.platform || 'all',
        dec(t.score),
        h('span', {class: `chip status-${t.status}`}, t.status),
        [spark, h('span', {class: 'small'}, `${dec(t.velocity)}/h vs ${dec(t.baseline)}/h`)],
        linkOut(t.url, 'Open ↗') || h('span', {class: 'muted'}, '—'),
      ]};
    });
    fill(body, table({
      caption: 'Viral trends, rising first, then by score',
      className: 'trends',
      columns: [{title: '#', num: true}, {title: 'What', wide: true}, {title: 'Platform'}, {title: 'Score', num: true},
        {title: 'Status'}, {title: 'Velocity vs baseline'}, {title: 'Link'}],
      rows,
    }),
    h('p', {class: 'muted small'}, `Windows ending ${dateTime(page.items[0].window_end, ctx.tz)}; computed ${dateTime(page.snapshot?.computed_at, ctx.tz)}.`),
    whereFrom(page.provenance, ['score', 'velocity', 'baseline'], ctx.tz));
    for (const [el, t] of sparks) {
      sparkline(charts, el, {values: windows(t), baseline: t.baseline, color: colorOf(t.platform || 'total')});
    }
  }
  await load();
}

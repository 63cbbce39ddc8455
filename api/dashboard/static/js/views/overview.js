// Overview: totals against the previous period, engagement by platform over time, the
// engagement rate, followers, and how fresh the data is. Calls (docs/dashboard.md):
//   GET /analytics/unified  (range, granularity, tz, group_by=platform; every series page)
//   GET /analytics/unified  (the same, group_by=total: the rate and followers per bucket)
//   GET /analytics/unified  (the previous period, group_by=total, limit=1: its totals only)
//   GET /accounts?limit=1   (only when the range is empty: connect an account, or import)
//   GET /analytics/breakouts (since = 24 h ago, limit=100: the badge, views/breakouts.js)

import {call, unified} from '../api.js';
import {ChartSet, colorOf, timeChart} from '../charts.js';
import {card, fill, h, select, table} from '../dom.js';
import {ago, change, coverage, dateTime, num, pct, short} from '../format.js';
import {whereFrom} from '../provenance.js';
import {reliabilityCard} from './reliability.js';
import {breakoutBadge} from './breakouts.js';
import {empty, errorBox, loading} from '../states.js';
import {bucketStart, iso, shift, zones} from '../time.js';

// Over this, the data is called stale: the pipeline runs hourly (Dagster's schedule).
export const STALE_SECONDS = 3 * 3600;

// Each range is the last `count` buckets of `unit` in the chosen zone, the current one included.
const RANGES = {
  '24h': {label: 'Last 24 hours', unit: 'hour', count: 24, grains: ['hour']},
  '48h': {label: 'Last 48 hours', unit: 'hour', count: 48, grains: ['hour']},
  '7d': {label: 'Last 7 days', unit: 'day', count: 7, grains: ['hour', 'day']},
  '28d': {label: 'Last 28 days', unit: 'day', count: 28, grains: ['day', 'week']},
  '90d': {label: 'Last 90 days', unit: 'day', count: 90, grains: ['day', 'week', 'month']},
  '12w': {label: 'Last 12 weeks', unit: 'week', count: 12, grains: ['day', 'week']},
  '12m': {label: 'Last 12 months', unit: 'month', count: 12, grains: ['week', 'month']},
};
const GRAINS = {hour: 'Hour', day: 'Day', week: 'Week (from Monday)', month: 'Month'};
const STEPS = {hour: 3600, day: 86400, week: 7 * 86400, month: 30 * 86400};
// How the API counts (`basis`): growth when it happened, or each post's lifetime totals at
// its publication time (an export with one reading per post shows only the latter).
const BASES = {activity: 'Activity (when it happened)', published: 'Posts published (lifetime totals)'};
const METRICS = {
  engagements: 'Engagements', impressions: 'Impressions', views: 'Views', reach: 'Reach',
  likes: 'Likes', comments: 'Comments', shares: 'Shares', saves: 'Saves', clicks: 'Clicks',
};
const KPIS = [
  ['engagements', 'Engagements'],
  ['impressions', 'Impressions'],
  ['views', 'Views'],
  ['engagement_rate', 'Engagement rate'],
  ['posts', 'Posts published'],
  ['active_posts', 'Posts with activity'],
  ['followers', 'Followers (latest)'],
  ['follower_growth', 'Follower growth'],
];

// The pickers' choices, kept while the tab lives (the view is re-rendered on navigation).
const choice = {range: '28d', granularity: 'day', tz: null, metric: 'engagements', basis: 'activity'};

/** The range of the pickers: [from, to) and the previous period of as many buckets. */
export function period(rangeName, tz, now = Date.now()) {
  const range = RANGES[rangeName];
  const current = bucketStart(now, range.unit, tz);
  const from = shift(current, range.unit, -(range.count - 1), tz);
  const previousFrom = shift(from, range.unit, -range.count, tz);
  return {from: iso(from), to: iso(now), previousFrom: iso(previousFrom), previousTo: iso(from)};
}

function isEmpty(totals) {
  const counters = ['impressions', 'views', 'engagements', 'posts', 'active_posts'];
  return counters.every((name) => !totals[name]) && totals.followers === null
    && !(totals.first_seen && totals.first_seen.posts);
}

/** Series rows grouped by `key`, summed per bucket; no row (or only nulls) stays null. */
function grouped(rows, key, metric) {
  const buckets = [...new Set(rows.map((r) => r.bucket))].sort();
  const at = new Map(buckets.map((b, i) => [b, i]));
  const groups = new Map();
  for (const row of rows) {
    const name = key(row);
    if (!groups.has(name)) groups.set(name, buckets.map(() => null));
    const value = row[metric];
    if (value === null || value === undefined) continue;
    const values = groups.get(name);
    const i = at.get(row.bucket);
    values[i] = (values[i] ?? 0) + value;
  }
  return {buckets, x: buckets.map((b) => Date.parse(b) / 1000), groups};
}

/** Per bucket engagement rate: the API's (group_by=total), else recomputed from the sums. */
function rates(rows, echoedTotal) {
  if (echoedTotal) return grouped(rows, () => 'total', 'engagement_rate');
  const sums = ['engagements', 'impressions', 'views'].map((m) => grouped(rows, () => 'total', m));
  const [eng, imp, views] = sums.map((s) => s.groups.get('total') || []);
  const values = eng.map((e, i) => {
    if (e === null) return null;
    if (imp[i]) return e / imp[i];
    if (views[i]) return e / views[i];
    return null;
  });
  return {...sums[0], groups: new Map([['total', values]])};
}

function kpi(name, label, current, previous, rangeLabel, provenance, tz) {
  const value = current[name];
  const before = previous ? previous[name] : null;
  let delta;
  if (name === 'engagement_rate') {
    const points = value === null || before === null || before === undefined ? null : (value - before) * 100;
    delta = points === null
      ? {text: 'no earlier figure', direction: 'none'}
      : {text: `${points >= 0 ? '+' : '−'}${Math.abs(points).toFixed(2)} pts`, direction: points > 0 ? 'up' : points < 0 ? 'down' : 'flat'};
  } else {
    delta = change(value, before);
  }
  const shown = name === 'engagement_rate' ? pct(value) : num(value);
  // A rate says what it divides: its basis and what it leaves out (platforms, engagements).
  const covered = name === 'engagement_rate'
    ? coverage(current.engagement_rate_basis, current.engagement_rate_coverage) : null;
  const cov = current.engagement_rate_coverage;
  return h('div', {class: 'kpi', data: {metric: name, value: value ?? ''}},
    h('h3', {}, label),
    h('p', {class: 'kpi-value'}, shown),
    covered ? h('p', {class: 'muted coverage', title: covered.title, data: {
      basis: current.engagement_rate_basis,
      platforms: (cov.platforms || []).join(','),
      excluded: (cov.excluded_platforms || []).join(','),
      excludedShare: cov.excluded_engagements_share,
    }}, covered.text) : null,
    h('p', {class: `delta ${delta.direction}`, data: {previous: before ?? ''}},
      h('span', {class: 'visually-hidden'}, 'Change: '), delta.text,
      h('span', {class: 'muted'}, ` vs the previous ${rangeLabel}`)),
    whereFrom(provenance, [name], tz));
}

function freshness(snapshot, tz) {
  if (!snapshot || !snapshot.data_through) {
    return h('p', {class: 'freshness warn', role: 'status', data: {stale: 'unknown'}},
      'No pipeline run has computed these figures yet: run ', h('code', {}, 'murmur pipeline run'),
      ' (murmur up runs it at start, then Dagster hourly).');
  }
  const stale = snapshot.freshness_seconds !== null && snapshot.freshness_seconds > STALE_SECONDS;
  return h('p', {class: `freshness ${stale ? 'warn' : ''}`, role: stale ? 'alert' : 'status', data: {stale: stale ? 'yes' : 'no'}},
    stale ? h('strong', {}, 'Stale data: ') : null,
    `Data through ${dateTime(snapshot.data_through, tz)} (${ago(snapshot.freshness_seconds)}), computed ${dateTime(snapshot.computed_at, tz, false)}.`,
    stale ? ' Is the pipeline running? Dagster runs it hourly under murmur up; murmur pipeline run runs it once.' : null);
}

/** A platform's rate with its basis (platforms differ: impressions, views). */
function rateCell(p) {
  const covered = coverage(p.engagement_rate_basis, p.engagement_rate_coverage);
  if (!covered) return p.engagement_rate === null ? 'not measured' : pct(p.engagement_rate);
  return h('span', {title: covered.title}, pct(p.engagement_rate),
    h('span', {class: 'muted small'}, ` of ${p.engagement_rate_basis}`));
}

function platformTable(byPlatform) {
  const rows = [...byPlatform].sort((a, b) => (b.engagements || 0) - (a.engagements || 0));
  const columns = [{title: 'Platform', header: true}, ...['Engagements', 'Impressions', 'Views',
    'Engagement rate', 'Posts', 'Followers', 'Growth'].map((title) => ({title, num: true}))];
  return table({
    caption: 'Totals per platform over the range',
    columns,
    rows: rows.map((p) => ({data: {platform: p.platform}, cells: [
      [h('span', {class: 'swatch', data: {platform: p.platform}}), p.platform],
      num(p.engagements), num(p.impressions), num(p.views), rateCell(p),
      num(p.posts), num(p.followers), num(p.follower_growth),
    ]})),
  });
}

function summarize(label, x, groups) {
  let points = 0;
  let sum = 0;
  for (const values of groups.values()) {
    for (const v of values) {
      if (v !== null) {
        points += 1;
        sum += v;
      }
    }
  }
  return {points, sum, label};
}

async function emptyState(signal) {
  let accounts = null;
  try {
    accounts = (await call('/accounts', {params: {limit: 1}, signal})).items.length;
  } catch {
    accounts = null; // without accounts:read, say both
  }
  const imports = ['murmur import PATH --format youtube-trending|tweets|instagram-insights --workspace ws_…', 'import an export of your own accounts (docs/importers.md)'];
  if (accounts === 0) {
    return empty('Nothing to show yet: this workspace has no connected account',
      'Connect an account, or import an export, then run the pipeline.',
      [['murmur init', 'the test workspace, with a test account on each platform'], imports, ['murmur pipeline run', 'read the platforms and compute the figures']]);
  }
  return empty('No activity in this range',
    'Your accounts have no readings here yet. Run the pipeline (murmur up does, then hourly), import an export, or pick a longer range.',
    [['murmur pipeline run', 'read the platforms and compute the figures'], imports]);
}

export async function render(view, ctx) {
  choice.tz = choice.tz || ctx.tz;
  const controls = h('form', {class: 'toolbar', 'aria-label': 'Overview range', on: {submit: (e) => e.preventDefault()}});
  const body = h('div', {class: 'overview-body'});
  // the badge: ongoing breakouts of the last 24 h, hidden at 0 or on failure (views/breakouts.js)
  fill(view, h('h1', {}, 'Overview'), breakoutBadge(ctx), controls, body);
  let loader = null;

  function drawControls() {
    const range = RANGES[choice.range];
    if (!range.grains.includes(choice.granularity)) choice.granularity = range.grains.includes('day') ? 'day' : range.grains[0];
    fill(controls, 
      select('pick-range', 'Range', Object.entries(RANGES).map(([k, r]) => [k, r.label]), choice.range,
        (v) => { choice.range = v; drawControls(); load(); }),
      select('pick-granularity', 'Granularity', Object.entries(GRAINS).map(([k, label]) => [k, label, !range.grains.includes(k)]),
        choice.granularity, (v) => { choice.granularity = v; load(); }),
      select('pick-tz', 'Time zone', zones().map((z) => [z, z]), choice.tz,
        (v) => { choice.tz = v; load(); }),
      select('pick-metric', 'Chart', Object.entries(METRICS), choice.metric,
        (v) => { choice.metric = v; load(); }),
      select('pick-basis', 'Counted by', Object.entries(BASES), choice.basis,
        (v) => { choice.basis = v; load(); }));
  }

  async function load() {
    loader?.abort();
    loader = new AbortController();
    const signal = AbortSignal.any([ctx.signal, loader.signal]);
    const {range: rangeName, granularity, tz, metric, basis} = choice;
    const range = RANGES[rangeName];
    const when = period(rangeName, tz);
    view.dataset.state = 'loading';
    fill(body, loading('the overview'));
    // `basis` is sent only when it is not the API's default, so the default read is the plain one.
    const base = {from: when.from, to: when.to, granularity, tz, basis: basis === 'activity' ? null : basis};
    let byPlatform;
    let total;
    let previous;
    try {
      [byPlatform, total, previous] = await Promise.all([
        unified({...base, group_by: 'platform'}, {signal}),
        unified({...base, group_by: 'total'}, {signal}),
        call('/analytics/unified', {params: {...base, from: when.previousFrom, to: when.previousTo, group_by: 'total', limit: 1}, signal}),
      ]);
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) {
        ctx.failed(error);
        return;
      }
      view.dataset.state = 'error';
      fill(body, errorBox(error, {retry: load, signIn: ctx.signIn}));
      return;
    }
    const charts = new ChartSet(3, () => {
      performance.mark('murmur:overview-drawn');
      view.dataset.state = 'ready';
    });
    ctx.setCharts(charts);
    const rangeLabel = range.label.replace(/^Last /, '').toLowerCase();
    const totals = byPlatform.totals;
    const freshnessLine = freshness(byPlatform.snapshot, tz);
    if (isEmpty(totals)) {
      fill(body, freshnessLine, await emptyState(signal));
      view.dataset.state = 'empty';
      performance.mark('murmur:overview-drawn');
      return;
    }
    const grainName = GRAINS[granularity].split(' ')[0].toLowerCase();
    const first = totals.first_seen;
    const chartMain = h('div', {class: 'chart-box', data: {chart: 'by-platform'}, role: 'img',
      'aria-label': `${METRICS[metric]} per ${grainName} by platform, ${range.label.toLowerCase()}, times in ${tz}`});
    const chartRate = h('div', {class: 'chart-box', data: {chart: 'engagement-rate'}, role: 'img',
      'aria-label': `Engagement rate per ${grainName}, all platforms`});
    const chartFollowers = h('div', {class: 'chart-box', data: {chart: 'follower-growth'}, role: 'img',
      'aria-label': `Net new followers per ${grainName}, all platforms`});
    fill(body, 
      freshnessLine,
      h('div', {class: 'kpis', data: {range: `${when.from}/${when.to}`}},
        KPIS.map(([name, label]) => kpi(name, label, totals, previous.totals, rangeLabel, byPlatform.provenance, tz))),
      first && first.posts ? h('p', {class: 'muted first-seen'},
        `Not in these figures: ${num(first.posts)} posts first read in this range, with ${num(first.engagements)} engagements gathered before Murmur first read them (first-seen totals).`) : null,
      card(`${METRICS[metric]} per ${grainName}, by platform`, chartMain),
      h('div', {class: 'grid-2'},
        card(`Engagement rate per ${grainName}`, chartRate),
        card(`Follower growth per ${grainName}`, chartFollowers)),
      card('By platform', platformTable(byPlatform.by_platform)));

    const xLabel = `${GRAINS[granularity].split(' ')[0]} (${tz})`;
    const main = grouped(byPlatform.series.items, (r) => r.platform || 'total', metric);
    const names = [...main.groups.keys()].sort();
    const mainSeries = names.map((name, i) => ({label: name, color: colorOf(name, i), values: main.groups.get(name)}));
    Object.assign(chartMain.dataset, {
      buckets: String(main.x.length), first: main.buckets[0] || '', sum: String(summarize('', main.x, main.groups).sum),
    });
    timeChart(charts, chartMain, {x: main.x, series: mainSeries, tz, xLabel, step: STEPS[granularity], yLabel: `${METRICS[metric].toLowerCase()} per ${grainName}`});

    const echoedTotal = total.group_by === 'total';
    const rate = rates(total.series.items, echoedTotal);
    Object.assign(chartRate.dataset, {buckets: String(rate.x.length), first: rate.buckets[0] || ''});
    timeChart(charts, chartRate, {
      x: rate.x, series: [{label: 'engagement rate', color: colorOf('total'), values: rate.groups.get('total') || []}],
      tz, xLabel, step: STEPS[granularity], yLabel: `% of ${totals.engagement_rate_basis || 'impressions'}`, yFormat: pct, height: 220,
    });

    const growth = grouped(total.series.items, () => 'total', 'follower_growth');
    const growthValues = growth.groups.get('total') || [];
    if (growthValues.every((v) => v === null)) {
      chartFollowers.append(h('p', {class: 'muted'}, granularity === 'hour'
        ? 'Followers are daily figures: pick a granularity of a day or more.'
        : 'No follower readings in this range.'));
      charts.skip();
    } else {
      timeChart(charts, chartFollowers, {
        x: growth.x, series: [{label: 'net new followers', color: colorOf('total'), values: growthValues}],
        tz, xLabel, step: STEPS[granularity], yLabel: `followers gained per ${grainName}`, bars: true, height: 220, yFormat: short,
      });
    }
  }

  view.append(reliabilityCard(ctx)); // Publishing reliability: its own card, views/reliability.js
  drawControls();
  await load();
}

// Overview: totals against the previous period, engagement by platform over time, the
// engagement rate, followers, and how fresh the data is. Calls (docs/dashboard.md):
//   GET /analytics/unified  (range, granularity, tz, group_by=platform; every series page)
//   GET /analytics/unified  (the same, group_by=total: the rate and followers per bucket)
//   GET /analytics/unified  (the previous period, group_by=total, limit=1: its totals only)
//   GET /accounts?limit=1   (only when the range is empty: connect an account, or import)
//   GET /analytics/breakouts (since = 24 h ago, limit=100: the badge, views/breakouts.js)

import {call, session} from '../api.js';
import {ChartSet, timeChart} from '../charts.js';
import {colorOf} from '../colors.js';
import {card, fill, h, select, table} from '../dom.js';
import {NO_EARLIER, ago, change, coverage, dateTime, num, pct, short} from '../format.js';
import {whereFrom} from '../provenance.js';
import {reliabilityCard} from './reliability.js';
import {breakoutBadge} from './breakouts.js';
import {empty, errorBox, loading} from '../states.js';
import {bucketStart, shift, zones} from '../time.js';
import {DEFAULTS, DEFAULT_RANGE, RANGES, callsOf, period, takeEarly, whose} from './overview-calls.js';

export {period};

// Over this, the data is called stale: the pipeline runs hourly (Dagster's schedule).
export const STALE_SECONDS = 3 * 3600;

// Each range (views/overview-calls.js, RANGES) is the last `count` buckets of `unit` in the
// chosen zone, the current one included. One more, `span`, is the data's own: from its first
// day to now, the default when the data is shorter than the default range (`spanRange`).
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

// The pickers' choices, kept while the tab lives (the view is re-rendered on navigation);
// `picked`: the range is the person's own choice, kept, rather than the default.
const choice = {...DEFAULTS, picked: false, tz: null};
// Where the data starts, once read for a workspace and basis: {key, first (ms) or null, shorter}.
let learned = null;
const COUNTERS = [...Object.keys(METRICS), 'posts', 'active_posts', 'followers', 'follower_growth'];
const monthDay = (ms, tz) => new Intl.DateTimeFormat(undefined, {month: 'short', day: 'numeric', timeZone: tz}).format(new Date(ms));

/** Whose data the learned span is: the workspace and the basis (which buckets differently). */
function spanKey(basis) {
  return `${session()?.workspaceId || ''}|${basis}`;
}

/** The data's own range: its first day (in `tz`) up to now, as many days as that makes. */
export function spanRange(first, tz, now = Date.now()) {
  const start = bucketStart(first, 'day', tz);
  let count = 1;
  for (let day = start; shift(day, 'day', 1, tz) <= now; day = shift(day, 'day', 1, tz)) count += 1;
  return {
    label: `All data: since ${monthDay(start, tz)}`,
    said: `${count} day${count === 1 ? '' : 's'}`,
    unit: 'day', count, start, grains: count <= 7 ? ['hour', 'day'] : ['day', 'week'],
  };
}

/** The range a name stands for (`span` only once learned for this workspace and basis). */
function rangeOf(name, tz) {
  if (name === 'span' && learned?.first !== null && learned?.key === spanKey(choice.basis)) return spanRange(learned.first, tz);
  return RANGES[name] || RANGES[DEFAULT_RANGE];
}

/** The first instant with data in an answer: its first bucket with a figure, or its first reading. */
export function firstData(answer) {
  const times = [];
  const row = answer.series.items.find((r) => COUNTERS.some((m) => r[m] !== null && r[m] !== undefined));
  if (row) times.push(Date.parse(row.bucket));
  for (const source of answer.provenance?.sources || []) {
    if (source.first_read_at) times.push(Date.parse(source.first_read_at));
  }
  return times.length ? Math.min(...times) : null;
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
      ? {text: NO_EARLIER, direction: 'none'}
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

  /** Not picked: the default range, or the data's own span where shorter (once learned). */
  function resolveRange(key) {
    const was = choice.range;
    if (!choice.picked) choice.range = learned?.key === key && learned.shorter ? 'span' : DEFAULT_RANGE;
    else if (choice.range === 'span' && learned?.key !== key) choice.range = DEFAULT_RANGE;
    return choice.range !== was;
  }

  // The zones' picker: the chosen zone and UTC at first, every zone the browser knows (some
  // 400) once the overview is drawn, or as soon as the picker is focused or pressed; laying out
  // 400 options would cost the first view several milliseconds of the main thread.
  let zoneSelect = null;
  function zonePicker() {
    const field = select('pick-tz', 'Time zone', [...new Set([choice.tz, 'UTC'])].map((z) => [z, z]), choice.tz,
      (v) => { choice.tz = v; drawControls(); load(); });
    zoneSelect = field.querySelector('select');
    for (const event of ['focus', 'pointerdown', 'keydown']) zoneSelect.addEventListener(event, allZones, {once: true});
    return field;
  }
  function allZones() {
    if (!zoneSelect || zoneSelect.dataset.zones === 'all') return;
    const full = select('pick-tz', 'Time zone', zones().map((z) => [z, z]), choice.tz, () => {}).querySelector('select');
    zoneSelect.replaceChildren(...full.options);
    zoneSelect.value = choice.tz;
    zoneSelect.dataset.zones = 'all';
  }

  function drawControls() {
    const range = rangeOf(choice.range, choice.tz);
    if (!range.grains.includes(choice.granularity)) choice.granularity = range.grains.includes('day') ? 'day' : range.grains[0];
    const ranges = Object.entries(RANGES).map(([k, r]) => [k, r.label]);
    // The data's own span, once known, is one of the choices (first: the shortest).
    if (learned?.key === spanKey(choice.basis) && learned.shorter) ranges.unshift(['span', spanRange(learned.first, choice.tz).label]);
    fill(controls,
      select('pick-range', 'Range', ranges, choice.range,
        (v) => { choice.range = v; choice.picked = true; drawControls(); load(); }),
      select('pick-granularity', 'Granularity', Object.entries(GRAINS).map(([k, label]) => [k, label, !range.grains.includes(k)]),
        choice.granularity, (v) => { choice.granularity = v; load(); }),
      zonePicker(),
      select('pick-metric', 'Chart', Object.entries(METRICS), choice.metric,
        (v) => { choice.metric = v; load(); }),
      select('pick-basis', 'Counted by', Object.entries(BASES), choice.basis,
        (v) => { choice.basis = v; drawControls(); load(); }));
  }

  async function load() {
    try {
      await loadOnce();
    } finally {
      setTimeout(allZones, 0); // after the charts' first draw (uPlot draws in a microtask)
    }
  }

  async function loadOnce() {
    loader?.abort();
    loader = new AbortController();
    const signal = AbortSignal.any([ctx.signal, loader.signal]);
    const key = spanKey(choice.basis);
    if (resolveRange(key)) drawControls();
    const {range: rangeName, granularity, tz, metric, basis} = choice;
    const range = rangeOf(rangeName, tz);
    // The first load of the default range may find its calls on their way (js/early.js).
    const early = takeEarly({range: rangeName, granularity, tz, basis}, whose(), signal);
    const when = early ? early.when : period(range, tz);
    view.dataset.state = 'loading';
    fill(body, loading('the overview'));
    const calls = callsOf(when, {granularity, tz, basis});
    const ask = (name) => early?.have[name] ?? calls[name](signal);
    let byPlatform;
    let total = null;
    let previous;
    try {
      if (!choice.picked && learned?.key !== key) {
        // Where does the data start? The default range's per-bucket totals say (its first
        // bucket with a figure, its first reading); shorter than the range, the range is its.
        // (Started early, the other two calls were asked for already: they are given up.)
        total = await ask('total');
        const first = firstData(total);
        const shorter = first !== null && bucketStart(first, 'day', tz) > Date.parse(when.from);
        learned = {key, first, shorter};
        if (resolveRange(key)) drawControls();
        if (shorter) {
          early?.stop();
          await load();
          return;
        }
      }
      [byPlatform, total, previous] = await Promise.all([ask('byPlatform'), total ?? ask('total'), ask('previous')]);
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
    const rangeLabel = range.said || range.label.replace(/^Last /, '').toLowerCase();
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
      'aria-label': `${METRICS[metric]} per ${grainName} by platform, ${range.said ? `the ${range.said} since ${monthDay(range.start, tz)}` : range.label.toLowerCase()}, times in ${tz}`});
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

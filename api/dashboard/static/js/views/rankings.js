// Creators and competitors: rankings by the composite score, with each part's contribution
// (weight × z) drawn as a bar around zero. Calls (docs/dashboard.md):
//   GET /creators?limit=50[&cursor=…]      (more with "More", by pagination.next_cursor)
//   GET /competitors?limit=50[&cursor=…]

import {call} from '../api.js';
import {fill, h, linkOut, table} from '../dom.js';
import {coverage, dec, estimate, num, pct} from '../format.js';
import {whereFrom} from '../provenance.js';
import {empty, errorBox, loading} from '../states.js';

const PAGE = 50;
const PARTS = [['engagement_rate', 'Engagement'], ['growth_rate', 'Growth'], ['reach', 'Reach']];

/** The score's parts as bars: each contribution to the left (negative) or right of zero. */
function partsChart(parts, scale) {
  const rows = PARTS.map(([key, label]) => {
    const part = (parts || {})[key] || {};
    const value = typeof part.contribution === 'number' ? part.contribution : null;
    const bar = h('span', {class: `bar ${value !== null && value < 0 ? 'neg' : 'pos'}`});
    if (value !== null) {
      const width = Math.min(50, (Math.abs(value) / scale) * 50);
      bar.style.width = `${width}%`;
      bar.style[value < 0 ? 'right' : 'left'] = '50%';
    }
    return h('div', {class: 'part', title: part.measured === false
      ? `${label}: not measured for this group (weight ${dec(part.weight)})`
      : `${label}: ${dec(value)} = weight ${dec(part.weight)} × z ${dec(part.z)}`},
    h('span', {class: 'part-name'}, label),
    h('span', {class: 'track'}, bar),
    h('span', {class: 'part-value'}, part.measured === false ? 'n/m' : dec(value)));
  });
  const drawn = PARTS.filter(([key]) => typeof ((parts || {})[key] || {}).contribution === 'number').length;
  return h('div', {class: 'parts chart', data: {points: drawn}}, rows);
}

function scaleOf(rankings) {
  let max = 0.5;
  for (const r of rankings) {
    for (const [key] of PARTS) {
      const c = r?.parts?.[key]?.contribution;
      if (typeof c === 'number') max = Math.max(max, Math.abs(c));
    }
  }
  return max;
}

function who(r) {
  const label = r.label || (r.handle ? `@${r.handle.replace(/^@/, '')}` : r.account_external_id);
  return [h('span', {class: 'label'}, label), ' ', linkOut(r.url, '↗')];
}

/** A measured rate with its basis, or "not measured": never a prior in its place. */
function measured(rate, basis, cov) {
  if (rate === null || rate === undefined) return h('span', {class: 'muted', data: {measured: 'no'}}, 'not measured');
  const covered = coverage(basis, cov);
  return h('span', {data: {measured: 'yes'}, title: covered ? covered.title : null}, pct(rate),
    basis ? h('span', {class: 'muted small'}, ` of ${basis}`) : null);
}

/** A ranking's estimate, labelled as one (its prior and weight in the title). */
function estimated(est) {
  const said = estimate(est);
  return said ? h('span', {class: 'muted estimate', title: said.title}, said.text) : '—';
}

function creatorsTable(list) {
  const scale = scaleOf(list);
  return table({
    caption: 'Creators by composite score',
    className: 'rankings',
    columns: [{title: 'Rank', num: true}, {title: 'Creator', wide: true}, {title: 'Platform'},
      {title: 'Followers', num: true}, {title: 'Engagement rate (measured)', num: true},
      {title: 'Estimate (shrunk)', num: true}, {title: 'Growth', num: true},
      {title: 'Score', num: true}, {title: 'Score parts', wide: true}],
    rows: list.map((r) => ({data: {handle: r.handle}, cells: [
      num(r.rank),
      [who(r), r.category ? h('span', {class: 'muted small'}, ` ${r.category}`) : null],
      r.platform,
      num(r.followers),
      measured(r.engagement_rate, r.engagement_rate_basis, r.engagement_rate_coverage),
      estimated(r.engagement_rate_estimate),
      pct(r.growth_rate),
      dec(r.score),
      partsChart(r.parts, scale),
    ]})),
  });
}

/** Our rate in a benchmark: the unified answer's for the platform over its window. */
function ours(bench) {
  const window = bench?.our_window;
  const cell = measured(bench?.our_engagement_rate, bench?.our_engagement_rate_basis, bench?.our_engagement_rate_coverage);
  if (window) cell.title = `${cell.title ? `${cell.title} ` : ''}${window.from.slice(0, 10)} to ${window.to.slice(0, 10)} (UTC), as the overview counts it.`;
  return cell;
}

function competitorsTable(list) {
  const scale = scaleOf(list.map((c) => c.ranking));
  return table({
    caption: 'Tracked competitors, with a benchmark against your accounts',
    className: 'rankings',
    columns: [{title: 'Competitor', wide: true}, {title: 'Platform'}, {title: 'Rank', num: true},
      {title: 'Score', num: true}, {title: 'Their rate (measured)', num: true}, {title: 'Your rate', num: true},
      {title: 'Ratio', num: true}, {title: 'Followers (theirs / yours)', num: true}, {title: 'Score parts', wide: true}],
    rows: list.map((c) => ({data: {handle: c.handle}, cells: [
      c.ranking ? who({...c.ranking, label: c.label || c.ranking.label, url: c.url || c.ranking.url}) : who(c),
      c.platform,
      c.ranking ? num(c.ranking.rank) : 'not ranked yet',
      c.ranking ? dec(c.ranking.score) : '—',
      [measured(c.benchmark?.their_engagement_rate, c.benchmark?.their_engagement_rate_basis,
        c.ranking?.engagement_rate_coverage), c.ranking?.engagement_rate_estimate ? ' ' : null,
      c.ranking?.engagement_rate_estimate ? estimated(c.ranking.engagement_rate_estimate) : null],
      ours(c.benchmark),
      c.benchmark?.ratio == null ? '—' : `${dec(c.benchmark.ratio)}×`,
      `${num(c.benchmark?.their_followers)} / ${num(c.benchmark?.our_followers)}`,
      c.ranking ? partsChart(c.ranking.parts, scale) : h('span', {class: 'muted'}, 'after the next pipeline run'),
    ]})),
  });
}

/**
 * A ranking's card: its first page, then the next ones by "More" (the answer's
 * `pagination.next_cursor`), every row so far in one table (one scale for the score parts).
 */
function rankingCard(title, first, {path, tableOf, fields, none, ctx}) {
  const section = h('section', {class: 'card', data: {ranking: path.slice(1)}}, h('h2', {}, title));
  if (!first.items.length) {
    section.append(none);
    return section;
  }
  const items = [...first.items];
  let cursor = first.pagination?.next_cursor || null;
  const body = h('div', {class: 'ranking-rows'});
  const count = h('p', {class: 'muted small ranking-count', role: 'status'});
  const failure = h('div', {class: 'ranking-error'});
  const more = h('button', {type: 'button', class: 'secondary ranking-more', on: {click: () => next()}}, 'More');
  const draw = () => {
    fill(body, tableOf(items));
    count.textContent = `${num(items.length)} shown${cursor ? `; More loads the next ${PAGE}` : ', all of them'}.`;
    more.hidden = !cursor;
    more.disabled = false;
  };
  async function next() {
    more.disabled = true;
    failure.replaceChildren();
    let page;
    try {
      page = await call(path, {params: {limit: PAGE, cursor}, signal: ctx.signal});
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      more.disabled = false;
      fill(failure, errorBox(error, {retry: next}));
      return;
    }
    items.push(...page.items);
    cursor = page.pagination?.next_cursor || null;
    draw();
    if (cursor) more.focus();
  }
  draw();
  section.append(body, count, failure, more, whereFrom(first.provenance, fields, ctx.tz));
  return section;
}

export async function render(view, ctx) {
  fill(view, h('h1', {}, 'Creators & competitors'), loading('rankings'));
  let creators;
  let competitors;
  try {
    [creators, competitors] = await Promise.all([
      call('/creators', {params: {limit: PAGE}, signal: ctx.signal}),
      call('/competitors', {params: {limit: PAGE}, signal: ctx.signal}),
    ]);
  } catch (error) {
    if (error?.name === 'AbortError') return;
    if (error?.status === 401) return ctx.failed(error);
    view.dataset.state = 'error';
    fill(view, h('h1', {}, 'Creators & competitors'), errorBox(error, {retry: () => render(view, ctx)}));
    return;
  }
  fill(view, h('h1', {}, 'Creators & competitors'),
    h('p', {class: 'muted'}, 'Score = Σ weight × z over the parts: the engagement rate shrunk for small samples, follower growth, and reach; a part nobody in the group can measure weighs 0. Bars show each part\'s contribution. Rates are measured (their engagements over their impressions, else views); an estimate (est.) is the measured rate shrunk toward the group\'s mean, said as one.'),
    rankingCard('Competitors', competitors, {
      path: '/competitors', tableOf: competitorsTable, ctx,
      fields: ['engagement_rate', 'engagement_rate_estimate', 'composite_score', 'ratio'],
      none: empty('No competitor tracked', 'Track one with POST /api/public/v1/competitors ({"platform", "handle"}); the next pipeline run ranks it.'),
    }),
    rankingCard('Creators', creators, {
      path: '/creators', tableOf: creatorsTable, ctx,
      fields: ['engagement_rate', 'engagement_rate_estimate', 'growth_rate', 'composite_score'],
      none: empty('No creator ranked yet', 'Creators are ranked from the platforms\' creator accounts and creator imports.', [['murmur import PATH --format FORMAT --as creator', ''], ['murmur pipeline run', '']]),
    }));
  view.dataset.state = 'ready';
}

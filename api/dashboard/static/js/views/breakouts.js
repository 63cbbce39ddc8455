// Breakouts: own posts growing above the band their own history (or their account's, or the
// platform's posts at the same age) predicts, newest first; each row opens the windows it
// was judged on. And the overview's badge: how many started in the last 24 h and are still
// ongoing. Calls (docs/dashboard.md, Breakouts):
//   GET /analytics/breakouts?since=…&limit=50[&platform=…][&cursor=…]
//   GET /analytics/breakouts?since=<24 h ago>&limit=100   (the overview's badge)
// The fragment may name the filters (#/breakouts?since=24h&platform=x), so the badge links to
// what it counts; `limit` sets the page size.

import {call} from '../api.js';
import {fill, h, select, thead} from '../dom.js';
import {NONE, dateTime, dec} from '../format.js';
import {whereFrom} from '../provenance.js';
import {empty, errorBox, loading, pager} from '../states.js';

const PLATFORMS = ['x', 'instagram', 'facebook', 'linkedin', 'tiktok', 'youtube', 'threads', 'bluesky', 'pinterest'];
const PERIODS = {
  '24h': {label: 'Last 24 hours', hours: 24, said: 'the last 24 hours'},
  '7d': {label: 'Last 7 days', hours: 7 * 24, said: 'the last 7 days'},
  '30d': {label: 'Last 30 days', hours: 30 * 24, said: 'the last 30 days'},
};
const PAGE = 50;
const BADGE_LIMIT = 100;
const filters = {since: '7d', platform: ''};

// Engagements over a window: whole counts, predictions to one decimal.
const one = new Intl.NumberFormat(undefined, {maximumFractionDigits: 1});
const eng = (n) => (n === null || n === undefined ? NONE : one.format(n));

/** The instant `hours` before now, as the API takes it. */
export function sinceOf(hours, now = Date.now()) {
  return new Date(now - hours * 3600 * 1000).toISOString();
}

/** The fragment's parameters (#/breakouts?since=24h&platform=x&limit=2). */
function fragmentParams() {
  const query = window.location.hash.split('?')[1] || '';
  return new URLSearchParams(query);
}

/** A platform's post id, shortened: its head and tail (the whole id is the title). */
export function shortId(id) {
  const text = String(id ?? '');
  return text.length > 16 ? `${text.slice(0, 6)}…${text.slice(-6)}` : text;
}

/** What the prediction was made from, in words. */
export function methodText(evidence) {
  const e = evidence || {};
  if (e.method === 'own') return `its own last ${e.fit_windows} windows`;
  if (e.method === 'account_same_age') return "its account's posts at the same age";
  if (e.method === 'platform_same_age') return "the platform's posts at the same age";
  return e.method || NONE;
}

/** "123 vs 12.5 expected (6.1–30.2)": engagements over the first window above the band. */
export function versus(observed, expected, low, high) {
  return `${eng(observed)} vs ${eng(expected)} expected (${eng(low)}–${eng(high)})`;
}

function multipleText(multiple) {
  return multiple === null || multiple === undefined ? NONE : `${dec(multiple)}×`;
}

function who(b) {
  if (b.handle) return `@${b.handle} on ${b.platform}`;
  return `${b.platform} · account ${b.account_external_id}`;
}

/** How the band was made, in one line. */
function bandText(e) {
  const scope = e.calibration_scope === 'workspace' ? "the workspace's own posts" : `the platform's own posts`;
  let slope = '';
  if (e.slope_per_hour === 0) slope = '; the line held flat (a post is never forecast to grow faster)';
  else if (typeof e.slope_per_hour === 'number') slope = `; the line's slope ${dec(e.slope_per_hour)} ln per hour of age`;
  return `Band: the prediction ± ${dec(e.band_z)} σ, σ = ${dec(e.sigma)} (ln of velocity), measured on ${one.format(e.calibration_errors)} prediction errors of ${scope}${slope}.`;
}

function evidenceTable(b, tz) {
  const windows = b.evidence?.windows || [];
  const heads = ['Window', 'Age (h)', 'Hours', 'Observed', 'Expected', 'Band'];
  return h('table', {class: 'data evidence'},
    h('caption', {}, `Windows above the band, ${shortId(b.external_id)} (${b.platform})`),
    h('thead', {}, h('tr', {}, heads.map((title, i) => h('th', {scope: 'col', class: i ? 'num' : null}, title)))),
    h('tbody', {}, windows.map((w) => h('tr', {data: {end: w.end}},
      h('th', {scope: 'row', data: {label: heads[0]}}, `${dateTime(w.start, tz, false)} – ${dateTime(w.end, tz, false)}`),
      h('td', {class: 'num', data: {label: heads[1]}}, dec(w.age_hours)),
      h('td', {class: 'num', data: {label: heads[2]}}, dec(w.hours)),
      h('td', {class: 'num', data: {label: heads[3]}}, eng(w.observed)),
      h('td', {class: 'num', data: {label: heads[4]}}, eng(w.expected)),
      h('td', {class: 'num', data: {label: heads[5]}}, `${eng(w.band?.low)}–${eng(w.band?.high)}`)))));
}

const COLUMNS = [
  {title: 'Post', header: true},
  {title: 'Started'},
  {title: 'Observed vs expected (band)'},
  {title: 'Multiple', num: true},
  {title: 'Judged against'},
  {title: 'Status'},
  {title: 'Evidence'},
];

/** A breakout's row, and the row of its evidence (hidden until its button opens it). */
function rows(b, tz) {
  const detailId = `evidence-${b.id}`;
  const detail = h('tr', {class: 'breakout-evidence', id: detailId, hidden: true, data: {evidenceOf: b.id}},
    h('td', {colspan: COLUMNS.length},
      evidenceTable(b, tz),
      h('p', {class: 'muted small'}, bandText(b.evidence || {})),
      h('p', {class: 'muted small'},
        `Published ${dateTime(b.published_at, tz)}; latest window above the band ended ${dateTime(b.last_breakout_at, tz)}; `
        + `its peak window gained ${eng(b.peak_observed)} against ${eng(b.peak_expected)} expected.`)));
  const toggle = h('button', {type: 'button', class: 'secondary', 'aria-expanded': 'false', 'aria-controls': detailId,
    on: {click: () => {
      const open = toggle.getAttribute('aria-expanded') !== 'true';
      toggle.setAttribute('aria-expanded', String(open));
      detail.hidden = !open;
    }}}, `Windows (${(b.evidence?.windows || []).length})`);
  const ended = `ended; its latest window above the band ended ${dateTime(b.last_breakout_at, tz)}`;
  const cells = [
    [h('span', {class: 'post-id', title: b.external_id}, shortId(b.external_id)),
      h('span', {class: 'muted small who'}, h('span', {class: 'swatch', data: {platform: b.platform}}), who(b))],
    dateTime(b.started_at, tz, false),
    versus(b.observed, b.expected, b.band?.low, b.band?.high),
    multipleText(b.multiple),
    methodText(b.evidence),
    b.ongoing
      ? h('span', {class: 'chip breakout-ongoing', title: `latest window above the band ended ${dateTime(b.last_breakout_at, tz)}`}, 'ongoing')
      : h('span', {class: 'chip breakout-ended', title: ended}, 'ended'),
    toggle,
  ];
  const row = h('tr', {data: {breakout: b.id, platform: b.platform, ongoing: String(b.ongoing), startedAt: b.started_at}},
    cells.map((cell, i) => h(COLUMNS[i].header ? 'th' : 'td', {
      scope: COLUMNS[i].header ? 'row' : null,
      class: COLUMNS[i].num ? 'num' : null,
      data: {label: COLUMNS[i].title},
    }, cell)));
  return [row, detail];
}

/** When the answer's mart was computed (and on data through when, if the snapshot says). */
function computed(snapshot, tz) {
  if (!snapshot?.computed_at) return null;
  const through = snapshot.data_through ? `Judged on data through ${dateTime(snapshot.data_through, tz)}; computed` : 'Computed';
  return h('p', {class: 'muted small'}, `${through} ${dateTime(snapshot.computed_at, tz)}.`);
}

export async function render(view, ctx) {
  const asked = fragmentParams();
  if (PERIODS[asked.get('since')]) filters.since = asked.get('since');
  if (asked.has('platform')) filters.platform = PLATFORMS.includes(asked.get('platform')) ? asked.get('platform') : '';
  const size = Math.min(Math.max(Number.parseInt(asked.get('limit') || '', 10) || PAGE, 1), 100);

  const remember = () => {
    // The filters in the address, without a new history entry (nor a hashchange).
    const params = new URLSearchParams({since: filters.since});
    if (filters.platform) params.set('platform', filters.platform);
    if (size !== PAGE) params.set('limit', String(size));
    window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}#/breakouts?${params}`);
  };
  const toolbar = h('form', {class: 'toolbar', 'aria-label': 'Breakout filters', on: {submit: (e) => e.preventDefault()}},
    select('breakout-platform', 'Platform', [['', 'Every platform'], ...PLATFORMS.map((p) => [p, p])],
      filters.platform, (v) => { filters.platform = v; remember(); load(); }),
    select('breakout-since', 'Started', Object.entries(PERIODS).map(([k, p]) => [k, p.label]),
      filters.since, (v) => { filters.since = v; remember(); load(); }));
  const body = h('div', {class: 'breakouts-body'});
  fill(view, h('h1', {}, 'Breakouts'),
    h('p', {class: 'muted'}, 'Your own posts growing above the band their own history predicts (or, for a new post, its account\'s or the platform\'s posts at the same age), newest first. Figures are engagements over the first window above the band; the multiple is observed ÷ expected.'),
    toolbar, body);

  let loader = null;
  async function load() {
    loader?.abort();
    loader = new AbortController();
    const signal = AbortSignal.any([ctx.signal, loader.signal]);
    const period = PERIODS[filters.since];
    const params = {since: sinceOf(period.hours), limit: size, platform: filters.platform};
    view.dataset.state = 'loading';
    fill(body, loading('breakouts'));
    let page;
    try {
      page = await call('/analytics/breakouts', {params, signal});
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      view.dataset.state = 'error';
      // a missing scope is not fixed by trying again: no Retry for a 403
      fill(body, errorBox(error, {retry: error?.status === 403 ? undefined : load}));
      return;
    }
    if (!page.items.length) {
      view.dataset.state = 'empty';
      const where = filters.platform ? ` on ${filters.platform}` : '';
      fill(body, empty('No breakouts',
        `A breakout is one of your own posts growing faster than the band its own history predicts; none started in ${period.said}${where}.`),
      whereFrom(page.provenance, ['observed', 'expected', 'band'], ctx.tz));
      return;
    }
    const tbody = h('tbody', {});
    const shown = h('p', {class: 'muted small breakouts-count', role: 'status'});
    let count = 0;
    const add = (items) => {
      for (const b of items) tbody.append(...rows(b, ctx.tz));
      count += items.length;
      shown.textContent = `${count} breakout${count === 1 ? '' : 's'} shown, started in ${period.said}.`;
    };
    const after = (cursor) => call('/analytics/breakouts', {params: {...params, cursor}, signal});
    const {more, paging} = pager('breakouts-more', ctx, after, add);
    add(page.items);
    paging(page.pagination?.next_cursor);
    fill(body,
      h('div', {class: 'table-wrap'}, h('table', {class: 'data stack breakouts'},
        h('caption', {}, `Breakouts started in ${period.said}${filters.platform ? ` on ${filters.platform}` : ''}, newest first (times in ${ctx.tz})`),
        thead(COLUMNS),
        tbody)),
      shown,
      more,
      computed(page.snapshot, ctx.tz),
      whereFrom(page.provenance, ['observed', 'expected', 'band'], ctx.tz));
    view.dataset.state = 'ready';
  }
  await load();
}

/**
 * The overview's badge: breakouts started in the last 24 h that are still ongoing, a link to
 * them. One call; hidden when there are none or when the call fails (never a wrong figure).
 */
export function breakoutBadge(ctx) {
  const link = h('a', {class: 'breakout-badge', href: '#/breakouts?since=24h'});
  const line = h('p', {class: 'breakout-badge-line', hidden: true, data: {state: 'loading'}}, link);
  (async () => {
    let page;
    try {
      page = await call('/analytics/breakouts', {params: {since: sinceOf(24), limit: BADGE_LIMIT}, signal: ctx.signal});
    } catch {
      line.dataset.state = 'error'; // nothing shown: a failed call says no figure
      return;
    }
    const ongoing = page.items.filter((b) => b.ongoing === true).length;
    // More than one page: the first one's count is a lower bound, said as one.
    const atLeast = Boolean(page.pagination?.has_more);
    Object.assign(line.dataset, {state: 'ready', count: String(ongoing), atLeast: String(atLeast)});
    if (!ongoing) return;
    fill(link, h('strong', {}, `${atLeast ? 'at least ' : ''}${ongoing}`),
      ` ${ongoing === 1 && !atLeast ? 'breakout' : 'breakouts'} ongoing, started in the last 24 hours →`);
    line.hidden = false;
  })();
  return line;
}

// Experiments: posting-time experiments, each arm's posts and metric and its lift against the
// control with the 95 % interval, whether there is enough data, whether the result is
// conclusive, and the stop rule. Calls (docs/dashboard.md, Experiments):
//   GET /experiments?limit=25[&cursor=…]            (the list; more with "More")
//   GET /experiments/{id}                           (each listed one's leading lift; the detail)
//   POST /experiments/{id}/stop {abandon: false}    ("Stop early", only when the rule allows it)
//   POST /experiments/{id}/stop {abandon: true}     ("Abandon", behind a confirm on the page)
// #/experiments lists them (`limit=n` in the fragment sets the page size);
// #/experiments/<id> is one experiment.

import {call} from '../api.js';
import {colorOf} from '../colors.js';
import {fill, h, thead} from '../dom.js';
import {dateTime, num} from '../format.js';
import {empty, errorBox, loading, pager} from '../states.js';

const PAGE = 25;
const SVG = 'http://www.w3.org/2000/svg';
/** What a null figure says: the API has not measured it, which is never a zero. */
export const NOT_MEASURED = 'not measured yet';
const MINUS = '\u2212';
const NBSP = '\u00a0';

const METRICS = {
  engagements_24h: 'engagements at 24 h',
  engagements_48h: 'engagements at 48 h',
  engagement_rate: 'engagement rate at 48 h',
};
const STATUS = {
  running: 'running',
  completed: 'completed',
  stopped: 'stopped by the rule',
  abandoned: 'abandoned',
};
const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

const lifted = new Intl.NumberFormat(undefined, {
  style: 'percent', minimumFractionDigits: 1, maximumFractionDigits: 1, signDisplay: 'exceptZero',
});
const tick = new Intl.NumberFormat(undefined, {style: 'percent', maximumFractionDigits: 0, signDisplay: 'exceptZero'});
const count = new Intl.NumberFormat(undefined, {maximumFractionDigits: 1});
const rate = new Intl.NumberFormat(undefined, {style: 'percent', minimumFractionDigits: 2, maximumFractionDigits: 2});
const share = new Intl.NumberFormat(undefined, {style: 'percent', maximumFractionDigits: 1});
const probability = new Intl.NumberFormat(undefined, {maximumSignificantDigits: 2});

const missing = (v) => v === null || v === undefined;

/** A percentage the way the view writes lifts: "+12.3 %", "−4.1 %" (a real minus sign). */
function percentWith(format, r) {
  return format.formatToParts(r).map((part, i, parts) => {
    if (part.type === 'minusSign') return MINUS;
    // a space before the sign where the locale writes none ("12.3%" → "12.3 %")
    if (part.type === 'percentSign' && parts[i - 1]?.type !== 'literal') return `${NBSP}${part.value}`;
    return part.value;
  }).join('');
}

/** A relative change: "+12.3 %"; NOT_MEASURED when null. */
export function signedPercent(r) {
  return missing(r) ? NOT_MEASURED : percentWith(lifted, r);
}

/** A lift with its 95 % interval: "+12.3 % (−4.1 % to +31.0 %)"; NOT_MEASURED when null. */
export function liftText(lift) {
  if (!lift) return NOT_MEASURED;
  return `${signedPercent(lift.estimate)} (${signedPercent(lift.low)} to ${signedPercent(lift.high)})`;
}

/** A metric's value: engagements to one decimal, the rate as a percentage. */
export function metricValue(metric, value) {
  if (missing(value)) return NOT_MEASURED;
  return metric === 'engagement_rate' ? rate.format(value) : count.format(value);
}

const metricName = (metric) => METRICS[metric] || metric;

/** The non-control arm with the highest lift (null when none has one yet). */
export function leadingArm(detail) {
  const arms = (detail?.results?.arms || []).filter((a) => !a.control && a.lift);
  if (!arms.length) return null;
  return arms.reduce((best, a) => (a.lift.estimate > best.lift.estimate ? a : best));
}

function statusChip(status) {
  return h('span', {class: `chip experiment-status status-exp-${status}`, data: {status}}, STATUS[status] || status);
}

function slotText(slot) {
  return `${missing(slot.weekday) ? 'every day' : DAYS[slot.weekday]} ${slot.time}`;
}

/** The plan: "60 posts" or "until <ends_at>". */
function planText(e, tz) {
  if (!missing(e.target_posts)) return `${num(e.posts_assigned)} of ${num(e.target_posts)} posts assigned`;
  if (e.ends_at) return `${num(e.posts_assigned)} posts assigned; assigns until ${dateTime(e.ends_at, tz)}`;
  return `${num(e.posts_assigned)} posts assigned`;
}

/** The id of #/experiments/<id>, or null for the list. */
function fragment() {
  const [path, query] = window.location.hash.replace(/^#\/?/, '').split('?');
  const id = path.split('/')[1];
  return {id: id ? decodeURIComponent(id) : null, params: new URLSearchParams(query || '')};
}

// -- the list ---------------------------------------------------------------------------------

const COLUMNS = [
  {title: 'Experiment', header: true},
  {title: 'Status'},
  {title: 'Metric'},
  {title: 'Posts assigned', num: true},
  {title: "Leading arm's lift (95 % interval)"},
];

/** The leading arm's lift, from the experiment's detail (one call per listed experiment). */
async function leadingCell(cell, e, ctx) {
  let detail;
  try {
    detail = await call(`/experiments/${encodeURIComponent(e.id)}`, {signal: ctx.signal});
  } catch (error) {
    if (error?.name === 'AbortError') throw error;
    cell.dataset.state = 'error';
    fill(cell, h('span', {class: 'muted', title: `${error?.message || error} (${error?.code || 'error'})`}, 'could not be read'));
    return;
  }
  const arm = leadingArm(detail);
  cell.dataset.state = 'ready';
  if (!arm) {
    cell.dataset.measured = 'no';
    fill(cell, h('span', {class: 'muted'}, NOT_MEASURED));
    return;
  }
  cell.dataset.measured = 'yes';
  cell.dataset.arm = arm.name;
  fill(cell, h('span', {class: 'lead'}, h('span', {class: 'arm-name'}, `${arm.name}: `), liftText(arm.lift)));
}

function listRow(e, ctx) {
  const lift = h('td', {data: {label: COLUMNS[4].title, state: 'loading'}}, h('span', {class: 'muted'}, 'loading…'));
  const row = h('tr', {data: {experiment: e.id, status: e.status}},
    h('th', {scope: 'row', data: {label: COLUMNS[0].title}}, h('span', {class: 'experiment-head'},
      h('a', {href: `#/experiments/${encodeURIComponent(e.id)}`}, e.name),
      h('span', {class: 'muted small experiment-id'}, e.id))),
    h('td', {data: {label: COLUMNS[1].title}}, statusChip(e.status)),
    h('td', {data: {label: COLUMNS[2].title}}, metricName(e.metric)),
    h('td', {class: 'num', data: {label: COLUMNS[3].title}},
      missing(e.target_posts) ? num(e.posts_assigned) : `${num(e.posts_assigned)} of ${num(e.target_posts)}`),
    lift);
  return {row, loaded: leadingCell(lift, e, ctx)};
}

async function renderList(view, ctx, params) {
  const size = Math.min(Math.max(Number.parseInt(params.get('limit') || '', 10) || PAGE, 1), 100);
  const body = h('div', {class: 'experiments-body'}, loading('experiments'));
  fill(view, h('h1', {}, 'Experiments'),
    h('p', {class: 'muted'}, 'Posting-time experiments: each new post of an experiment is drawn an arm (a set of posting slots) at random and scheduled at its slot; each arm is compared with the control on the experiment\'s metric. The lift is the change of the typical post against the control, with its 95 % interval, which holds at the planned end.'),
    body);
  let page;
  try {
    page = await call('/experiments', {params: {limit: size}, signal: ctx.signal});
  } catch (error) {
    if (error?.name === 'AbortError') return;
    if (error?.status === 401) return ctx.failed(error);
    view.dataset.state = 'error';
    fill(body, errorBox(error, {retry: error?.status === 403 ? undefined : () => renderList(view, ctx, params)}));
    return;
  }
  if (!page.items.length) {
    view.dataset.state = 'empty';
    fill(body, empty('No experiment yet',
      'A posting-time experiment asks whether posts published at some times do better than at others. Start one with POST /api/public/v1/experiments (accounts, two to six arms of posting slots, one of them the control, a metric and a plan; docs/api/experiments.md), then make its posts with experiment_id: each is drawn an arm and scheduled at the arm\'s next free slot.',
      [['POST /api/public/v1/experiments', 'needs a key with automations:write'],
        ['POST /api/public/v1/posts {"experiment_id": "exp_…", …}', 'each post is drawn an arm']]));
    return;
  }
  const tbody = h('tbody', {});
  const shown = h('p', {class: 'muted small experiments-count', role: 'status'});
  let listed = 0;
  const add = (items) => {
    const loads = items.map((e) => {
      const {row, loaded} = listRow(e, ctx);
      tbody.append(row);
      return loaded;
    });
    listed += items.length;
    shown.textContent = `${num(listed)} experiment${listed === 1 ? '' : 's'} shown, newest first.`;
    return Promise.all(loads);
  };
  const after = (cursor) => call('/experiments', {params: {limit: size, cursor}, signal: ctx.signal});
  const {more, paging} = pager('experiments-more', ctx, after, add);
  fill(body,
    h('div', {class: 'table-wrap'}, h('table', {class: 'data stack experiments'},
      h('caption', {}, 'Experiments, newest first; the leading arm is the one with the highest lift against the control'),
      thead(COLUMNS),
      tbody)),
    shown,
    more);
  paging(page.pagination?.next_cursor);
  try {
    await add(page.items);
  } catch (error) {
    if (error?.name === 'AbortError') return;
    throw error;
  }
  view.dataset.state = 'ready';
}

// -- one experiment ---------------------------------------------------------------------------

/** An SVG element (attributes set one by one, text as a text node: no markup parsed). */
function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (!missing(value)) el.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (missing(child)) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Round steps for the lift axis (in fractions: 0.1 is 10 %). */
function ticksOf(low, high, wanted) {
  const raw = (high - low) / Math.max(1, wanted);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

/**
 * The lifts as intervals: one row per arm against the control, its estimate a point, its 95 %
 * interval a horizontal bar, and a line at zero (no change). Drawn at the box's width.
 */
function drawIntervals(box, detail) {
  const arms = detail.results.arms.map((a, i) => ({...a, color: colorOf(a.name, i)})).filter((a) => !a.control);
  const drawn = arms.filter((a) => a.lift);
  const width = Math.max(300, Math.round(box.clientWidth || 640));
  const label = Math.min(150, Math.round(width * 0.28));
  const right = 24;
  const rowHeight = 38;
  const top = 12;
  // no axis without a lift to place on it: each arm's row says it is not measured yet
  const height = top + arms.length * rowHeight + (drawn.length ? 34 : 0);
  let low = Math.min(0, ...drawn.map((a) => a.lift.low));
  let high = Math.max(0, ...drawn.map((a) => a.lift.high));
  if (high - low < 0.1) { low -= 0.05; high += 0.05; }
  const pad = (high - low) * 0.06;
  low -= pad;
  high += pad;
  const x = (v) => label + ((v - low) / (high - low)) * (width - label - right);
  const bottom = top + arms.length * rowHeight;
  const axis = !drawn.length ? [] : ticksOf(low, high, Math.max(3, Math.floor((width - label) / 90))).map((t) => [
    svg('line', {class: 'grid', x1: x(t), x2: x(t), y1: top - 4, y2: bottom}),
    svg('text', {class: 'tick', x: x(t), y: bottom + 16, 'text-anchor': 'middle'}, percentWith(tick, t)),
  ]);
  const rows = arms.map((a, i) => {
    const y = top + i * rowHeight + rowHeight / 2;
    const name = a.name.length > 18 ? `${a.name.slice(0, 17)}…` : a.name;
    const head = svg('text', {class: 'arm', x: label - 10, y: y + 4, 'text-anchor': 'end'}, svg('title', {}, a.name), name);
    if (!a.lift) {
      return svg('g', {'data-arm': a.name, 'data-measured': 'no'}, head,
        svg('text', {class: 'none', x: label + 8, y: y + 4}, NOT_MEASURED));
    }
    const l = a.lift;
    const said = `${a.name}: ${liftText(l)}`;
    return svg('g', {'data-arm': a.name, 'data-measured': 'yes'}, head,
      svg('title', {}, said),
      svg('line', {class: 'interval', x1: x(l.low), x2: x(l.high), y1: y, y2: y, stroke: a.color, 'data-arm': a.name}),
      svg('line', {class: 'cap', x1: x(l.low), x2: x(l.low), y1: y - 6, y2: y + 6, stroke: a.color}),
      svg('line', {class: 'cap', x1: x(l.high), x2: x(l.high), y1: y - 6, y2: y + 6, stroke: a.color}),
      svg('circle', {class: 'estimate', cx: x(l.estimate), cy: y, r: 5.5, fill: a.color, 'data-arm': a.name}),
      // the estimate's figure above its point, kept inside the plot
      svg('text', {class: 'value', x: Math.min(Math.max(x(l.estimate), label + 26), width - 30), y: y - 10, 'text-anchor': 'middle'},
        signedPercent(l.estimate)));
  });
  const control = detail.results.arms.find((a) => a.control);
  const chart = svg('svg', {
    class: 'interval-chart', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `Lift against the control ${control ? `(${control.name}) ` : ''}with 95 % intervals: ${arms.map((a) => `${a.name} ${liftText(a.lift)}`).join('; ')}`,
  },
  axis,
  drawn.length ? svg('line', {class: 'zero', x1: x(0), x2: x(0), y1: top - 6, y2: bottom + 2}) : null,
  rows);
  fill(box, chart);
  box.dataset.points = String(drawn.length);
}

function intervalChart(detail, ctx) {
  const control = detail.results.arms.find((a) => a.control);
  const box = h('div', {class: 'interval-box'});
  const figure = h('figure', {class: 'chart intervals', data: {points: '0'}},
    box,
    h('figcaption', {class: 'axis-title'},
      `Lift against the control${control ? ` (${control.name})` : ''}: the point is the estimate, the bar its 95 % interval; the line is no change.`));
  // drawn once in the page (it needs the box's width), again when that width changes
  let last = 0;
  const redraw = () => {
    const width = Math.round(box.clientWidth);
    if (!width || width === last) return;
    last = width;
    drawIntervals(box, detail);
    figure.dataset.points = box.dataset.points;
  };
  const observer = new ResizeObserver(redraw);
  observer.observe(box);
  ctx.signal.addEventListener('abort', () => observer.disconnect(), {once: true});
  return {figure, redraw};
}

const ARM_COLUMNS = [
  {title: 'Arm', header: true},
  {title: 'Posts assigned', num: true},
  {title: 'Published', num: true},
  {title: 'Measured', num: true},
  {title: 'Pending', num: true},
  {title: 'Metric (mean)', num: true},
  {title: 'Lift vs control (95 % interval)'},
];

function armTable(detail) {
  const metric = detail.metric;
  const rows = detail.results.arms.map((a, i) => {
    const slots = (detail.arms.find((s) => s.name === a.name)?.slots || []).map(slotText).join(', ');
    const swatch = h('span', {class: 'swatch'});
    swatch.style.background = colorOf(a.name, i);
    const mean = a.metric
      ? h('span', {data: {measured: 'yes'}, title: metric === 'engagement_rate' ? null : `The typical post (geometric mean): ${count.format(a.metric.geometric_mean)}`},
        metricValue(metric, a.metric.mean))
      : h('span', {class: 'muted', data: {measured: 'no'}}, NOT_MEASURED);
    let lift;
    if (a.control) lift = h('span', {class: 'muted'}, 'the control');
    else if (!a.lift) lift = h('span', {class: 'muted', data: {measured: 'no'}}, NOT_MEASURED);
    else {
      const p = missing(a.lift.p_value) ? ''
        : a.lift.p_value < 0.001 ? `p < ${probability.format(0.001)}, ` : `p = ${probability.format(a.lift.p_value)}, `;
      lift = h('span', {class: 'lift-cell'}, h('span', {class: 'lift', data: {measured: 'yes'}}, liftText(a.lift)),
        h('span', {class: 'muted small lift-detail'}, `${p}${num(a.lift.accounts)} account${a.lift.accounts === 1 ? '' : 's'}`));
    }
    const cells = [
      h('span', {class: 'arm-head'}, swatch, h('span', {class: 'arm-name'}, a.name),
        a.control ? [' ', h('span', {class: 'chip'}, 'control')] : null,
        h('span', {class: 'muted small slots'}, slots)),
      num(a.posts_assigned), num(a.posts_published), num(a.posts_measured), num(a.posts_pending),
      mean, lift,
    ];
    return h('tr', {data: {arm: a.name, control: String(a.control)}}, cells.map((cell, c) => h(
      ARM_COLUMNS[c].header ? 'th' : 'td',
      {scope: ARM_COLUMNS[c].header ? 'row' : null, class: ARM_COLUMNS[c].num ? 'num' : null, data: {label: ARM_COLUMNS[c].title}},
      cell)));
  });
  return h('div', {class: 'table-wrap'}, h('table', {class: 'data stack arms'},
    h('caption', {}, `Each arm: its posts, the ${metricName(metric)} of its measured posts, and its lift against the control`),
    thead(ARM_COLUMNS),
    h('tbody', {}, rows)));
}

/** One verdict line: a badge (yes / no) and what it means. */
function verdict(name, value, badge, text) {
  return h('li', {class: 'verdict', data: {verdict: name, value: String(value)}},
    h('span', {class: `chip ${value ? 'verdict-yes' : 'verdict-no'}`}, badge), ' ', text);
}

function verdicts(detail) {
  const r = detail.results;
  const mde = percentWith(share, detail.min_detectable_effect);
  const needed = r.posts_needed;
  const perArm = missing(needed.per_arm)
    ? `Posts needed: ${NOT_MEASURED} (until an arm has 2 measured posts in an account, the spread is not known).`
    : `Each arm needs ${num(needed.per_arm)} measured posts to find a lift of ${mde} (95 %, 80 % power, at the spread seen so far)`
      + (missing(needed.more) ? '.' : needed.more ? `: ${num(needed.more)} more over all arms.` : ': every arm has them.');
  let conclusive;
  if (r.conclusive) conclusive = detail.status === 'stopped' ? 'Conclusive: stopped by the rule, the plan was followed.' : 'Conclusive: the plan was followed to its end.';
  else if (detail.status === 'running') conclusive = 'Not conclusive yet: it is running, and the interval holds at the planned end.';
  else if (detail.status === 'abandoned') conclusive = 'Not conclusive: it was abandoned before its plan was done.';
  else conclusive = 'Not conclusive.';
  let stop;
  if (detail.status !== 'running') stop = `Nothing to stop: it is ${STATUS[detail.status] || detail.status}.`;
  else if (r.can_stop_early) stop = 'The stop rule allows stopping it now.';
  else stop = 'The stop rule does not allow stopping it early now.';
  const list = h('ul', {class: 'verdicts'},
    verdict('enough_data', r.enough_data, r.enough_data ? 'Enough data' : 'Not enough data', perArm),
    verdict('conclusive', r.conclusive, r.conclusive ? 'Conclusive' : 'Not conclusive', conclusive),
    verdict('can_stop_early', r.can_stop_early, r.can_stop_early ? 'May stop early' : 'May not stop early', stop));
  list.querySelector('[data-verdict=enough_data]').dataset.perArm = String(needed.per_arm ?? '');
  list.querySelector('[data-verdict=enough_data]').dataset.more = String(needed.more ?? '');
  return list;
}

/** What the figures are, where they come from (the answer's definitions and method). */
function whereFromDetail(detail, tz) {
  const r = detail.results;
  const names = [detail.metric, 'engagements', 'posts_measured', 'lift'].filter((n) => r.definitions[n]);
  const lines = [
    ...names.map((n) => `${n.replace(/_/g, ' ')}: ${r.definitions[n]}`),
    `The figures are GET /api/public/v1/experiments/${detail.id}'s, computed from the lake's readings of the experiment's published posts when asked; the newest reading read: ${r.measured_through ? dateTime(r.measured_through, tz) : 'none yet'}.`,
  ];
  return h('details', {class: 'where-from', data: {figures: names.join(',')}},
    h('summary', {title: lines.join('\n')}, 'Where from'),
    h('ul', {}, lines.map((line) => h('li', {}, line))));
}

/** Stop early (when the rule allows it) and abandon (behind a confirm on the page). */
function stopping(detail, ctx, shown) {
  const r = detail.results;
  const section = h('section', {class: 'card stopping'}, h('h2', {}, 'Stopping'),
    h('p', {class: 'stop-rule'}, h('strong', {}, 'Stop rule. '), r.stop_rule));
  if (detail.status !== 'running') {
    section.append(h('p', {class: 'muted'},
      detail.stopped_at
        ? `${detail.status === 'abandoned' ? 'Abandoned' : 'Stopped'} ${dateTime(detail.stopped_at, ctx.tz)}${detail.stop_reason ? `: ${detail.stop_reason}` : ''}.`
        : `It is ${STATUS[detail.status] || detail.status}: it assigns no more posts, and its posts' figures keep updating as they are read.`));
    return section;
  }
  const outcome = h('div', {class: 'stop-outcome', 'aria-live': 'polite'});
  const path = `/experiments/${encodeURIComponent(detail.id)}/stop`;
  const actions = h('div', {class: 'stop-actions'});
  async function stop(body, button) {
    button.disabled = true;
    outcome.replaceChildren(loading(body.abandon ? 'the abandon' : 'the stop'));
    let after;
    try {
      after = await call(path, {method: 'POST', body, signal: ctx.signal});
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      button.disabled = false;
      // a missing scope (automations:write) is not granted by trying again: no Retry
      fill(outcome, errorBox(error));
      return;
    }
    shown(after);
  }
  if (r.can_stop_early) {
    const early = h('button', {type: 'button', class: 'stop-early', on: {click: () => stop({abandon: false}, early)}}, 'Stop early');
    actions.append(early);
  }
  const reason = h('input', {id: 'abandon-reason', type: 'text', maxlength: '500', placeholder: 'optional'});
  const confirmBox = h('div', {class: 'confirm', role: 'group', 'aria-labelledby': 'abandon-question', hidden: true});
  const open = h('button', {type: 'button', class: 'secondary abandon', 'aria-expanded': 'false', 'aria-controls': 'abandon-confirm',
    on: {click: () => {
      confirmBox.hidden = false;
      open.setAttribute('aria-expanded', 'true');
      reason.focus();
    }}}, 'Abandon…');
  const yes = h('button', {type: 'button', class: 'danger abandon-confirm', on: {click: () => stop({abandon: true, reason: reason.value.trim() || null}, yes)}}, 'Abandon the experiment');
  const no = h('button', {type: 'button', class: 'secondary abandon-cancel', on: {click: () => {
    confirmBox.hidden = true;
    open.setAttribute('aria-expanded', 'false');
    open.focus();
  }}}, 'Keep it running');
  confirmBox.id = 'abandon-confirm';
  fill(confirmBox,
    h('p', {id: 'abandon-question'}, h('strong', {}, 'Abandon this experiment? '),
      'It assigns no more posts, whatever the stop rule says, and its results are marked not conclusive for good. This cannot be undone.'),
    h('div', {class: 'field'}, h('label', {for: 'abandon-reason'}, 'Reason'), reason),
    h('div', {class: 'row'}, yes, no));
  actions.append(open);
  section.append(
    h('p', {class: 'muted small'}, r.can_stop_early
      ? 'The rule allows stopping now: Stop early ends it with conclusive results.'
      : 'The rule does not allow stopping early now, so there is no Stop early; abandoning stops it with results that are not conclusive.'),
    actions, confirmBox, outcome);
  return section;
}

function detailPage(view, ctx, detail) {
  const r = detail.results;
  const tz = ctx.tz;
  const chart = intervalChart(detail, ctx);
  const summary = [
    statusChip(detail.status),
    ` · Metric: ${metricName(detail.metric)} · ${planText(detail, tz)} · ${num(detail.account_ids.length)} account${detail.account_ids.length === 1 ? '' : 's'} · slots in ${detail.timezone} · started ${dateTime(detail.created_at, tz)}`,
  ];
  fill(view,
    h('p', {class: 'back'}, h('a', {href: '#/experiments'}, '← All experiments')),
    h('h1', {}, detail.name),
    h('p', {class: 'muted experiment-summary'}, summary),
    h('section', {class: 'card results'}, h('h2', {}, 'Results'),
      verdicts(detail),
      chart.figure,
      armTable(detail),
      h('p', {class: 'muted small measured-through', data: {at: r.measured_through ?? ''}},
        r.measured_through
          ? `Measured through ${dateTime(r.measured_through, tz)}: the newest reading of the experiment's posts read.`
          : `Measured through: ${NOT_MEASURED} (no reading of its posts yet).`),
      whereFromDetail(detail, tz)),
    h('div', {class: 'grid-2'},
      stopping(detail, ctx, (after) => detailPage(view, ctx, after)),
      h('section', {class: 'card method'}, h('h2', {}, 'Method'),
        h('p', {class: 'method-text'}, r.method))));
  chart.redraw();
  view.dataset.state = 'ready';
  view.dataset.experiment = detail.id;
  view.dataset.status = detail.status;
}

async function renderDetail(view, ctx, id) {
  fill(view, h('p', {class: 'back'}, h('a', {href: '#/experiments'}, '← All experiments')),
    h('h1', {}, 'Experiment'), loading('the experiment'));
  let detail;
  try {
    detail = await call(`/experiments/${encodeURIComponent(id)}`, {signal: ctx.signal});
  } catch (error) {
    if (error?.name === 'AbortError') return;
    if (error?.status === 401) return ctx.failed(error);
    view.dataset.state = 'error';
    fill(view, h('p', {class: 'back'}, h('a', {href: '#/experiments'}, '← All experiments')),
      h('h1', {}, 'Experiment'),
      errorBox(error, {retry: error?.status === 403 ? undefined : () => renderDetail(view, ctx, id)}));
    return;
  }
  detailPage(view, ctx, detail);
}

export async function render(view, ctx) {
  const {id, params} = fragment();
  if (id) return renderDetail(view, ctx, id);
  return renderList(view, ctx, params);
}

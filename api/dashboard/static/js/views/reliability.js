// The overview's "Publishing reliability" card: how the posts due in the last 7 days went,
// read from their destinations. Call (docs/dashboard.md):
//   GET /analytics/publishing   (from = 7 days ago, to = now)
// The card is returned at once (loading) and filled when the answer comes; it has its own
// state (data-state: loading, ready, error), apart from the overview's charts.

import {call} from '../api.js';
import {h, fill, table} from '../dom.js';
import {NONE, dateTime, dec, num, pct} from '../format.js';
import {loading} from '../states.js';

const DAYS = 7;

function seconds(value) {
  return value === null || value === undefined ? NONE : `${dec(value)} s`;
}

function figure(name, label, value, shown, note) {
  return h('div', {class: 'kpi', data: {figure: name, value: value ?? ''}},
    h('h3', {}, label),
    h('p', {class: 'kpi-value'}, shown),
    note ? h('p', {class: 'muted small'}, note) : null);
}

function figures(t) {
  return h('div', {class: 'kpis'},
    figure('on_time_share', 'On time (within 60 s)', t.on_time_share, pct(t.on_time_share),
      `${num(t.on_time)} of ${num(t.published)} published`),
    figure('lateness', 'Lateness p50 / p99', t.lateness_p50_seconds,
      `${seconds(t.lateness_p50_seconds)} / ${seconds(t.lateness_p99_seconds)}`,
      'scheduled time to publication'),
    figure('failed', 'Failed', t.failed, num(t.failed),
      t.failed_share === null ? `of ${num(t.due)} due` : `${pct(t.failed_share)} of those settled`),
    figure('retried', 'Retried', t.retried, num(t.retried), `of ${num(t.due)} due`),
    figure('stuck', 'Stuck', t.stuck, num(t.stuck), 'publishing past twice their lease'),
    figure('tokens_expiring', 'Tokens expiring', t.tokens_expiring, num(t.tokens_expiring),
      `within ${DAYS} days, expired ones included`));
}

function reasons(byReason) {
  const rows = Object.entries(byReason).sort((a, b) => b[1] - a[1]);
  if (!rows.length) return null;
  return table({
    caption: 'Failed destinations by reason',
    className: 'reasons',
    columns: [{title: 'Failed by reason', header: true}, {title: 'Destinations', num: true}],
    rows: rows.map(([reason, count]) => ({data: {reason}, cells: [h('code', {}, reason), num(count)]})),
  });
}

function platforms(byPlatform) {
  if (!byPlatform.length) return null;
  const columns = [{title: 'Platform', header: true}, ...['Due', 'Published', 'On time', 'p50',
    'p99', 'Failed', 'Retried', 'Stuck'].map((title) => ({title, num: true}))];
  return table({
    caption: 'Publishing reliability per platform',
    columns,
    rows: byPlatform.map(({platform, figures: f}) => ({data: {platform}, cells: [
      [h('span', {class: 'swatch', data: {platform}}), platform],
      num(f.due), num(f.published), pct(f.on_time_share), seconds(f.lateness_p50_seconds),
      seconds(f.lateness_p99_seconds), num(f.failed), num(f.retried), num(f.stuck),
    ]})),
  });
}

function alerts(data, tz) {
  const lines = [];
  for (const stuck of data.stuck_destinations) {
    lines.push(h('li', {data: {destination: stuck.destination_id}},
      `${stuck.platform} destination ${stuck.destination_id} of post ${stuck.post_id}: publishing since ${dateTime(stuck.claimed_at, tz)}, stuck since ${dateTime(stuck.stuck_since, tz)}.`));
  }
  for (const token of data.tokens_expiring) {
    const when = dateTime(token.expires_at, tz);
    lines.push(h('li', {data: {account: token.account_id, expired: String(token.expired)}},
      `@${token.handle} on ${token.platform}: its token ${token.expired ? `expired ${when}` : `expires ${when}`}; reconnect the account.`));
  }
  if (!lines.length) return null;
  return h('div', {class: 'freshness warn reliability-alerts', role: 'alert'}, h('ul', {}, lines));
}

/** The card, filled once the API answers; `ctx` is the overview's (tz, signal). */
export function reliabilityCard(ctx) {
  const body = h('div', {}, loading('publishing reliability'));
  const card = h('section', {class: 'card reliability', data: {state: 'loading'}},
    h('h2', {}, 'Publishing reliability'), body);
  const to = new Date();
  const from = new Date(to.getTime() - DAYS * 86400 * 1000);
  const load = async () => {
    card.dataset.state = 'loading';
    fill(body, loading('publishing reliability'));
    let data;
    try {
      data = await call('/analytics/publishing', {
        params: {from: from.toISOString(), to: to.toISOString()}, signal: ctx.signal,
      });
    } catch (error) {
      if (error?.name === 'AbortError') return;
      card.dataset.state = 'error';
      // one line, not a second error box: a missing scope or a rate limit is the overview's
      // own error too, said (with its retry) once, above
      fill(body, h('p', {class: 'muted small'}, `Not shown: ${error?.message || 'the request failed'}.`));
      return;
    }
    const t = data.totals;
    fill(body,
      h('p', {class: 'muted small'}, `Posts due in the last ${DAYS} days: ${num(t.due)} destinations, ${num(t.published)} published, ${num(t.pending + t.publishing)} not settled yet.`),
      alerts(data, ctx.tz),
      figures(t),
      reasons(t.failed_by_reason),
      platforms(data.by_platform));
    Object.assign(card.dataset, {state: 'ready', due: String(t.due), from: data.range.from, to: data.range.to});
  };
  load();
  return card;
}

// Insights: one account's best times (weekday × hour, UTC) with the recommendation and its
// confidence, then the workspace's insight list. Calls (docs/dashboard.md):
//   GET /accounts?limit=100
//   GET /insights/best-times?account_id=acc_…
//   GET /insights?kind=best_time&account_id=acc_…   (the recommendation, if one was issued)
//   GET /insights?limit=50

import {call, items} from '../api.js';
import {fill, h, linkOut, select} from '../dom.js';
import {dateTime, dec, num} from '../format.js';
import {empty, errorBox, loading} from '../states.js';

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const chosen = {account: null};

/** A cell's colour: below average cool, above warm, by the shrunk index (1.0 is average). */
function shade(index) {
  if (index === null || index === undefined) return null;
  const t = Math.max(-1, Math.min(1, (index - 1) / 0.5));
  const hue = t >= 0 ? 24 : 212;
  const light = 97 - Math.abs(t) * 45;
  return `hsl(${hue} 85% ${light}%)`;
}

function heatCell(c, weekday, hour) {
  const slot = `${DAYS[weekday]} ${String(hour).padStart(2, '0')}:00 UTC`;
  if (!c || !c.posts) return h('td', {class: 'cell none', title: `${slot}: no post`});
  const td = h('td', {
    class: `cell conf-${c.confidence}`,
    title: `${c.label}: index ${dec(c.shrunk_index)} (raw ${dec(c.raw_index)}, ${dec(c.ci_low)}–${dec(c.ci_high)}), ${num(c.posts)} posts, ${c.confidence} confidence`,
  }, dec(c.shrunk_index));
  const color = shade(c.shrunk_index);
  if (color) td.style.backgroundColor = color;
  return td;
}

/** The grid: weekdays as rows at a laptop's width; at a phone's, hours as rows (7 columns fit). */
function heatmap(best) {
  const cells = new Map(best.grid.map((c) => [`${c.weekday}:${c.hour}`, c]));
  const hours = Array.from({length: 24}, (_, hour) => hour);
  const vertical = window.matchMedia('(max-width: 720px)').matches;
  const hh = (hour) => String(hour).padStart(2, '0');
  const head = vertical
    ? [h('th', {scope: 'col'}, 'UTC'), DAYS.map((day) => h('th', {scope: 'col'}, day))]
    : [h('th', {scope: 'col'}, 'UTC'), hours.map((hour) => h('th', {scope: 'col'}, hh(hour)))];
  const rows = vertical
    ? hours.map((hour) => h('tr', {}, h('th', {scope: 'row'}, `${hh(hour)}:00`),
      DAYS.map((_, weekday) => heatCell(cells.get(`${weekday}:${hour}`), weekday, hour))))
    : DAYS.map((day, weekday) => h('tr', {}, h('th', {scope: 'row'}, day),
      hours.map((hour) => heatCell(cells.get(`${weekday}:${hour}`), weekday, hour))));
  return [
    h('p', {class: 'muted small'}, `Engagement index by weekday and hour (UTC) for ${best.platform}: 1.0 is the account's average post, shrunk toward 1.0 where few posts back it.`),
    h('div', {class: 'table-wrap'}, h('table', {
      class: ['heatmap', 'chart', vertical ? 'vertical' : null],
      data: {points: best.grid.filter((c) => c.posts > 0).length},
    },
    h('caption', {class: 'visually-hidden'}, 'Best times: engagement index by weekday and hour, UTC'),
    h('thead', {}, h('tr', {}, head)),
    h('tbody', {}, rows))),
  ];
}

function recommendation(best, recs) {
  const parts = [];
  if (recs.length) {
    for (const r of recs) {
      parts.push(h('div', {class: 'recommendation', data: {kind: r.kind}},
        h('h3', {}, r.title), h('p', {}, r.body)));
    }
  }
  if (best.best.length) {
    parts.push(h('ol', {class: 'best'}, best.best.map((c) => h('li', {},
      h('strong', {}, c.label), ` — index ${dec(c.shrunk_index)} (${dec(c.ci_low)}–${dec(c.ci_high)}), `,
      h('span', {class: `chip conf-${c.confidence}`}, `${c.confidence} confidence`), `, ${num(c.posts)} posts`))));
  }
  if (!parts.length) {
    parts.push(h('p', {class: 'muted', data: {recommendation: 'none'}},
      'No recommendation yet: no slot is reliably above this account\'s average (a slot needs 3 or more posts and an interval wholly above 1.0).'));
  }
  return h('div', {class: 'recommendations'}, parts);
}

function insightList(list, tz) {
  if (!list.length) {
    return empty('No insights yet', 'Insights come from the pipeline\'s insight step once there is data.', [['murmur pipeline run', '']]);
  }
  return h('ul', {class: 'insights'}, list.map((i) => h('li', {class: 'insight', data: {kind: i.kind}},
    h('p', {class: 'small muted'}, h('span', {class: 'chip'}, i.kind.replace('_', ' ')), ` ${i.platform || 'all platforms'} · score ${dec(i.score)}`),
    h('h3', {}, i.title),
    h('p', {}, i.body),
    i.label ? h('p', {class: 'small'}, 'About: ', h('span', {class: 'label'}, i.label), ' ', linkOut(i.url, 'Open ↗')) : (linkOut(i.evidence?.url, 'Open ↗')),
    h('p', {class: 'small muted'}, `Computed ${dateTime(i.computed_at, tz)}`))));
}

export async function render(view, ctx) {
  fill(view, h('h1', {}, 'Insights'), loading('accounts and insights'));
  const {signal} = ctx;
  let accounts = [];
  let accountsError = null;
  let list;
  try {
    const [accountList, insightPage] = await Promise.all([
      items('/accounts', {signal}).catch((error) => {
        if (error?.status === 403) { accountsError = error; return {items: []}; }
        throw error;
      }),
      call('/insights', {params: {limit: 50}, signal}),
    ]);
    accounts = accountList.items;
    list = insightPage.items;
  } catch (error) {
    if (error?.name === 'AbortError') return;
    return ctx.failed(error);
  }
  const bestBox = h('div', {class: 'best-times'});
  const picker = accounts.length ? select('pick-account', 'Account', accounts.map((a) => [a.id, `${a.platform} · ${a.display_name || a.handle}`]),
    chosen.account, (v) => { chosen.account = v; loadBest(); }) : null;
  fill(view, h('h1', {}, 'Insights'),
    h('section', {class: 'card'}, h('h2', {}, 'Best times to post'),
      picker ? h('form', {class: 'toolbar', on: {submit: (e) => e.preventDefault()}}, picker) : null,
      accountsError ? errorBox(accountsError) : null,
      !accounts.length && !accountsError ? empty('No connected account', 'Best times are computed per connected account.', [['murmur init', 'the test workspace, with a test account on each platform']]) : null,
      bestBox),
    h('section', {class: 'card'}, h('h2', {}, 'Insights'), insightList(list, ctx.tz)));

  async function loadBest() {
    if (!accounts.length) {
      view.dataset.state = 'ready';
      return;
    }
    if (!accounts.some((a) => a.id === chosen.account)) chosen.account = accounts[0].id;
    view.dataset.state = 'loading';
    fill(bestBox, loading('best times'));
    try {
      const [best, recs] = await Promise.all([
        call('/insights/best-times', {params: {account_id: chosen.account}, signal}),
        call('/insights', {params: {kind: 'best_time', account_id: chosen.account, limit: 5}, signal}),
      ]);
      fill(bestBox, recommendation(best, recs.items), heatmap(best),
        h('p', {class: 'muted small'}, `Computed ${dateTime(best.computed_at, ctx.tz)}. Darker orange: above average; blue: below; blank: no post in that hour.`));
      view.dataset.state = 'ready';
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      view.dataset.state = 'error';
      fill(bestBox, errorBox(error, {retry: loadBest}));
    }
  }
  if (picker) picker.querySelector('select').value = chosen.account || accounts[0].id;
  await loadBest();
}

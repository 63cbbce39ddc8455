// Insights: one account's best times in a chosen zone (weekday × hour cells, 4-hour blocks of
// weekdays and weekends) with the recommendation, its interval and the posts that would make it
// confident, then the workspace's insight list. Calls (docs/dashboard.md):
//   GET /accounts?limit=100
//   GET /insights/best-times?account_id=acc_…&tz=…   (cells, blocks, the recommendation)
//   GET /insights?limit=50

import {call, items} from '../api.js';
import {fill, h, linkOut, select} from '../dom.js';
import {dateTime, dec, num} from '../format.js';
import {whereFrom} from '../provenance.js';
import {empty, errorBox, loading} from '../states.js';
import {zones} from '../time.js';

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
// The pickers' choices, kept while the tab lives; the zone starts as the dashboard's.
const chosen = {account: null, tz: null};

/** A cell's colour: below average cool, above warm, by the shrunk index (1.0 is average). */
function shade(index) {
  if (index === null || index === undefined) return null;
  const t = Math.max(-1, Math.min(1, (index - 1) / 0.5));
  const hue = t >= 0 ? 24 : 212;
  const light = 97 - Math.abs(t) * 45;
  return `hsl(${hue} 85% ${light}%)`;
}

function heatCell(c, weekday, hour, tz) {
  const slot = `${DAYS[weekday]} ${String(hour).padStart(2, '0')}:00 ${tz}`;
  if (!c || !c.posts) return h('td', {class: 'cell none', title: `${slot}: no post`});
  const td = h('td', {
    class: `cell conf-${c.confidence}`,
    title: `${c.label}: index ${dec(c.shrunk_index)} (raw ${dec(c.raw_index)} shrunk toward its block's ${dec(c.prior)}, interval ${dec(c.ci_low)}–${dec(c.ci_high)}), ${num(c.posts)} posts, ${c.confidence} confidence`,
  }, dec(c.shrunk_index));
  const color = shade(c.shrunk_index);
  if (color) td.style.backgroundColor = color;
  return td;
}

/** The grid: weekdays as rows at a laptop's width; at a phone's, hours as rows (7 columns fit). */
function heatmap(best) {
  const tz = best.tz;
  const cells = new Map(best.grid.map((c) => [`${c.weekday}:${c.hour}`, c]));
  const hours = Array.from({length: 24}, (_, hour) => hour);
  const vertical = window.matchMedia('(max-width: 720px)').matches;
  const hh = (hour) => String(hour).padStart(2, '0');
  const head = vertical
    ? [h('th', {scope: 'col'}, tz), DAYS.map((day) => h('th', {scope: 'col'}, day))]
    : [h('th', {scope: 'col'}, tz), hours.map((hour) => h('th', {scope: 'col'}, hh(hour)))];
  const rows = vertical
    ? hours.map((hour) => h('tr', {}, h('th', {scope: 'row'}, `${hh(hour)}:00`),
      DAYS.map((_, weekday) => heatCell(cells.get(`${weekday}:${hour}`), weekday, hour, tz))))
    : DAYS.map((day, weekday) => h('tr', {}, h('th', {scope: 'row'}, day),
      hours.map((hour) => heatCell(cells.get(`${weekday}:${hour}`), weekday, hour, tz))));
  return [
    h('p', {class: 'muted small'}, `Engagement index by weekday and hour (${tz}) for ${best.platform}: 1.0 is the account's average post; each hour is shrunk toward its 4-hour block where few posts back it.`),
    h('div', {class: 'table-wrap'}, h('table', {
      class: ['heatmap', 'chart', vertical ? 'vertical' : null],
      data: {points: best.grid.filter((c) => c.posts > 0).length, tz},
    },
    h('caption', {class: 'visually-hidden'}, `Best times: engagement index by weekday and hour, ${tz}`),
    h('thead', {}, h('tr', {}, head)),
    h('tbody', {}, rows))),
  ];
}

/** The 4-hour blocks of weekdays and weekends: the resolution the posts support best. */
function blockTable(best) {
  if (!best.blocks.length) return null;
  const rows = best.blocks.map((b) => {
    const td = h('td', {class: `num conf-${b.confidence}`}, dec(b.shrunk_index));
    const color = shade(b.shrunk_index);
    if (color) td.style.backgroundColor = color;
    return h('tr', {data: {block: `${b.day_type}:${b.start_hour ?? 'day'}`}},
      h('th', {scope: 'row'}, b.label), td,
      h('td', {class: 'num'}, `${dec(b.ci_low)}–${dec(b.ci_high)}`),
      h('td', {class: 'num'}, num(b.posts)),
      h('td', {class: 'num'}, dec(b.prior)),
      h('td', {}, h('span', {class: `chip conf-${b.confidence}`}, b.confidence)));
  });
  return h('div', {class: 'table-wrap'}, h('table', {class: 'blocks'},
    h('caption', {}, `Blocks of 4 hours (${best.tz}): each shrunk toward the platform's pattern`),
    h('thead', {}, h('tr', {}, ['Block', 'Index', 'Interval', 'Posts', "Platform's pattern", 'Confidence'].map((t) => h('th', {scope: 'col'}, t)))),
    h('tbody', {}, rows)));
}

function recommendation(best) {
  const rec = best.recommendation;
  const parts = [];
  if (rec) {
    const needed = rec.posts_needed;
    parts.push(h('div', {class: 'recommendation', data: {
      resolution: rec.resolution, confidence: rec.confidence, toldApart: String(rec.told_apart),
      ciLow: rec.ci_low, ciHigh: rec.ci_high,
    }},
    h('h3', {}, `Post on ${rec.label}`),
    h('p', {class: 'rec-figures'},
      h('strong', {}, `${dec(rec.shrunk_index)}× your average`),
      ` (95 % interval ${dec(rec.ci_low)}–${dec(rec.ci_high)}), ${num(rec.posts)} posts, `,
      h('span', {class: `chip conf-${rec.confidence}`}, `${rec.confidence} confidence`)),
    h('p', {class: 'small'}, rec.told_apart
      ? 'The interval lies wholly above 1.0: told apart from your average.'
      : 'The interval includes 1.0: it looks better, but the posts do not show it yet.'),
    h('p', {class: 'small muted', data: {postsNeeded: needed.high ?? ''}},
      needed.medium ? `${num(needed.medium)} more posts there for medium confidence; ` : '',
      needed.high === null ? 'no number of posts would make it high confidence this close to average.'
        : needed.high ? `about ${num(needed.high)} more for high confidence.` : 'high confidence reached.'),
    h('p', {class: 'small muted'}, `An estimate: the slot's own index (${dec(rec.raw_index)}) weighted ${dec(rec.weight)} against its prior ${dec(rec.prior)}.`)));
  }
  if (best.best.length) {
    parts.push(h('ol', {class: 'best'}, best.best.map((c) => h('li', {},
      h('strong', {}, c.label), ` — index ${dec(c.shrunk_index)} (${dec(c.ci_low)}–${dec(c.ci_high)}), `,
      h('span', {class: `chip conf-${c.confidence}`}, `${c.confidence} confidence`), `, ${num(c.posts)} posts`))));
  }
  if (!parts.length) {
    parts.push(h('p', {class: 'muted', data: {recommendation: 'none'}},
      'No recommendation yet: no slot of 3 or more posts is above this account\'s average.'));
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
  let listed;
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
    listed = insightPage.provenance;
  } catch (error) {
    if (error?.name === 'AbortError') return;
    return ctx.failed(error);
  }
  const bestBox = h('div', {class: 'best-times'});
  chosen.tz = chosen.tz || ctx.tz;
  const picker = accounts.length ? select('pick-account', 'Account', accounts.map((a) => [a.id, `${a.platform} · ${a.display_name || a.handle}`]),
    chosen.account, (v) => { chosen.account = v; loadBest(); }) : null;
  const zonePicker = accounts.length ? select('pick-best-tz', 'Time zone', zones().map((z) => [z, z]), chosen.tz,
    (v) => { chosen.tz = v; loadBest(); }) : null;
  fill(view, h('h1', {}, 'Insights'),
    h('section', {class: 'card'}, h('h2', {}, 'Best times to post'),
      picker ? h('form', {class: 'toolbar', on: {submit: (e) => e.preventDefault()}}, picker, zonePicker) : null,
      accountsError ? errorBox(accountsError) : null,
      !accounts.length && !accountsError ? empty('No connected account', 'Best times are computed per connected account.', [['murmur init', 'the test workspace, with a test account on each platform']]) : null,
      bestBox),
    h('section', {class: 'card'}, h('h2', {}, 'Insights'), insightList(list, ctx.tz),
      list.length ? whereFrom(listed, ['robust_z', 'rate_index', 'shrunk_index', 'ratio'], ctx.tz) : null));

  async function loadBest() {
    if (!accounts.length) {
      view.dataset.state = 'ready';
      return;
    }
    if (!accounts.some((a) => a.id === chosen.account)) chosen.account = accounts[0].id;
    view.dataset.state = 'loading';
    fill(bestBox, loading('best times'));
    try {
      const best = await call('/insights/best-times', {params: {account_id: chosen.account, tz: chosen.tz}, signal});
      fill(bestBox, recommendation(best), blockTable(best), heatmap(best),
        h('p', {class: 'muted small'}, `Computed ${dateTime(best.computed_at, ctx.tz)}. Darker orange: above average; blue: below; blank: no post in that hour.`),
        whereFrom(best.provenance, ['rate_index', 'shrunk_index'], chosen.tz));
      view.dataset.state = 'ready';
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      view.dataset.state = 'error';
      fill(bestBox, errorBox(error, {retry: loadBest}));
    }
  }
  if (picker) picker.querySelector('select').value = chosen.account || accounts[0].id;
  if (zonePicker) zonePicker.querySelector('select').value = chosen.tz;
  await loadBest();
}

// Posts: scheduled and published, each destination's status; a failed destination shows its
// error where it is seen, and all failures are summed up first. Calls (docs/dashboard.md):
//   GET /posts?limit=100[&cursor=…]
//   GET /posts/{post_id}/analytics   (the newest published post's, and any post's on demand)

import {call} from '../api.js';
import {ChartSet, timeChart} from '../charts.js';
import {colorOf} from '../colors.js';
import {fill, h, linkOut, sameOrigin} from '../dom.js';
import {dateTime, num, pct} from '../format.js';
import {empty, errorBox, loading} from '../states.js';

// What the view lists, said first on every state of it.
const ABOUT = 'Posts made through Murmur (its API, its queues and automations), with each destination\'s status as the workers publish them. Posts made on the platforms directly are not listed here; the overview counts those too.';
const heading = () => [h('h1', {}, 'Posts'), h('p', {class: 'muted posts-about'}, ABOUT)];

const UPCOMING = new Set(['draft', 'pending_approval', 'scheduled', 'publishing']);
const DONE = new Set(['published', 'partially_published', 'failed']);

function destination(d, tz) {
  const failed = d.status === 'failed';
  return h('li', {class: `destination ${failed ? 'failed' : ''}`, data: {status: d.status, platform: d.platform}},
    h('span', {class: 'platform'}, h('span', {class: 'swatch', data: {platform: d.platform}}), d.platform),
    h('span', {class: `chip status-${d.status}`}, d.status.replace('_', ' ')),
    d.published_at ? h('span', {class: 'small muted'}, ` ${dateTime(d.published_at, tz, false)}`) : null,
    ' ', linkOut(d.platform_url, 'View ↗'),
    failed || d.error ? h('div', {class: 'dest-error', role: 'alert'},
      h('strong', {}, `Failed on ${d.platform}: `),
      d.error ? `${d.error.message} (${d.error.code})` : 'no error was recorded') : null);
}

function postCard(post, tz, onAnalytics) {
  const failures = post.destinations.filter((d) => d.status === 'failed');
  const when = post.published_at
    ? `Published ${dateTime(post.published_at, tz)}`
    : post.scheduled_at ? `Scheduled for ${dateTime(post.scheduled_at, tz)}` : `Created ${dateTime(post.created_at, tz)}`;
  const analytics = h('div', {class: 'post-analytics'});
  return h('article', {class: `post ${failures.length ? 'has-failure' : ''}`, data: {post: post.id, status: post.status}},
    h('header', {},
      h('span', {class: `chip status-${post.status}`}, post.status.replace('_', ' ')),
      h('span', {class: 'small muted'}, ` ${when}`),
      post.tags?.length ? h('span', {class: 'small muted'}, ` · ${post.tags.map((t) => `#${t}`).join(' ')}`) : null),
    h('p', {class: 'post-text'}, post.text || '(no text: media only)'),
    h('ul', {class: 'destinations'}, post.destinations.map((d) => destination(d, tz))),
    DONE.has(post.status) ? h('button', {type: 'button', class: 'secondary', on: {click: () => onAnalytics(post, analytics)}}, 'Analytics') : null,
    analytics);
}

export async function render(view, ctx) {
  const posts = [];
  let cursor = null;
  const sets = []; // a ChartSet per post whose analytics are open
  ctx.setCharts({destroy: () => sets.forEach((set) => set.destroy())});

  async function showAnalytics(post, box) {
    fill(box, loading('the post\'s analytics'));
    try {
      const data = await call(`/posts/${encodeURIComponent(post.id)}/analytics`, {signal: ctx.signal});
      const days = [...new Set(data.destinations.flatMap((d) => d.series.map((p) => p.day)))].sort();
      const x = days.map((d) => Date.parse(d) / 1000);
      const series = data.destinations.filter((d) => d.series.length).map((d, i) => {
        const byDay = new Map(d.series.map((p) => [p.day, p.engagements]));
        return {label: d.label || d.platform, color: colorOf(d.platform, i), values: days.map((day) => byDay.get(day) ?? null)};
      });
      const chart = h('div', {class: 'chart-box', role: 'img', data: {chart: 'post-engagements'},
        'aria-label': 'Engagements per day (UTC) by destination'});
      fill(box, 
        h('p', {class: 'small'}, `All destinations: ${num(data.totals.engagements)} engagements, ${num(data.totals.impressions)} impressions, ${num(data.totals.views)} views, engagement rate ${pct(data.totals.engagement_rate)}.`),
        h('ul', {class: 'small'}, data.destinations.map((d) => h('li', {},
          h('span', {class: 'swatch', data: {platform: d.platform}}), `${d.platform}: `,
          h('span', {class: 'label'}, d.label || d.platform_post_id || 'not published'), ' ',
          linkOut(d.url, 'Open ↗'),
          // Thumbnails are remote: the page's policy loads images from this origin only.
          d.thumbnail_url && sameOrigin(d.thumbnail_url)
            ? h('img', {src: d.thumbnail_url, alt: '', class: 'thumb', loading: 'lazy'})
            : linkOut(d.thumbnail_url, ' thumbnail ↗')))),
        series.length ? chart : h('p', {class: 'muted'}, 'No readings yet: the pipeline reads a post after it is published.'));
      if (series.length) {
        const set = new ChartSet(1);
        sets.push(set);
        timeChart(set, chart, {x, series, tz: 'UTC', xLabel: 'Day (UTC)', yLabel: 'engagements per day', height: 200});
      }
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      fill(box, errorBox(error, {retry: () => showAnalytics(post, box)}));
    }
  }

  async function load() {
    view.dataset.state = 'loading';
    let page;
    try {
      page = await call('/posts', {params: {limit: 100, cursor}, signal: ctx.signal});
    } catch (error) {
      if (error?.name === 'AbortError') return;
      if (error?.status === 401) return ctx.failed(error);
      view.dataset.state = 'error';
      fill(view, heading(), errorBox(error, {retry: load}));
      return;
    }
    posts.push(...page.items);
    cursor = page.pagination.next_cursor;
    await draw();
  }

  async function draw() {
    const tz = ctx.tz;
    if (!posts.length) {
      fill(view, heading(), empty('No posts made through Murmur yet',
        'Posts created through the API (or its queues and automations) appear here, with each destination\'s status as the workers publish them.',
        [['POST /api/public/v1/posts', 'create one (README, "Publish")'], ['murmur worker', 'publishes due posts (murmur up runs it)']]));
      view.dataset.state = 'empty';
      return;
    }
    const failed = posts.flatMap((p) => p.destinations.filter((d) => d.status === 'failed').map((d) => [p, d]));
    const upcoming = posts.filter((p) => UPCOMING.has(p.status))
      .sort((a, b) => String(a.scheduled_at || a.created_at).localeCompare(String(b.scheduled_at || b.created_at)));
    const done = posts.filter((p) => DONE.has(p.status));
    const other = posts.filter((p) => !UPCOMING.has(p.status) && !DONE.has(p.status));
    const cards = new Map();
    const section = (title, list, id) => h('section', {class: 'card', 'aria-labelledby': id},
      h('h2', {id}, `${title} (${num(list.length)})`),
      list.length ? list.map((p) => {
        const el = postCard(p, tz, showAnalytics);
        cards.set(p.id, el);
        return el;
      }) : h('p', {class: 'muted'}, 'None.'));
    fill(view,
      heading(),
      failed.length ? h('div', {class: 'failures', role: 'alert', data: {failures: failed.length}},
        h('h2', {}, `${num(failed.length)} destination${failed.length === 1 ? '' : 's'} failed to publish`),
        h('ul', {}, failed.map(([p, d]) => h('li', {},
          h('strong', {}, d.platform), ': ', d.error ? `${d.error.message} (${d.error.code})` : 'no error recorded',
          h('span', {class: 'muted'}, ' — '), h('span', {class: 'post-text inline'}, (p.text || '').slice(0, 80)))))) : null,
      section('Scheduled', upcoming, 'posts-upcoming'),
      section('Published', done, 'posts-done'),
      other.length ? section('Canceled', other, 'posts-other') : null,
      cursor ? h('button', {type: 'button', class: 'secondary', on: {click: load}}, 'Load more posts') : null);
    // The newest published post's analytics are open from the start.
    const newest = done.find((p) => p.status !== 'failed');
    if (newest) await showAnalytics(newest, cards.get(newest.id).querySelector('.post-analytics'));
    view.dataset.state = 'ready';
  }

  fill(view, heading(), loading('posts'));
  await load();
}

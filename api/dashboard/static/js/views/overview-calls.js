// The overview's ranges and the calls a load of it makes (docs/dashboard.md, Overview), apart
// from its drawing: js/early.js starts the default range's calls with this module alone,
// before the page's other modules and uPlot have arrived, and views/overview.js takes them up.

import {abortable, call, session, unified} from '../api.js';
import {bucketStart, iso, shift} from '../time.js';

// Each range is the last `count` buckets of `unit` in the chosen zone, the current one included.
// One more, `span`, is the data's own (views/overview.js, `spanRange`).
export const DEFAULT_RANGE = '28d';
export const RANGES = {
  '24h': {label: 'Last 24 hours', unit: 'hour', count: 24, grains: ['hour']},
  '48h': {label: 'Last 48 hours', unit: 'hour', count: 48, grains: ['hour']},
  '7d': {label: 'Last 7 days', unit: 'day', count: 7, grains: ['hour', 'day']},
  '28d': {label: 'Last 28 days', unit: 'day', count: 28, grains: ['day', 'week']},
  '90d': {label: 'Last 90 days', unit: 'day', count: 90, grains: ['day', 'week', 'month']},
  '12w': {label: 'Last 12 weeks', unit: 'week', count: 12, grains: ['day', 'week']},
  '12m': {label: 'Last 12 months', unit: 'month', count: 12, grains: ['week', 'month']},
};
// What the pickers say before anyone picks (the zone is the browser's).
export const DEFAULTS = {range: DEFAULT_RANGE, granularity: 'day', metric: 'engagements', basis: 'activity'};

/** The range of the pickers: [from, to) and the previous period of as many buckets. */
export function period(range, tz, now = Date.now()) {
  const current = bucketStart(now, range.unit, tz);
  const from = range.start ?? shift(current, range.unit, -(range.count - 1), tz);
  const previousFrom = shift(from, range.unit, -range.count, tz);
  return {from: iso(from), to: iso(now), previousFrom: iso(previousFrom), previousTo: iso(from)};
}

/** Whose calls these are: the session's key and workspace (X-Workspace-Id). */
export function whose(current = session()) {
  return current?.key ? `${current.key}|${current.workspaceId || ''}` : null;
}

/**
 * A load's three calls, each to be made with a signal: the series by platform and per
 * bucket in total (every page of each), and the previous period's totals. `when` is
 * `period`'s answer.
 */
export function callsOf(when, {granularity, tz, basis}) {
  // `basis` is sent only when it is not the API's default, so the default read is the plain one.
  const base = {from: when.from, to: when.to, granularity, tz, basis: basis === 'activity' ? null : basis};
  return {
    total: (signal) => unified({...base, group_by: 'total'}, {signal}),
    byPlatform: (signal) => unified({...base, group_by: 'platform'}, {signal}),
    previous: (signal) => call('/analytics/unified', {
      params: {...base, from: when.previousFrom, to: when.previousTo, group_by: 'total', limit: 1}, signal}),
  };
}

// The default range's calls, started by js/early.js as the page loads (all three at once, the
// series by platform before the range is known to be the data's: see views/overview.js): taken
// once, by the overview's first load, when it asks for the same range, zone and key.
let early = null;
let asked = false; // the overview has loaded once: too late to start them

/** Start the default range's calls in `tz` for `who` (js/early.js). */
export function startEarly(tz, who, now = Date.now()) {
  if (asked) return;
  const controller = new AbortController();
  const when = period(RANGES[DEFAULT_RANGE], tz, now);
  const calls = callsOf(when, {...DEFAULTS, tz});
  const started = Object.fromEntries(Object.entries(calls).map(([name, make]) => {
    const promise = make(controller.signal);
    // Not taken (another view, another key), it ends unheard: never an unhandled rejection.
    promise.catch(() => {});
    return [name, promise];
  }));
  early = {tz, who, now, when, started, controller};
}

/**
 * The early calls, once: {when, have, stop} if they are the ones the overview's load of
 * `picked` (its pickers: range, granularity, tz, basis) would make for `who`, each given up
 * when `signal` is; else null (and any are stopped).
 */
export function takeEarly(picked, who, signal) {
  const found = early;
  early = null;
  asked = true;
  if (!found) return null;
  const same = picked.range === DEFAULT_RANGE && picked.granularity === DEFAULTS.granularity
    && picked.basis === DEFAULTS.basis && picked.tz === found.tz && who === found.who;
  if (!same || Date.now() - found.now > 30_000) {
    found.controller.abort();
    return null;
  }
  const stop = () => found.controller.abort();
  signal.addEventListener('abort', stop, {once: true});
  const have = Object.fromEntries(Object.entries(found.started).map(([name, p]) => {
    const taken = abortable(p, signal);
    taken.catch(() => {}); // the load awaits it, or has given it up: no unhandled rejection
    return [name, taken];
  }));
  return {when: found.when, have, stop};
}

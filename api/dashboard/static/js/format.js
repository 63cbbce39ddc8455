// Numbers and times in the browser's locale (Intl, locale `undefined`), times in a chosen zone.

const integer = new Intl.NumberFormat(undefined, {maximumFractionDigits: 0});
const decimal = new Intl.NumberFormat(undefined, {maximumFractionDigits: 2});
const compact = new Intl.NumberFormat(undefined, {notation: 'compact', maximumFractionDigits: 1});
const percent = new Intl.NumberFormat(undefined, {style: 'percent', maximumFractionDigits: 2});
const signedPercent = new Intl.NumberFormat(undefined, {
  style: 'percent', maximumFractionDigits: 1, signDisplay: 'exceptZero',
});
// A change too small for one decimal: its first significant digit ("+0.02%"), never "0%".
const smallPercent = new Intl.NumberFormat(undefined, {
  style: 'percent', maximumSignificantDigits: 1, signDisplay: 'exceptZero',
});
const signedInteger = new Intl.NumberFormat(undefined, {
  maximumFractionDigits: 0, signDisplay: 'exceptZero',
});
const relative = new Intl.RelativeTimeFormat(undefined, {numeric: 'auto'});
export const NONE = '—';

export const num = (n) => (n === null || n === undefined ? NONE : integer.format(n));
export const dec = (n) => (n === null || n === undefined ? NONE : decimal.format(n));
export const short = (n) => (n === null || n === undefined ? NONE : compact.format(n));
export const pct = (r) => (r === null || r === undefined ? NONE : percent.format(r));
export const signed = (n) => (n === null || n === undefined ? NONE : signedInteger.format(n));

/** What a change says when there is nothing before to compare with: one wording everywhere. */
export const NO_EARLIER = 'no earlier figure';

/**
 * The change of `current` against `previous`: a relative change; NO_EARLIER when either is
 * unknown, or when the previous period had none of it (0: no ratio to say).
 */
export function change(current, previous) {
  if (current === null || current === undefined || previous === null || previous === undefined) {
    return {text: NO_EARLIER, direction: 'none'};
  }
  if (previous === 0) {
    return current === 0
      ? {text: 'unchanged', direction: 'flat'}
      : {text: NO_EARLIER, direction: 'none'};
  }
  const ratio = (current - previous) / Math.abs(previous);
  if (ratio === 0) return {text: 'unchanged', direction: 'flat'};
  const text = signedPercent.format(ratio);
  return {
    text: /[+\-\u2212]/.test(text) ? text : smallPercent.format(ratio),
    direction: ratio > 0 ? 'up' : ratio < 0 ? 'down' : 'flat',
  };
}

// One formatter per zone, made once: the overview says some 150 instants (each figure's
// sources' first and last readings), and making an Intl.DateTimeFormat costs far more than
// using one.
const dateTimes = new Map();

/** An ISO instant as a date and time in `tz`. */
export function dateTime(iso, tz, withZone = true) {
  if (!iso) return NONE;
  let format = dateTimes.get(tz);
  if (format === undefined) {
    format = new Intl.DateTimeFormat(undefined, {dateStyle: 'medium', timeStyle: 'short', timeZone: tz});
    dateTimes.set(tz, format);
  }
  const text = format.format(new Date(iso));
  return withZone ? `${text} (${tz})` : text;
}

/** How long ago `seconds` is, in words ("5 minutes ago"). */
export function ago(seconds) {
  if (seconds === null || seconds === undefined) return NONE;
  const units = [['day', 86400], ['hour', 3600], ['minute', 60]];
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size) return relative.format(-Math.round(seconds / size), unit);
  }
  return relative.format(-Math.round(seconds), 'second');
}

/** Seconds as a clock time from now, for "retry at". */
export function clockIn(seconds) {
  return new Intl.DateTimeFormat(undefined, {timeStyle: 'medium'})
    .format(new Date(Date.now() + seconds * 1000));
}

/**
 * What a measured engagement rate divides (docs/api/analytics.md, `engagement_rate`): its
 * basis, how many of the scope's platforms it covers and the share of engagements it leaves
 * out, e.g. "of impressions · 5 of 9 platforms, 25% of engagements not covered"; `title`
 * names the platforms left out. Null without a rate.
 */
export function coverage(basis, cov) {
  if (!basis || !cov) return null;
  const covered = cov.platforms || [];
  const excluded = cov.excluded_platforms || [];
  const scope = covered.length + excluded.length;
  const left = cov.excluded_engagements
    ? `${percent.format(cov.excluded_engagements_share)} of engagements not covered`
    : 'all engagements covered';
  const platforms = scope > 1 || excluded.length ? `${covered.length} of ${scope} platforms, ` : '';
  const names = excluded.length ? `Not covered (no ${basis}): ${excluded.join(', ')}. ` : '';
  const posts = cov.excluded_posts ? `${integer.format(cov.excluded_posts)} posts without ${basis}. ` : '';
  return {
    text: `of ${basis} · ${platforms}${left}`,
    title: `${names}${posts}${integer.format(cov.engagements)} engagements / ${integer.format(cov.denominator)} ${basis}.`,
  };
}

/** An estimate (a rate shrunk toward its group's prior), said as one: "est. 5.5%". */
export function estimate(est) {
  if (!est) return null;
  const weight = est.weight === null || est.weight === undefined ? '' : `, weight ${decimal.format(est.weight)}`;
  const prior = est.prior === null || est.prior === undefined ? '' : ` toward the group's ${percent.format(est.prior)}`;
  return {
    text: `est. ${percent.format(est.value)}`,
    title: `An estimate, not a measurement: the measured rate shrunk${prior}${weight}.`,
  };
}

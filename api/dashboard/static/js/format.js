// Numbers and times in the browser's locale (Intl, locale `undefined`), times in a chosen zone.

const integer = new Intl.NumberFormat(undefined, {maximumFractionDigits: 0});
const decimal = new Intl.NumberFormat(undefined, {maximumFractionDigits: 2});
const compact = new Intl.NumberFormat(undefined, {notation: 'compact', maximumFractionDigits: 1});
const percent = new Intl.NumberFormat(undefined, {style: 'percent', maximumFractionDigits: 2});
const signedPercent = new Intl.NumberFormat(undefined, {
  style: 'percent', maximumFractionDigits: 1, signDisplay: 'exceptZero',
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

/** The change of `current` against `previous`: a relative change, or null when undefined. */
export function change(current, previous) {
  if (current === null || current === undefined || previous === null || previous === undefined) {
    return {text: 'no earlier figure', direction: 'none'};
  }
  if (previous === 0) {
    return current === 0
      ? {text: 'unchanged', direction: 'flat'}
      : {text: 'new (none before)', direction: 'up'};
  }
  const ratio = (current - previous) / Math.abs(previous);
  return {
    text: signedPercent.format(ratio),
    direction: ratio > 0 ? 'up' : ratio < 0 ? 'down' : 'flat',
  };
}

/** An ISO instant as a date and time in `tz`. */
export function dateTime(iso, tz, withZone = true) {
  if (!iso) return NONE;
  const text = new Intl.DateTimeFormat(undefined, {
    dateStyle: 'medium', timeStyle: 'short', timeZone: tz,
  }).format(new Date(iso));
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

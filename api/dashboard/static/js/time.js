// Bucket boundaries in an IANA time zone, from Intl alone (no time-zone library): a range of
// the overview starts at the start of a day, ISO week (Monday) or month in the chosen zone,
// as the API buckets it (`tz`).

const HOUR = 3_600_000;
const formatters = new Map();

export function browserZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

let known = null; // the browser's list, read once

/** Every zone the browser knows, the browser's and UTC first. */
export function zones() {
  if (known === null) known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set([browserZone(), 'UTC', ...known])];
}

function wall(ms, tz) {
  let format = formatters.get(tz);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric',
      hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    formatters.set(tz, format);
  }
  const parts = {};
  for (const {type, value} of format.formatToParts(new Date(ms))) parts[type] = Number(value);
  return parts;
}

/** The zone's offset from UTC at instant `ms`, in milliseconds. */
function offset(ms, tz) {
  const p = wall(ms, tz);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(ms / 1000) * 1000;
}

/** The instant of a wall-clock time in `tz` (the earlier one when a DST change repeats it). */
function fromWall(year, month, day, hour, tz) {
  const guess = Date.UTC(year, month - 1, day, hour);
  const first = guess - offset(guess, tz);
  const second = guess - offset(first, tz);
  return Math.min(first, second);
}

/** The start of the bucket (`hour | day | week | month`) holding instant `ms`, in `tz`. */
export function bucketStart(ms, unit, tz) {
  const p = wall(ms, tz);
  if (unit === 'hour') return fromWall(p.year, p.month, p.day, p.hour, tz);
  if (unit === 'day') return fromWall(p.year, p.month, p.day, 0, tz);
  if (unit === 'month') return fromWall(p.year, p.month, 1, 0, tz);
  const weekday = (new Date(Date.UTC(p.year, p.month - 1, p.day)).getUTCDay() + 6) % 7;
  const monday = new Date(Date.UTC(p.year, p.month - 1, p.day - weekday));
  return fromWall(monday.getUTCFullYear(), monday.getUTCMonth() + 1, monday.getUTCDate(), 0, tz);
}

/** `start` (a bucket's start) moved by `n` buckets of `unit`, in `tz`'s calendar. */
export function shift(start, unit, n, tz) {
  if (unit === 'hour') return start + n * HOUR;
  const p = wall(start, tz);
  const days = unit === 'day' ? n : unit === 'week' ? 7 * n : 0;
  const months = unit === 'month' ? n : 0;
  const moved = new Date(Date.UTC(p.year, p.month - 1 + months, p.day + days));
  return fromWall(moved.getUTCFullYear(), moved.getUTCMonth() + 1, moved.getUTCDate(), 0, tz);
}

export const iso = (ms) => new Date(ms).toISOString();

// A figure's "where from": the answer's `provenance` (docs/api/analytics.md, Provenance) as a
// disclosure one opens by tap or click, its text also the summary's tooltip on hover: the
// figure's definition, the lake snapshot it was read at, each source and its readings.

import {h} from './dom.js';
import {dateTime, num} from './format.js';

/** One source in words: "capture of x from http://…/x: 212 readings, <first> to <last>". */
export function sourceText(source, tz) {
  const from = source.origin ? ` from ${source.origin}` : '';
  const id = source.import_id ? ` (import ${source.import_id})` : '';
  const span = `${dateTime(source.first_read_at, tz, false)} to ${dateTime(source.last_read_at, tz)}`;
  return `${source.kind} of ${source.platform}${from}${id}: ${num(source.readings)} readings, ${span}`;
}

/** The lines of a figure's provenance: its definition, the snapshot, every source. */
export function provenanceLines(provenance, names, tz) {
  if (!provenance) return [];
  const defined = names.filter((n) => provenance.definitions[n])
    .map((n) => `${n.replace(/_/g, ' ')}: ${provenance.definitions[n]}`);
  const sources = provenance.sources.length
    ? provenance.sources.map((s) => sourceText(s, tz))
    : ['No reading behind these figures.'];
  const snapshot = provenance.snapshot_id === null
    ? 'Read from an empty lake.'
    : `Read at lake snapshot ${provenance.snapshot_id} (as_of=${provenance.snapshot_id} reads it again).`;
  return [...defined, snapshot, ...sources];
}

/** A "Where from" disclosure for the figures `names` of an answer (null without provenance). */
export function whereFrom(provenance, names, tz) {
  if (!provenance) return null;
  const lines = provenanceLines(provenance, names, tz);
  return h('details', {class: 'where-from', data: {snapshot: provenance.snapshot_id ?? '', figures: names.join(',')}},
    h('summary', {title: lines.join('\n')}, 'Where from'),
    h('ul', {}, lines.map((line) => h('li', {}, line))));
}

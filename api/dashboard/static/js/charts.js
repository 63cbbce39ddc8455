// Charts: uPlot (vendored, api/dashboard/static/vendor/uplot) for time series and sparklines.
// A chart's container says what it shows in words (aria-label) and how many points it drew
// (data-points), and every chart of a view is destroyed when the view is left.

import {short} from './format.js';

export const PLATFORM_COLORS = {
  x: '#222222',
  instagram: '#c13584',
  facebook: '#1877f2',
  linkedin: '#0e7c86',
  tiktok: '#e4572e',
  youtube: '#cc0000',
  threads: '#7b5ea7',
  bluesky: '#2f9bff',
  pinterest: '#a77b00',
  total: '#3b4cca',
};
const FALLBACK = ['#3b4cca', '#e4572e', '#0e7c86', '#a77b00', '#7b5ea7', '#cc0000'];

export function colorOf(name, i = 0) {
  return PLATFORM_COLORS[name] || FALLBACK[i % FALLBACK.length];
}

const AXIS = {stroke: '#5b6270', grid: {stroke: '#e6e8ee', width: 1}, ticks: {stroke: '#d0d4dd', width: 1}};

/** Charts of one view: drawn once each, resized with their box, destroyed together. */
export class ChartSet {
  constructor(expected, onAllDrawn) {
    this.expected = expected;
    this.onAllDrawn = onAllDrawn;
    this.drawn = 0;
    this.plots = [];
    this.observer = new ResizeObserver((entries) => {
      for (const entry of entries) {
        const plot = this.plots.find((p) => p.root.parentNode === entry.target);
        const width = Math.floor(entry.contentRect.width);
        if (plot && width > 0 && Math.abs(plot.width - width) > 1) {
          plot.setSize({width, height: plot.height});
        }
      }
    });
  }

  firstDraw() {
    this.drawn += 1;
    if (this.drawn === this.expected && this.onAllDrawn) this.onAllDrawn();
  }

  add(el, opts, data, resize = true) {
    let first = true;
    opts.hooks = {
      ...(opts.hooks || {}),
      draw: [() => {
        if (first) {
          first = false;
          this.firstDraw();
        }
      }],
    };
    const plot = new window.uPlot(opts, data, el);
    this.plots.push(plot);
    if (resize) this.observer.observe(el);
    return plot;
  }

  /** A chart that had nothing to draw still counts as drawn. */
  skip() {
    this.firstDraw();
  }

  destroy() {
    this.observer.disconnect();
    for (const plot of this.plots) plot.destroy();
    this.plots = [];
  }
}

function countPoints(series) {
  return series.reduce((n, s) => n + s.values.filter((v) => v !== null && v !== undefined).length, 0);
}

/**
 * A time series chart in `el`: x in epoch seconds, one line (or bar) per series, no-data as
 * gaps (never as zero), the x axis in `tz`, the y axis labelled with its unit.
 */
export function timeChart(charts, el, {x, series, tz, xLabel, yLabel, yFormat = short, bars = false, height = 260, step = 86400}) {
  const U = window.uPlot;
  const width = Math.max(240, Math.floor(el.clientWidth || 600));
  el.classList.add('chart');
  el.dataset.points = String(countPoints(series));
  // The axes' titles are drawn on the canvas: said here too, for tests and assistive tools.
  Object.assign(el.dataset, {xLabel, yLabel});
  const opts = {
    width,
    height,
    tzDate: (ts) => U.tzDate(new Date(ts * 1e3), tz),
    scales: {
      // One bucket alone gets a bucket's width either side, not uPlot's guess of years.
      x: x.length > 1 ? {time: true} : {time: true, range: () => [(x[0] ?? 0) - step, (x[0] ?? 0) + step]},
      // Bars grow from zero; lines fit their data.
      y: bars ? {range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1]} : {},
    },
    cursor: {points: {size: 7}},
    legend: {live: true},
    series: [
      {label: 'Time'},
      ...series.map((s, i) => ({
        label: s.label,
        stroke: s.color || colorOf(s.label, i),
        fill: bars ? `${s.color || colorOf(s.label, i)}b3` : undefined,
        width: bars ? 1 : 2,
        paths: bars ? U.paths.bars({size: [0.7, 48], gap: 1}) : undefined,
        points: {show: !bars && x.length <= 60, size: x.length > 1 ? 4 : 8},
        spanGaps: false,
        value: (u, v) => (v === null || v === undefined ? '—' : yFormat(v)),
      })),
    ],
    axes: [
      {...AXIS, label: xLabel, labelSize: 20},
      {...AXIS, label: yLabel, labelSize: 20, size: 64, values: (u, splits) => splits.map((v) => yFormat(v))},
    ],
  };
  return charts.add(el, opts, [x, ...series.map((s) => s.values)]);
}

/** A small chart of a few values against a baseline (a dashed line), with no axes. */
export function sparkline(charts, el, {values, baseline, color = '#3b4cca'}) {
  const x = values.map((_, i) => i);
  el.classList.add('chart', 'spark');
  el.dataset.points = String(values.filter((v) => v !== null && v !== undefined).length);
  const opts = {
    width: 132,
    height: 36,
    pxAlign: false,
    scales: {x: {time: false}, y: {range: (u, min, max) => [Math.min(0, min), Math.max(1, max) * 1.1]}},
    axes: [{show: false}, {show: false}],
    legend: {show: false},
    cursor: {show: false},
    select: {show: false},
    series: [
      {},
      {stroke: color, width: 2, points: {show: true, size: 4, fill: color}, spanGaps: false},
      {stroke: '#8a909c', width: 1, dash: [4, 3], points: {show: false}},
    ],
  };
  return charts.add(el, opts, [x, values, x.map(() => baseline)], false);
}

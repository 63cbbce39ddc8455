// Charts: uPlot (vendored, api/dashboard/static/vendor/uplot) for time series and sparklines.
// A chart's container says what it shows in words (aria-label) and how many points it drew
// (data-points), and every chart of a view is destroyed when the view is left.

import {colorOf} from './colors.js';
import {h} from './dom.js';
import {short} from './format.js';

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

/** An axis as wide as its longest tick label (uPlot's own measure of it), never clipped. */
function fitted(minimum) {
  return (u, values, axisIdx, cycleNum) => {
    const axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    let size = (axis.ticks.show === false ? 0 : axis.ticks.size) + axis.gap;
    const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), '');
    if (longest) {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
    }
    return Math.max(minimum, Math.ceil(size + 4));
  };
}

/**
 * A chart's legend: each series' colour and name, always shown (not only on hover); with the
 * cursor on the chart, each name is followed by its value at that time, and the time is said.
 */
function legendOf(series, tz, yFormat, step) {
  const when = new Intl.DateTimeFormat(undefined, step < 86400
    ? {dateStyle: 'medium', timeStyle: 'short', timeZone: tz} : {dateStyle: 'medium', timeZone: tz});
  const time = h('li', {class: 'legend-time', hidden: true});
  const values = [];
  const items = series.map((s) => {
    const mark = h('span', {class: 'legend-swatch', 'aria-hidden': 'true'});
    mark.style.backgroundColor = s.color;
    const value = h('span', {class: 'legend-value'});
    values.push(value);
    return h('li', {class: 'legend-item', data: {series: s.label, color: s.color}},
      mark, h('span', {class: 'legend-label'}, h('span', {class: 'legend-name'}, s.label), value));
  });
  const list = h('ul', {class: 'legend', 'aria-label': 'Legend'}, time, items);
  const show = (u) => {
    const i = u.cursor.idx;
    if (i === null || i === undefined) {
      time.hidden = true;
      for (const value of values) value.textContent = '';
      return;
    }
    time.hidden = false;
    time.textContent = when.format(new Date(u.data[0][i] * 1000));
    values.forEach((value, k) => {
      const v = u.data[k + 1][i];
      value.textContent = `: ${v === null || v === undefined ? 'no data' : yFormat(v)}`;
    });
  };
  return {list, show};
}

/**
 * A time series chart in `el`: x in epoch seconds, one line (or bar) per series, no-data as
 * gaps (never as zero), the x axis in `tz`, the y axis labelled with its unit. The axes' titles
 * and the legend are text around the canvas (a wrapper `.chart-figure` holds them), so they
 * wrap on a phone rather than being cut by the canvas.
 */
export function timeChart(charts, el, {x, series, tz, xLabel, yLabel, yFormat = short, bars = false, height = 260, step = 86400}) {
  const U = window.uPlot;
  const drawn = series.map((s, i) => ({...s, color: s.color || colorOf(s.label, i)}));
  const figure = h('div', {class: 'chart-figure'});
  el.replaceWith(figure);
  const legend = legendOf(drawn, tz, yFormat, step);
  figure.append(
    h('p', {class: 'axis-title y', data: {axis: 'y'}}, yLabel),
    el,
    h('p', {class: 'axis-title x', data: {axis: 'x'}}, xLabel),
    legend.list);
  const width = Math.max(240, Math.floor(el.clientWidth || 600));
  el.classList.add('chart');
  el.dataset.points = String(countPoints(series));
  // The axes' titles are said in the text around the canvas, and here for tests and tools.
  Object.assign(el.dataset, {xLabel, yLabel});
  // One bucket alone gets a bucket's width either side, not uPlot's guess of years; bars get
  // half a bucket either side, so that the first and the last are drawn whole.
  let xScale = {time: true};
  if (x.length <= 1) xScale = {time: true, range: () => [(x[0] ?? 0) - step, (x[0] ?? 0) + step]};
  else if (bars) xScale = {time: true, range: (u, min, max) => [min - step / 2, max + step / 2]};
  const opts = {
    width,
    height,
    tzDate: (ts) => U.tzDate(new Date(ts * 1e3), tz),
    scales: {
      x: xScale,
      // Bars grow from zero; lines fit their data.
      y: bars ? {range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1]} : {},
    },
    cursor: {points: {size: 7}},
    legend: {show: false},
    hooks: {setCursor: [legend.show]},
    series: [
      {label: 'Time'},
      ...drawn.map((s) => ({
        label: s.label,
        stroke: s.color,
        fill: bars ? `${s.color}b3` : undefined,
        width: bars ? 1 : 2,
        paths: bars ? U.paths.bars({size: [0.7, 48], gap: 1}) : undefined,
        points: {show: !bars && x.length <= 60, size: x.length > 1 ? 4 : 8},
        spanGaps: false,
        value: (u, v) => (v === null || v === undefined ? '—' : yFormat(v)),
      })),
    ],
    axes: [
      {...AXIS},
      {...AXIS, size: fitted(32), values: (u, splits) => splits.map((v) => yFormat(v))},
    ],
  };
  return charts.add(el, opts, [x, ...drawn.map((s) => s.values)]);
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

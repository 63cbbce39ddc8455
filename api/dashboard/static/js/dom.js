// Building the page. Every text, platform text above all (titles, captions, names), goes in
// as a text node: nothing here parses markup, so `<img src=x onerror=…>` shows as characters.

/**
 * An element: h('a', {class: 'x', href: url, on: {click: fn}, data: {k: v}}, 'text', node…).
 * Attributes are set with setAttribute (values are never parsed as markup); `text` sets
 * textContent; children are nodes or strings (text nodes); null, false and undefined are
 * skipped; arrays are flattened.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'on') {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    } else if (name === 'data') {
      for (const [key, v] of Object.entries(value)) {
        if (v !== null && v !== undefined) el.dataset[key] = String(v);
      }
    } else if (name === 'text') {
      el.textContent = String(value);
    } else if (name === 'class') {
      el.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value;
    } else if (name === 'href') {
      const safe = safeUrl(value);
      if (safe) el.setAttribute('href', safe);
    } else if (value === true) {
      el.setAttribute(name, '');
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Replace an element's children (as `append` takes them: nulls skipped, strings as text). */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** Append children (nodes, strings as text nodes, nested arrays). */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Only http(s) links, and the page's own fragments: never `javascript:` or `data:`. */
export function safeUrl(value) {
  if (typeof value !== 'string' || value === '') return null;
  if (value.startsWith('#')) return value;
  try {
    const url = new URL(value, window.location.href);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** Whether a URL is served by this page's own origin (the only images the policy allows). */
export function sameOrigin(value) {
  const safe = safeUrl(value);
  return safe !== null && new URL(safe).origin === window.location.origin;
}

/** A link out of the dashboard: new tab, no referrer, no opener. */
export function linkOut(url, text) {
  const safe = safeUrl(url);
  if (!safe) return null;
  return h('a', {href: safe, target: '_blank', rel: 'noopener noreferrer', class: 'out'}, text);
}

/** A `<select>` with a label: options are [value, text] pairs. */
export function select(id, labelText, options, value, onChange) {
  const control = h('select', {id, on: {change: (e) => onChange(e.target.value)}});
  // Option() rather than h(): the zones' picker has some 400 of them, built on every render.
  for (const [v, text, disabled] of options) {
    const option = new Option(String(text), String(v), v === value, v === value);
    if (disabled) option.disabled = true;
    control.append(option);
  }
  return h('div', {class: 'field'}, h('label', {for: id}, labelText), control);
}

/** A section with a heading. */
export function card(title, ...children) {
  return h('section', {class: 'card'}, h('h2', {}, title), ...children);
}

/** A table's head row: a column header per `columns` entry ({title, num}). */
export function thead(columns) {
  return h('thead', {}, h('tr', {}, columns.map((c) =>
    h('th', {scope: 'col', class: c.num ? 'num' : null}, c.title))));
}

/**
 * A data table. `columns`: [{title, num, wide, header}]; `rows`: [{cells, data}], a cell being
 * anything `append` takes. At a phone's width each row stacks into a card whose cells are
 * labelled with their column's title (data-label, shown by the style sheet).
 */
export function table({caption, columns, rows, className}) {
  return h('div', {class: 'table-wrap'}, h('table', {class: ['data', 'stack', className]},
    caption ? h('caption', {class: 'visually-hidden'}, caption) : null,
    thead(columns),
    h('tbody', {}, rows.map(({cells, data}) => h('tr', {data}, cells.map((cell, i) => {
      const column = columns[i];
      return h(column.header ? 'th' : 'td', {
        scope: column.header ? 'row' : null,
        class: [column.num ? 'num' : null, column.wide ? 'wide' : null],
        data: {label: column.title},
      }, cell);
    }))))));
}

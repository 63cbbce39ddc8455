// The states people expect: loading, empty (what to do next), and errors in the contract's
// words (docs/api.md, "Errors").

import {ApiError} from './api.js';
import {fill, h} from './dom.js';
import {clockIn} from './format.js';

export function loading(what) {
  return h('p', {class: 'state loading', role: 'status'}, `Loading ${what}…`);
}

/** An empty state: what is missing, and the commands that fill it. */
export function empty(title, text, commands = []) {
  return h('div', {class: 'state empty', role: 'status'},
    h('h2', {}, title),
    h('p', {}, text),
    commands.length ? h('ul', {class: 'commands'}, commands.map(([command, why]) =>
      h('li', {}, h('code', {}, command), why ? ` — ${why}` : null))) : null);
}

const SCOPE = /\b([a-z]+:(?:read|write))\b/;

/** The scope a 403 names: the error's details, else its message. */
export function missingScope(error) {
  for (const detail of error.details || []) {
    const found = SCOPE.exec(`${detail.field || ''} ${detail.message || ''} ${detail.issue || ''}`);
    if (found) return found[1];
  }
  const found = SCOPE.exec(error.message || '');
  return found ? found[1] : null;
}

/** What a person should know and do about an error: {title, text, action}. */
export function explain(error) {
  if (!(error instanceof ApiError)) {
    return {title: 'Something went wrong in the page', text: String(error?.message || error)};
  }
  const said = `${error.message} (${error.code})`;
  if (error.status === 401) {
    return {title: 'Sign in again', text: `The server refused this key: ${said}`, action: 'signin'};
  }
  if (error.status === 403 && error.code === 'SCOPE_FORBIDDEN') {
    const scope = missingScope(error);
    return {
      title: scope ? `This key lacks the ${scope} scope` : 'This key lacks a scope this view needs',
      text: `${said} Sign in with a key that has it (murmur keys create --scope ${scope || 'SCOPE'}, or a link from murmur dashboard).`,
      scope,
    };
  }
  if (error.status === 403) {
    return {title: 'Not allowed', text: said};
  }
  if (error.status === 429 || error.status === 503) {
    const wait = error.retryAfter ?? 1;
    return {
      title: error.status === 429 ? 'Too many requests' : 'The server is busy',
      text: `${said} Retry in ${wait} s (at ${clockIn(wait)}).`,
      retryAfter: wait,
    };
  }
  if (error.status === 0) return {title: 'No connection', text: said};
  return {title: `The request failed (${error.status})`, text: said};
}

/**
 * An error box; `retry` (a function) gets a button, enabled once Retry-After has passed. Never
 * on a 403: a key lacking a scope lacks it again on the next try (the box says which scope).
 */
export function errorBox(error, {retry, signIn} = {}) {
  const about = explain(error);
  const box = h('div', {class: 'state error', role: 'alert', data: {code: error?.code, status: error?.status, scope: about.scope}},
    h('h2', {}, about.title),
    h('p', {}, about.text),
    error?.requestId ? h('p', {class: 'muted'}, `Request ${error.requestId}`) : null);
  if (about.action === 'signin' && signIn) {
    box.append(h('button', {type: 'button', on: {click: signIn}}, 'Sign in again'));
  } else if (retry && error?.status !== 403) {
    const button = h('button', {type: 'button', on: {click: retry}}, 'Retry');
    if (about.retryAfter) {
      button.disabled = true;
      setTimeout(() => { button.disabled = false; }, about.retryAfter * 1000);
    }
    box.append(button);
  }
  return box;
}

/**
 * The "More" button of a paged table, in `more` (a div of class `className`): `paging(cursor)`
 * shows it while there is a next page; a click fetches it (`fetchPage(cursor)`) and hands its
 * items to `add`. A failed fetch leaves an error box in its place, whose Retry asks again.
 */
export function pager(className, ctx, fetchPage, add) {
  const more = h('div', {class: className});
  const paging = (cursor) => {
    if (!cursor) {
      more.replaceChildren();
      return;
    }
    const button = h('button', {type: 'button', class: 'secondary', on: {click: async () => {
      button.disabled = true;
      let next;
      try {
        next = await fetchPage(cursor);
      } catch (error) {
        if (error?.name === 'AbortError') return;
        if (error?.status === 401) return ctx.failed(error);
        fill(more, errorBox(error, {retry: error?.status === 403 ? undefined : () => paging(cursor)}));
        return;
      }
      paging(next.pagination?.next_cursor);
      await add(next.items);
    }}}, 'More');
    fill(more, button);
  };
  return {more, paging};
}

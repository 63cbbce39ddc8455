// The dashboard's entry: sign-in (a one-time link's token, or a pasted key), then views by the
// URL's fragment (#/overview, #/trends, #/breakouts, #/insights, #/experiments, #/rankings,
// #/posts).

import {ApiError, call, forgetSession, saveSession, session} from './api.js';
import {applyPlatformColors} from './colors.js';
import {fill, h} from './dom.js';
import {dateTime} from './format.js';
import {errorBox, loading} from './states.js';
import {browserZone} from './time.js';
import * as overview from './views/overview.js';

// The overview is the first view, loaded with the page; the others' modules are fetched when
// first opened, or once the first view is shown (`warm`), whichever comes first.
const VIEWS = {
  overview: () => Promise.resolve(overview),
  trends: () => import('./views/trends.js'),
  breakouts: () => import('./views/breakouts.js'),
  insights: () => import('./views/insights.js'),
  experiments: () => import('./views/experiments.js'),
  rankings: () => import('./views/rankings.js'),
  posts: () => import('./views/posts.js'),
};
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const sessionBox = document.getElementById('session');
let current = null; // {controller, charts}

/** The token of a one-time link (#token=…), taken out of the address bar at once. */
function takeToken() {
  const fragment = window.location.hash.replace(/^#/, '');
  const params = new URLSearchParams(fragment.startsWith('/') ? '' : fragment);
  const token = params.get('token');
  if (token === null) return null;
  // Out of the address bar and of this entry of the history before anything else runs.
  window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}#/overview`);
  return token;
}

async function redeem(token) {
  const data = await call('/sessions', {method: 'POST', body: {token}, key: null});
  saveSession({
    key: data.key,
    keyId: data.key_id ?? null,
    workspaceId: data.workspace_id ?? null,
    expiresAt: data.expires_at ?? null,
    scopes: data.scopes ?? null,
    source: 'link',
  });
}

/** Check a pasted key: 401 refuses it; any other answer means the server knows it. */
async function usePastedKey(key) {
  let workspaces = null;
  try {
    workspaces = (await call('/workspaces', {params: {limit: 100}, key})).items;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 401 || error.status === 429 || error.status === 0) {
      throw error;
    }
    // 403: the key is valid but may not list workspaces; its only workspace is implied.
  }
  saveSession({
    key,
    keyId: null,
    workspaceId: workspaces && workspaces.length ? workspaces[0].id : null,
    workspaces: workspaces ? workspaces.map((w) => ({id: w.id, name: w.name})) : null,
    expiresAt: null,
    scopes: null,
    source: 'key',
  });
}

function signInView(notice, {link = false} = {}) {
  teardown();
  nav.hidden = true;
  sessionBox.hidden = true;
  const input = h('input', {
    id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'sk_test_…', required: true,
  });
  const status = h('div', {class: 'signin-status', 'aria-live': 'polite'});
  if (notice instanceof Error) status.append(errorBox(notice));
  if (link && notice instanceof ApiError && notice.status === 401) {
    status.append(h('p', {class: 'state info', role: 'status'},
      'This sign-in link was already used, or has expired: ask for a new one (',
      h('code', {}, 'murmur dashboard'), '), or paste an API key below.'));
  }
  else if (notice) status.append(h('p', {class: 'state info', role: 'status'}, notice));
  const submit = h('button', {type: 'submit'}, 'Sign in');
  const form = h('form', {class: 'signin-form', on: {submit: async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    submit.disabled = true;
    fill(status, loading('your key'));
    try {
      await usePastedKey(key);
      start();
    } catch (error) {
      fill(status, errorBox(error));
      submit.disabled = false;
      input.focus();
    }
  }}},
  h('label', {for: 'api-key'}, 'API key'),
  h('div', {class: 'row'}, input, submit));
  fill(main, h('section', {class: 'signin', 'aria-labelledby': 'signin-title'},
    h('h1', {id: 'signin-title'}, 'Sign in to Murmur'),
    h('p', {}, 'Open the one-time link that ', h('code', {}, 'murmur dashboard'),
      ' prints (', h('code', {}, 'murmur up'), ' prints one too). Or paste an API key: it stays in this tab only, and is forgotten when the tab closes.'),
    status,
    form));
  input.focus();
}

async function signOut() {
  const was = session();
  // A key minted by a sign-in link is this tab's own: revoke it. A pasted key is only forgotten.
  if (was?.source === 'link') {
    try {
      await call('/sessions/current', {method: 'DELETE'});
    } catch {
      // Revoked, expired or unreachable: forgotten here all the same.
    }
  }
  forgetSession();
  signInView('Signed out.');
}

/** The signed-in workspace's name, when this tab knows it. */
function workspaceName(current) {
  const known = (current.workspaces || []).find((w) => w.id === current.workspaceId);
  return known ? known.name : null;
}

/** A link's key names only its workspace's id: its name is GET /workspaces/{id}'s, kept. */
async function learnWorkspaceName(current) {
  if (!current.workspaceId || workspaceName(current) !== null) return;
  let workspace;
  try {
    workspace = await call(`/workspaces/${encodeURIComponent(current.workspaceId)}`);
  } catch {
    return; // without workspaces:read (or no answer): the id stands in for the name
  }
  const now = session();
  if (!now || now.key !== current.key) return; // signed out, or in again, meanwhile
  const others = (now.workspaces || []).filter((w) => w.id !== workspace.id);
  saveSession({...now, workspaces: [...others, {id: workspace.id, name: workspace.name}]});
  if (!sessionBox.hidden) showSession(session());
}

/** The header: the workspace by its name (a picker for several), and when the sign-in ends. */
function showSession(current) {
  nav.hidden = false;
  sessionBox.hidden = false;
  const who = document.getElementById('who');
  // A link's key ends 12 hours after the link was used; a pasted key's end is not known here.
  const expiry = current.expiresAt ? h('span', {
    class: 'expiry', data: {expiresAt: current.expiresAt},
    title: `The read-only key this sign-in link made ends ${dateTime(current.expiresAt, browserZone())}: then open a new link (murmur dashboard).`,
  }, `Sign-in expires ${dateTime(current.expiresAt, browserZone(), false)}`) : null;
  const separator = expiry ? h('span', {class: 'muted', 'aria-hidden': 'true'}, ' · ') : null;
  if (current.workspaces && current.workspaces.length > 1) {
    // A key of several workspaces: each request names the chosen one (X-Workspace-Id).
    const names = current.workspaces.map((w) => w.name);
    const picker = h('select', {id: 'pick-workspace', 'aria-label': 'Workspace', on: {change: (e) => {
      saveSession({...session(), workspaceId: e.target.value});
      show();
    }}}, current.workspaces.map((w) => h('option', {value: w.id, selected: w.id === current.workspaceId},
      // the name; the id only to tell apart two of the same name
      names.filter((n) => n === w.name).length > 1 ? `${w.name} (${w.id})` : w.name)));
    fill(who, picker, separator, expiry);
    return;
  }
  const name = workspaceName(current);
  const shown = name !== null
    ? h('span', {class: 'workspace-name', title: current.workspaceId}, name)
    : current.workspaceId ? `Workspace ${current.workspaceId}` : 'Signed in';
  fill(who, shown, separator, expiry);
  if (name === null) learnWorkspaceName(current);
}

function teardown() {
  if (current) {
    current.controller.abort();
    current.charts?.destroy();
    current = null;
  }
}

function route() {
  const fragment = window.location.hash.replace(/^#\/?/, '');
  const name = fragment.split(/[?/]/)[0];
  return VIEWS[name] ? name : 'overview';
}

async function show() {
  const active = session();
  if (!active) {
    signInView();
    return;
  }
  teardown();
  showSession(active);
  const name = route();
  for (const link of nav.querySelectorAll('a')) {
    if (link.dataset.view === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const view = h('div', {class: `view view-${name}`, data: {view: name, state: 'loading'}});
  fill(main, view);
  current = {controller: new AbortController(), charts: null};
  const ctx = {
    signal: current.controller.signal,
    setCharts: (charts) => { current.charts = charts; },
    tz: browserZone(),
    failed: (error) => failed(view, error),
    signIn: () => { forgetSession(); signInView(); },
  };
  try {
    const module = await VIEWS[name]();
    if (ctx.signal.aborted) return; // left while its module was on its way
    await module.render(view, ctx);
  } catch (error) {
    if (error?.name === 'AbortError') return;
    failed(view, error);
  }
}

/** A view that could not load: 401 goes back to sign-in, anything else is shown in place. */
function failed(view, error) {
  if (error instanceof ApiError && error.status === 401) {
    forgetSession();
    signInView(error);
    return;
  }
  view.dataset.state = 'error';
  fill(view, errorBox(error, {retry: () => show()}));
}

async function start() {
  const token = takeToken();
  if (token !== null) {
    fill(main, loading('your sign-in link'));
    try {
      await redeem(token);
    } catch (error) {
      forgetSession();
      signInView(error, {link: true});
      return;
    }
  }
  await show();
  warm();
}

/** Every view's module, fetched while the page is idle: the next view opens at once. */
function warm() {
  const later = window.requestIdleCallback || ((fn) => setTimeout(fn, 200));
  later(() => {
    for (const load of Object.values(VIEWS)) load().catch(() => {}); // a failure is said when opened
  });
}

applyPlatformColors();
document.getElementById('sign-out').addEventListener('click', signOut);
window.addEventListener('hashchange', async () => {
  if (new URLSearchParams(window.location.hash.replace(/^#/, '')).has('token')) {
    start();
    return;
  }
  await show();
  // A new view: keyboard and screen-reader users continue from its heading.
  const heading = main.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({preventScroll: true});
  }
});
start();

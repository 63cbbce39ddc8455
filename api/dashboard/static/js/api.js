// The public API, as the contract has it (docs/api.md): envelopes, errors, cursors. The key
// lives in this tab's sessionStorage only: never in a cookie, never in a URL.

export const BASE = '/api/public/v1';
const STORAGE = 'murmur.session';

/** An error envelope (or a failure to reach the server), in the contract's words. */
export class ApiError extends Error {
  constructor({status, code, message, details = [], retryAfter = null, requestId = null}) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }
}

/** {key, keyId, workspaceId, expiresAt, scopes, source: 'link' | 'key'} or null. */
export function session() {
  try {
    return JSON.parse(sessionStorage.getItem(STORAGE) || 'null');
  } catch {
    return null;
  }
}

export function saveSession(value) {
  sessionStorage.setItem(STORAGE, JSON.stringify(value));
}

export function forgetSession() {
  sessionStorage.removeItem(STORAGE);
}

function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== null && value !== undefined && value !== '') search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** One call; the envelope's `data`, or an ApiError. */
export async function call(path, {params, method = 'GET', body, key, signal} = {}) {
  const current = session();
  const bearer = key === undefined ? current?.key : key;
  const headers = {Accept: 'application/json'};
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (key === undefined && current?.workspaceId) headers['X-Workspace-Id'] = current.workspaceId;
  if (method !== 'GET') headers['Idempotency-Key'] = crypto.randomUUID();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(BASE + path + query(params), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      signal,
    });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError({status: 0, code: 'NETWORK_ERROR', message: 'The server could not be reached.'});
  }
  let envelope = null;
  try {
    envelope = await response.json();
  } catch {
    envelope = null;
  }
  if (response.ok && envelope?.success) return envelope.data;
  const retry = Number.parseInt(response.headers.get('Retry-After') || '', 10);
  throw new ApiError({
    status: response.status,
    code: envelope?.error?.code || `HTTP_${response.status}`,
    message: envelope?.error?.message || response.statusText || 'The request failed.',
    details: envelope?.error?.details || [],
    retryAfter: Number.isFinite(retry) ? retry : null,
    requestId: envelope?.request_id || response.headers.get('X-Request-Id'),
  });
}

/** Every item of a list endpoint, following cursors (at most `pages` pages). */
export async function items(path, {params = {}, pages = 10, signal} = {}) {
  const all = [];
  let cursor = null;
  let page = null;
  for (let i = 0; i < pages; i += 1) {
    page = await call(path, {params: {...params, limit: 100, cursor}, signal});
    all.push(...page.items);
    cursor = page.pagination?.next_cursor;
    if (!cursor) break;
  }
  return {items: all, page};
}

/** `/analytics/unified` with its whole series: pages of `series` followed by cursor. */
export async function unified(params, {signal, pages = 40} = {}) {
  const first = await call('/analytics/unified', {params: {limit: 100, ...params}, signal});
  const series = [...first.series.items];
  let cursor = first.series.pagination?.next_cursor;
  for (let i = 1; cursor && i < pages; i += 1) {
    const next = await call('/analytics/unified', {params: {limit: 100, ...params, cursor}, signal});
    series.push(...next.series.items);
    cursor = next.series.pagination?.next_cursor;
  }
  return {...first, series: {items: series, pagination: {next_cursor: cursor || null}}};
}

/** `promise`, or an AbortError as soon as `signal` is aborted (for a call made without it). */
export function abortable(promise, signal) {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const stop = () => reject(signal.reason ?? new DOMException('The call was given up.', 'AbortError'));
    if (signal.aborted) {
      stop();
      return;
    }
    signal.addEventListener('abort', stop, {once: true});
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

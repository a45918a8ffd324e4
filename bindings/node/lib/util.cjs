'use strict';
// Small helpers shared by the package's modules.


const date = (s) => (s == null ? undefined : new Date(s));
const dateOrNull = (s) => (s == null ? null : new Date(s));

function abortError(signal) {
  const r = signal && signal.reason;
  if (r instanceof Error) return r;
  const e = new Error('This operation was aborted');
  e.name = 'AbortError';
  e.code = 'ABORT_ERR';
  return e;
}

function readEnv(name) {
  const v = process.env[name];
  return v == null || v === '' ? undefined : v;
}

/** A copy of `o` without its undefined values (nested objects and arrays too). */
function clean(o) {
  if (Array.isArray(o)) return o.map(clean);
  if (o === null || typeof o !== 'object' || o instanceof Date) return o;
  const out = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = clean(v);
  return out;
}

/** Seconds → whole milliseconds (the op layer's `*_ms`), undefined stays undefined. */
const ms = (s) => (s == null ? undefined : Math.round(s * 1000));

function stripV1(s) {
  let t = s.replace(/\/+$/, '');
  if (t.endsWith('/v1')) t = t.slice(0, -3);
  return t;
}

const sleep = (n) => new Promise((r) => setTimeout(r, n));

module.exports = { date, dateOrNull, abortError, readEnv, clean, ms, stripV1, sleep };

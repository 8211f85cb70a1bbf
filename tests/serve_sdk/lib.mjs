// Shared by the scenario scripts of tests/serve_sdk/: each script is one group
// of scenarios that drives `cellvm serve` through E2B's unchanged npm SDK,
// configured only by E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY as a user's
// program would be. A script prints one JSON object on stdout:
//
//   {"group": "...", "scenarios": {"<name>": {"ok": true, ...observed} |
//                                            {"ok": false, "error": {...}, ...observed so far}}}
//
// and exits 1 when a scenario raised an unexpected exception (printed on
// stderr too). What the observations must be is decided by
// tests/test_serve_sdk.py, not here.
//
// With $SERVE_SDK_WIRE_LOG set, every HTTP exchange of the SDK (global fetch:
// control plane and code interpreter; undici: envd) is appended to that file
// as one JSON line: method, URL, the sandbox headers, status, and the first
// bytes of both bodies (from undici's diagnostics channels, which both Node's
// own fetch and the npm undici publish on).

import diagnostics from 'node:diagnostics_channel'
import fs from 'node:fs'

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// --- the wire log ------------------------------------------------------------

const WIRE_LOG = process.env.SERVE_SDK_WIRE_LOG
const BODY_MAX = 2048
const wire = new WeakMap()

function clip(buf, max = BODY_MAX) {
  if (buf == null) return undefined
  const b = typeof buf === 'string' ? Buffer.from(buf) : Buffer.from(buf.buffer ?? buf, buf.byteOffset ?? 0, buf.byteLength ?? buf.length)
  const s = b.subarray(0, max).toString('latin1').replace(/[\x00-\x08\x0b-\x1f\x7f-\xff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
  return b.length > max ? `${s}...(${b.length} bytes)` : s
}

function headerPairs(h) {
  // undici: request headers as a flat array [k, v, k, v] (v6: a string);
  // response headers as an array of Buffers.
  const out = {}
  if (typeof h === 'string') {
    for (const line of h.split('\r\n')) {
      const i = line.indexOf(':')
      if (i > 0) out[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim()
    }
    return out
  }
  if (Array.isArray(h)) {
    for (let i = 0; i + 1 < h.length; i += 2) out[String(h[i]).toLowerCase()] = String(h[i + 1])
  }
  return out
}

const KEEP_REQ = ['e2b-sandbox-id', 'e2b-sandbox-port', 'content-type', 'authorization', 'connect-timeout-ms', 'x-access-token', 'content-encoding']

function flush(entry) {
  if (!WIRE_LOG || entry.flushed) return
  entry.flushed = true
  const { reqChunks, resChunks, flushed, ...rest } = entry
  rest.reqBody = reqChunks.length ? clip(Buffer.concat(reqChunks)) : undefined
  rest.resBody = resChunks.length ? clip(Buffer.concat(resChunks)) : undefined
  rest.ms = Date.now() - rest.t0
  try {
    fs.appendFileSync(WIRE_LOG, JSON.stringify(rest) + '\n')
  } catch {
    // best effort
  }
}

if (WIRE_LOG) {
  diagnostics.subscribe('undici:request:create', ({ request }) => {
    const h = headerPairs(request.headers)
    const kept = {}
    for (const k of KEEP_REQ) if (h[k] !== undefined) kept[k] = h[k]
    if (h['x-api-key'] !== undefined) kept['x-api-key'] = `(${h['x-api-key'].length} characters)`
    const entry = {
      t0: Date.now(),
      method: request.method,
      url: `${request.origin}${request.path}`,
      reqHeaders: kept,
      reqChunks: [],
      resChunks: [],
    }
    if (typeof request.body === 'string' || request.body instanceof Uint8Array) entry.reqChunks.push(Buffer.from(request.body))
    wire.set(request, entry)
  })
  diagnostics.subscribe('undici:request:bodyChunkSent', ({ request, chunk }) => {
    const e = wire.get(request)
    if (e && chunk) e.reqChunks.push(Buffer.from(chunk))
  })
  diagnostics.subscribe('undici:request:headers', ({ request, response }) => {
    const e = wire.get(request)
    if (!e) return
    e.status = response.statusCode
    const h = headerPairs((response.headers || []).map((x) => x.toString()))
    e.resHeaders = { 'content-type': h['content-type'], 'content-length': h['content-length'] }
  })
  diagnostics.subscribe('undici:request:bodyChunkReceived', ({ request, chunk }) => {
    const e = wire.get(request)
    if (e && chunk && e.resChunks.reduce((n, c) => n + c.length, 0) < BODY_MAX * 4) e.resChunks.push(Buffer.from(chunk))
  })
  diagnostics.subscribe('undici:request:trailers', ({ request }) => {
    const e = wire.get(request)
    if (e) flush(e)
  })
  diagnostics.subscribe('undici:request:error', ({ request, error }) => {
    const e = wire.get(request)
    if (!e) return
    e.error = String(error && error.message)
    flush(e)
  })
  // Node's bundled undici may lack the body-chunk channels: the global fetch
  // (control plane, code interpreter) also logs its bodies here.
  const realFetch = globalThis.fetch
  globalThis.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url ?? String(input)
    const entry = { t0: Date.now(), via: 'fetch', method: init.method ?? 'GET', url, reqChunks: [], resChunks: [] }
    if (typeof init.body === 'string') entry.reqChunks.push(Buffer.from(init.body))
    try {
      const h = new Headers(init.headers ?? (typeof input === 'object' ? input.headers : undefined))
      entry.reqHeaders = {}
      for (const k of KEEP_REQ) if (h.has(k)) entry.reqHeaders[k] = h.get(k)
    } catch {
      // headers of an unusual shape: not logged
    }
    try {
      const res = await realFetch(input, init)
      entry.status = res.status
      entry.resHeaders = { 'content-type': res.headers.get('content-type') ?? undefined }
      const copy = res.clone()
      copy.arrayBuffer().then(
        (b) => { entry.resChunks.push(Buffer.from(b)); flush(entry) },
        (err) => { entry.error = String(err && err.message); flush(entry) },
      )
      return res
    } catch (err) {
      entry.error = String(err && err.message)
      flush(entry)
      throw err
    }
  }
}

// --- observations --------------------------------------------------------------

/** What a test needs to know of an exception: its classes and message. */
export function describeError(e) {
  if (e == null || typeof e !== 'object') return { value: String(e) }
  const classes = []
  for (let p = Object.getPrototypeOf(e); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    if (p.constructor && p.constructor.name) classes.push(p.constructor.name)
  }
  const out = { class: e.constructor?.name, classes, name: e.name, message: String(e.message ?? '').slice(0, 2000) }
  for (const k of ['exitCode', 'stdout', 'stderr', 'error']) {
    try {
      if (e[k] !== undefined) out[k] = typeof e[k] === 'string' ? e[k].slice(0, 2000) : e[k]
    } catch {
      // CommandExitError getters
    }
  }
  if (e.cause) out.cause = String(e.cause.message ?? e.cause).slice(0, 500)
  return out
}

/** Runs `fn`, which must throw: the error's description, or {threw: false, value}. */
export async function expectThrow(fn) {
  try {
    const value = await fn()
    return { threw: false, value: value === undefined ? null : value }
  } catch (e) {
    return { threw: true, ...describeError(e) }
  }
}

/** Polls `fn` until it returns a truthy value or `ms` pass; returns the last value. */
export async function until(fn, ms = 10_000, every = 100) {
  const end = Date.now() + ms
  let v
  do {
    v = await fn()
    if (v) return v
    await sleep(every)
  } while (Date.now() < end)
  return v
}

export function isoOrNull(d) {
  return d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString() : d === undefined ? null : String(d)
}

/**
 * Runs a group of scenarios. `body(scenario)` calls `await scenario(name, fn)`
 * for each; `fn(obs)` fills the observation object `obs` (kept when it throws)
 * and may return more to merge into it. Cleanups registered with
 * `scenario.cleanup(fn)` run at the end, whatever happened.
 */
export async function runGroup(group, body) {
  const scenarios = {}
  const cleanups = []
  let failed = false
  const scenario = async (name, fn) => {
    const obs = {}
    const t0 = Date.now()
    try {
      const more = await fn(obs)
      if (more && typeof more === 'object') Object.assign(obs, more)
      scenarios[name] = { ok: true, ...obs, ms: Date.now() - t0 }
    } catch (e) {
      failed = true
      scenarios[name] = { ok: false, ...obs, error: describeError(e), ms: Date.now() - t0 }
      process.stderr.write(`scenario ${group}/${name} raised: ${e && e.stack ? e.stack : e}\n`)
    }
  }
  scenario.cleanup = (fn) => cleanups.push(fn)
  let fatal
  try {
    await body(scenario)
  } catch (e) {
    failed = true
    fatal = describeError(e)
    process.stderr.write(`group ${group} raised: ${e && e.stack ? e.stack : e}\n`)
  } finally {
    for (const fn of cleanups.reverse()) {
      try {
        await fn()
      } catch (e) {
        process.stderr.write(`cleanup in ${group}: ${e && e.message}\n`)
      }
    }
  }
  // Exits now: the SDK can leave a timer behind (runCode's request timer is not
  // cleared when the server answers an error: 60 s more of an idle process).
  const code = failed ? 1 : 0
  process.stdout.write(JSON.stringify({ group, scenarios, ...(fatal ? { fatal } : {}) }) + '\n', () => process.exit(code))
}

/** Kills a sandbox at the end of the group (ignoring a sandbox already gone). */
export function killLater(scenario, sbx) {
  scenario.cleanup(async () => {
    try {
      await sbx.kill()
    } catch {
      // already gone
    }
  })
  return sbx
}

// A vitest setup file added by tests/conformance_js (E2B's test files are not
// changed): it
//  - skips the tests SKIPPED.md lists for this suite ($CELLVM_JS_SUITE), with
//    the table's reason as the skip note, before any fixture makes a sandbox;
//  - records every HTTP exchange of a test: the global fetch (E2B's `unit`
//    project routes the SDK through it; the code interpreter's /execute and
//    /contexts use it) with bodies, and undici's diagnostics channels for the
//    requests npm undici's own dispatcher makes (npm e2b in the interp suite);
//  - for a failing test, writes those exchanges and the server's log lines of
//    the test to $CELLVM_JS_WIRE/<file>/<test>.txt ($CELLVM_JS_WIRE_ALL=1: every test).
import { beforeEach } from 'vitest'
import dc from 'node:diagnostics_channel'
import fs from 'node:fs'
import path from 'node:path'

const SUITE = process.env.CELLVM_JS_SUITE || ''
const WIRE = process.env.CELLVM_JS_WIRE || ''
const SERVER_LOG = process.env.CELLVM_JS_SERVER_LOG || ''
const CAP = 4000 // characters kept of each body

// --- SKIPPED.md ----------------------------------------------------------------
type Skip = { file: string; test: string; reason: string }
function readSkips(): Skip[] {
  const p = process.env.CELLVM_JS_SKIPS
  if (!p || !fs.existsSync(p)) return []
  const rows: Skip[] = []
  for (const line of fs.readFileSync(p, 'utf8').split('\n')) {
    if (!line.startsWith('|')) continue
    const cells = line.split('|').slice(1, -1).map((c) => c.trim().replace(/^`|`$/g, ''))
    if (cells.length < 4 || cells[0] !== SUITE) continue
    rows.push({ file: cells[1], test: cells[2], reason: cells[3] })
  }
  return rows
}
const skips = readSkips()

function fullName(task: any): string {
  const names = [task.name]
  for (let s = task.suite; s && s !== task.file && s.type !== 'file' && s.name; s = s.suite)
    names.unshift(s.name)
  return names.join(' > ')
}
function relFile(task: any): string {
  return path.relative(process.cwd(), task.file?.filepath || '')
}
export function skipReason(file: string, name: string): string | undefined {
  const row = skips.find((r) => r.file === file && (r.test === '(all)' || r.test === name))
  return row?.reason
}

// --- the wire log ----------------------------------------------------------------
type Entry = {
  t: number
  via: string
  method: string
  url: string
  reqHeaders: string[]
  reqBody?: string
  status?: number
  resHeaders?: string[]
  resBody: string
  ms?: number
  end?: string
}
let t0 = Date.now()
let log: Entry[] = []
const inFlight = new Map<string, number>() // METHOD url from our fetch wrapper

function show(b: Uint8Array | string): string {
  // Bytes that are not UTF-8 (a Connect envelope's length, binary data) as \xNN.
  const s = typeof b === 'string' ? b : new TextDecoder('utf-8', { fatal: false }).decode(b).replace(/\uFFFD/g, '\\x??')
  return s.replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}
function append(e: Entry, k: 'reqBody' | 'resBody', chunk: Uint8Array | string) {
  const cur = e[k] || ''
  if (cur.length >= CAP) {
    if (!cur.endsWith('…')) e[k] = cur + '…'
    return
  }
  e[k] = (cur + show(chunk)).slice(0, CAP)
}
function headerList(h: Headers): string[] {
  const out: string[] = []
  h.forEach((v, k) => out.push(`${k}: ${k === 'x-api-key' || k === 'x-access-token' ? v.slice(0, 8) + '…' : v}`))
  return out
}

const realFetch = globalThis.fetch
globalThis.fetch = async function cellvmWireFetch(input: any, init?: any): Promise<Response> {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input?.url
  const method = (init?.method || (input instanceof Request ? input.method : 'GET')).toUpperCase()
  const headers = new Headers(init?.headers || (input instanceof Request ? input.headers : undefined))
  const e: Entry = { t: Date.now() - t0, via: 'fetch', method, url, reqHeaders: headerList(headers), resBody: '' }
  log.push(e)
  const body = init?.body
  if (typeof body === 'string') append(e, 'reqBody', body)
  else if (body instanceof Uint8Array || body instanceof ArrayBuffer)
    append(e, 'reqBody', body instanceof ArrayBuffer ? new Uint8Array(body) : body)
  else if (body instanceof URLSearchParams) append(e, 'reqBody', body.toString())
  else if (body != null) e.reqBody = `<${body?.constructor?.name || typeof body} body>`
  else if (input instanceof Request && input.body) {
    try {
      append(e, 'reqBody', await input.clone().text())
    } catch {
      e.reqBody = '<Request body>'
    }
  }
  const key = `${method} ${url}`
  inFlight.set(key, (inFlight.get(key) || 0) + 1)
  const start = Date.now()
  let res: Response
  try {
    res = await realFetch(input, init)
  } catch (err: any) {
    e.end = `fetch threw ${err?.name}: ${err?.message}${err?.cause ? ` (cause: ${err.cause?.code || ''} ${err.cause?.message || err.cause})` : ''}`
    throw err
  } finally {
    const n = (inFlight.get(key) || 1) - 1
    if (n) inFlight.set(key, n)
    else inFlight.delete(key)
  }
  e.status = res.status
  e.resHeaders = headerList(res.headers)
  if (!res.body) {
    e.ms = Date.now() - start
    return res
  }
  // Record the body as the SDK reads it (no tee: a cancel by the SDK still
  // reaches the connection, as tests of disconnects need).
  const rec = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, ctl) {
      append(e, 'resBody', chunk)
      ctl.enqueue(chunk)
    },
    flush() {
      e.ms = Date.now() - start
      e.end = e.end || 'body complete'
    },
    cancel(reason: any) {
      e.end = `body cancelled by the client (${reason?.name || reason})`
    },
  } as any)
  const wrapped = new Response(res.body.pipeThrough(rec), {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  })
  Object.defineProperty(wrapped, 'url', { value: res.url })
  Object.defineProperty(wrapped, 'redirected', { value: res.redirected })
  return wrapped
} as typeof fetch

// undici's diagnostics channels: npm undici's dispatcher (and Node's own fetch,
// whose requests the wrapper above already logs: those are left out here).
const undiciEntries = new WeakMap<object, Entry>()
function rawHeaders(h: any): string[] {
  if (!h) return []
  if (typeof h === 'string') return rawHeaders(h.split('\r\n').filter(Boolean).flatMap((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]))
  const out: string[] = []
  for (let i = 0; i + 1 < h.length; i += 2) {
    const k = String(h[i]).toLowerCase()
    const v = String(h[i + 1])
    out.push(`${String(h[i])}: ${k === 'x-api-key' || k === 'x-access-token' ? v.slice(0, 8) + '…' : v}`)
  }
  return out
}
dc.subscribe('undici:request:create', (m: any) => {
  const r = m.request
  const url = `${r.origin}${r.path}`
  if (inFlight.has(`${String(r.method).toUpperCase()} ${url}`)) return
  const e: Entry = { t: Date.now() - t0, via: 'undici', method: r.method, url, reqHeaders: rawHeaders(r.headers), resBody: '' }
  if (typeof r.body === 'string' || r.body instanceof Uint8Array) append(e, 'reqBody', r.body)
  undiciEntries.set(r, e)
  log.push(e)
})
dc.subscribe('undici:request:bodyChunkSent', (m: any) => {
  const e = undiciEntries.get(m.request)
  if (e && m.chunk) append(e, 'reqBody', m.chunk)
})
dc.subscribe('undici:request:headers', (m: any) => {
  const e = undiciEntries.get(m.request)
  if (!e) return
  e.status = m.response.statusCode
  e.resHeaders = rawHeaders(m.response.headers)
})
dc.subscribe('undici:request:bodyChunkReceived', (m: any) => {
  const e = undiciEntries.get(m.request)
  if (e && m.chunk) append(e, 'resBody', m.chunk)
})
dc.subscribe('undici:request:trailers', (m: any) => {
  const e = undiciEntries.get(m.request)
  if (e) e.end = 'body complete'
})
dc.subscribe('undici:request:error', (m: any) => {
  const e = undiciEntries.get(m.request)
  if (e) e.end = `error ${m.error?.name}: ${m.error?.message}`
})

function serverLogSize(): number {
  try {
    return fs.statSync(SERVER_LOG).size
  } catch {
    return 0
  }
}
function serverLogSince(off: number): string {
  try {
    const fd = fs.openSync(SERVER_LOG, 'r')
    const size = fs.fstatSync(fd).size
    const n = Math.min(size - off, 200_000)
    const buf = Buffer.alloc(Math.max(n, 0))
    if (n > 0) fs.readSync(fd, buf, 0, n, off)
    fs.closeSync(fd)
    return buf.toString('utf8')
  } catch (e: any) {
    return `(${SERVER_LOG}: ${e.message})`
  }
}
// The SDK's identification headers and the date say nothing about a failure.
const QUIET = new Set(['browser', 'lang', 'lang_version', 'package_version', 'publisher', 'sdk_runtime', 'system', 'user-agent', 'date', 'connection', 'keep-alive'])
function fmt(all: Entry[]): string {
  // Consecutive identical exchanges (polling) are shown once, with their count.
  const entries: (Entry & { n: number; i: number })[] = []
  all.forEach((e, i) => {
    const last = entries[entries.length - 1]
    const same = (a: Entry, b: Entry) =>
      a.method === b.method && a.url === b.url && a.status === b.status && a.reqBody === b.reqBody && a.resBody === b.resBody && a.end === b.end
    if (last && same(last, e)) last.n++
    else entries.push({ ...e, n: 1, i })
  })
  return entries
    .map((e) => {
      const i = e.i
      const lines = [`#${i + 1} +${e.t}ms [${e.via}] ${e.method} ${e.url}${e.n > 1 ? `   (x${e.n}, identical)` : ''}`]
      for (const h of e.reqHeaders) if (!QUIET.has(h.split(':')[0].toLowerCase())) lines.push(`  > ${h}`)
      if (e.reqBody !== undefined) lines.push(`  > body: ${e.reqBody}`)
      if (e.status !== undefined) {
        lines.push(`  < ${e.status}${e.ms !== undefined ? ` (${e.ms} ms)` : ''}`)
        for (const h of e.resHeaders || []) if (!QUIET.has(h.split(':')[0].toLowerCase())) lines.push(`  < ${h}`)
        if (e.resBody) lines.push(`  < body: ${e.resBody}`)
      } else lines.push('  < (no response)')
      if (e.end) lines.push(`  = ${e.end}`)
      return lines.join('\n')
    })
    .join('\n')
}
function safe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 120)
}

beforeEach(({ task, skip, onTestFinished }: any) => {
  const file = relFile(task)
  const name = fullName(task)
  const reason = skipReason(file, name)
  if (reason) skip(`cellvm SKIPPED.md: ${reason}`)
  t0 = Date.now()
  log = []
  const myLog = log
  const logOff = serverLogSize()
  onTestFinished(() => {
    const state = task.result?.state
    if (!WIRE || (state !== 'fail' && process.env.CELLVM_JS_WIRE_ALL !== '1')) return
    const errors = (task.result?.errors || [])
      .map((err: any) => `${err.name || 'Error'}: ${err.message}\n${err.diff || ''}\n${(err.stack || '').split('\n').slice(0, 12).join('\n')}`)
      .join('\n---\n')
    const dir = path.join(WIRE, safe(file))
    fs.mkdirSync(dir, { recursive: true })
    // E2B's files may repeat a test name (api/list.test.ts does): keep both.
    let out = path.join(dir, safe(name) + '.txt')
    for (let n = 2; fs.existsSync(out); n++) out = path.join(dir, `${safe(name)}.${n}.txt`)
    fs.writeFileSync(
      out,
      `test: ${file} > ${name}\nstate: ${state}\n\n== error\n${errors}\n\n== HTTP exchanges (${myLog.length})\n${fmt(myLog)}\n\n== server log during the test\n${serverLogSince(logOff)}`
    )
  })
})

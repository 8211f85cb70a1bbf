// The npm side of bench/serve.py: E2B's unchanged @e2b/code-interpreter
// against `cellvm serve`. Imported from $E2B_SDK_DIR (tests/serve_sdk, where
// its lock installs it). Prints one JSON object.
//
//   node bench/serve_sdk.mjs cells N        runCode('1+1') N times in one sandbox (ms each)
//   node bench/serve_sdk.mjs first N        N x (create + first runCode('1+1'), kill) (ms)
//   node bench/serve_sdk.mjs load C S T     C clients over S sandboxes for T s: counts, errors
//   node bench/serve_sdk.mjs nullserver P   a server on 127.0.0.1:P that answers create and
//                                           /execute of '1+1' at once, with no sandbox: the
//                                           SDK's own cost per cell, measured with `cells`
import http from 'node:http'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const sdkDir = process.env.E2B_SDK_DIR
const { Sandbox } = await import(
  pathToFileURL(path.join(sdkDir, 'node_modules/@e2b/code-interpreter/dist/index.mjs')).href
)
const [mode, a, b, c] = process.argv.slice(2)
const now = () => performance.now()
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function cells(n) {
  const sbx = await Sandbox.create()
  const ms = []
  try {
    await sbx.runCode('1+1') // the first cell pays for the clone's first run
    for (let i = 0; i < n; i++) {
      const t = now()
      const ex = await sbx.runCode('1+1')
      ms.push(now() - t)
      if (ex.text !== '2') throw new Error(`1+1 gave ${ex.text}`)
    }
  } finally {
    await sbx.kill()
  }
  return { ms }
}

async function first(n) {
  const create = [], cell = [], total = []
  for (let i = 0; i < n; i++) {
    const t0 = now()
    const sbx = await Sandbox.create()
    const t1 = now()
    const ex = await sbx.runCode('1+1')
    const t2 = now()
    if (ex.text !== '2') throw new Error(`1+1 gave ${ex.text}`)
    create.push(t1 - t0)
    cell.push(t2 - t1)
    total.push(t2 - t0)
    await sbx.kill()
    await sleep(+(process.env.BENCH_GAP_MS || 3000)) // lets a pool refill, the host settle
  }
  return { create, cell, total }
}

async function load(clients, sandboxes, seconds) {
  const sbxs = []
  for (let i = 0; i < sandboxes; i++) sbxs.push(await Sandbox.create({ timeoutMs: (seconds + 120) * 1000 }))
  const until = now() + seconds * 1000
  const counts = { runCode: 0, commands: 0, files: 0 }
  const errors = []
  const lat = []
  async function client(k) {
    const sbx = sbxs[k % sandboxes]
    let i = 0
    while (now() < until) {
      const t = now()
      try {
        switch (i++ % 3) {
          case 0: {
            const ex = await sbx.runCode(`${k} + ${i}`)
            if (ex.text !== String(k + i)) throw new Error(`${k}+${i} gave ${ex.text}`)
            counts.runCode++
            break
          }
          case 1: {
            const r = await sbx.commands.run(`echo c${k}-${i}`)
            if (r.stdout !== `c${k}-${i}\n`) throw new Error(`echo gave ${r.stdout}`)
            counts.commands++
            break
          }
          default: {
            await sbx.files.write(`/tmp/f${k}.txt`, `v${i}`)
            const v = await sbx.files.read(`/tmp/f${k}.txt`)
            if (v !== `v${i}`) throw new Error(`read gave ${v}`)
            counts.files++
          }
        }
        lat.push(now() - t)
      } catch (e) {
        errors.push(`${k}: ${e.name}: ${e.message}`.slice(0, 300))
      }
    }
  }
  await Promise.all(Array.from({ length: clients }, (_, k) => client(k)))
  for (const s of sbxs) await s.kill()
  return { counts, errors, latency_ms: lat }
}

// Answers as cellvm serve does for the calls `cells` makes, with nothing behind it.
function nullserver(port) {
  const created = JSON.stringify({
    sandboxID: 'null0', templateID: 'base', clientID: 'null', envdVersion: '0.6.13',
    envdAccessToken: 'null', trafficAccessToken: 'null', domain: null,
  })
  const executed = [
    { type: 'result', text: '2', is_main_result: true, 'text/plain': '2' },
    { type: 'number_of_executions', execution_count: 1 },
    { type: 'end_of_execution' },
  ].map((x) => JSON.stringify(x) + '\n').join('')
  http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      if (req.url === '/execute') {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' })
        res.end(executed)
      } else if (req.method === 'DELETE') {
        res.writeHead(204)
        res.end()
      } else {
        res.writeHead(201, { 'content-type': 'application/json' })
        res.end(created)
      }
    })
  }).listen(port, '127.0.0.1', () => console.log('listening'))
}

let out
if (mode === 'nullserver') {
  nullserver(+a)
  await new Promise(() => {})
} else if (mode === 'cells') out = await cells(+a)
else if (mode === 'first') out = await first(+a)
else if (mode === 'load') out = await load(+a, +b, +c)
else throw new Error(`unknown mode ${mode}`)
console.log(JSON.stringify(out))

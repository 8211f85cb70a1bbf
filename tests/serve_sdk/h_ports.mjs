// Group h, a sandbox's own server reached from the host: sbx.getHost(port) as
// a user's program uses it. The SDK returns `{port}-{id}.{domain}`; the
// server's domain is `localhost:PORT`, so the name is a subdomain of
// localhost, which RFC 6761 reserves for loopback and which browsers and curl
// resolve to 127.0.0.1 themselves. Node's resolver asks the system's, which
// here knows only `localhost` itself, so these requests resolve *.localhost
// to 127.0.0.1 the same way, with node:http's `lookup` option (docs/SERVE.md).

import dns from 'node:dns'
import http from 'node:http'
import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, until } from './lib.mjs'

// *.localhost is loopback (RFC 6761), as browsers and curl resolve it.
function lookup(host, opts, cb) {
  if (typeof opts === 'function') [cb, opts] = [opts, {}]
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)
  }
  return dns.lookup(host, opts, cb)
}

// GET or POST http://<host><path>: {status, headers, body}.
function request(host, path, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`http://${host}${path}`, { method, headers, lookup }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

// An echo server: the body back, its sha256 in a header.
const ECHO = `
import hashlib, http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("X-Sha256", hashlib.sha256(body).hexdigest())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 8001), H).serve_forever()
`

await runGroup('ports', async (scenario) => {
  await scenario('get_host', async (o) => {
    const sbx = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group: 'ports' } }))
    o.sandboxId = sbx.sandboxId
    o.host = sbx.getHost(8000)
    await sbx.files.write('www/hello.txt', 'served from the sandbox')
    await sbx.files.write('echo.py', ECHO)
    const web = await sbx.commands.run('python3 -m http.server 8000', { background: true, cwd: '/home/user/www' })
    const echo = await sbx.commands.run('python3 echo.py', { background: true })
    let last
    o.body = await until(async () => {
      try {
        const r = await request(o.host, '/hello.txt')
        last = { status: r.status, body: r.body.toString().slice(0, 300) }
        return r.status === 200 ? r.body.toString() : null
      } catch (e) {
        last = { error: e.message }
        return null
      }
    }, 60_000, 250)
    o.last = last
    // a megabyte up and back
    const big = Buffer.alloc(1 << 20)
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 251
    const echoHost = sbx.getHost(8001)
    await until(async () => (await request(echoHost, '/', { method: 'POST', body: 'x' }).catch(() => ({}))).status === 200, 60_000, 250)
    const r = await request(echoHost, '/', { method: 'POST', body: big, headers: { 'Content-Type': 'application/octet-stream' } })
    o.echoStatus = r.status
    o.echoSame = Buffer.compare(r.body, big) === 0
    o.echoLength = r.body.length
    // a port nothing listens on: E2B's edge's JSON
    const closed = await request(sbx.getHost(8002), '/')
    o.closed = { status: closed.status, body: JSON.parse(closed.body.toString()) }
    // the global fetch, with E2B's routing headers instead of the name
    const f = await fetch(`${process.env.E2B_SANDBOX_URL}/hello.txt`, {
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' },
    })
    o.fetchStatus = f.status
    o.fetchBody = await f.text()
    await web.kill()
    await echo.kill()
    await sbx.kill()
  })

  await scenario('private_traffic', async (o) => {
    const sbx = killLater(scenario, await Sandbox.create({
      metadata: { suite: 'serve_sdk', group: 'ports-private' },
      network: { allowPublicTraffic: false },
    }))
    o.hasToken = typeof sbx.trafficAccessToken === 'string' && sbx.trafficAccessToken.length > 0
    const host = sbx.getHost(8000)
    await sbx.files.write('www/index.html', 'private page')
    await sbx.commands.run('python3 -m http.server 8000', { background: true, cwd: '/home/user/www' })
    const token = { 'e2b-traffic-access-token': sbx.trafficAccessToken }
    o.withToken = await until(async () => {
      const r = await request(host, '/', { headers: token }).catch(() => null)
      return r && r.status === 200 ? r.body.toString() : null
    }, 60_000, 250)
    o.withoutToken = (await request(host, '/')).status
    o.wrongToken = (await request(host, '/', { headers: { 'e2b-traffic-access-token': 'x'.repeat(32) } })).status
    await sbx.kill()
  })
})

// Group g, the features that come later: pty, a port of the
// sandbox reached through the server (getHost), files.watchDir. Each is its
// own scenario with a sandbox of its own, so one missing feature does not
// hide another.

import { Sandbox, FilesystemEventType } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow, until, sleep, isoOrNull } from './lib.mjs'

const SANDBOX_URL = process.env.E2B_SANDBOX_URL

await runGroup('later', async (scenario) => {
  // Each scenario's sandbox is killed when it ends (killLater: also if it raised),
  // so that idle VMs do not pile up under TCG.
  const created = []
  const create = async (group) => {
    const sbx = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group } }))
    created.push(sbx)
    return sbx
  }
  const killCreated = async () => {
    while (created.length) await created.pop().kill().catch(() => {})
  }

  await killCreated()
  await scenario('pty', async (o) => {
    const sbx = await create('later-pty')
    o.sandboxId = sbx.sandboxId
    let out = ''
    const dec = new TextDecoder()
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += dec.decode(d, { stream: true }) }, envs: { SERVE_SDK_PTY: 'pty-env' } })
    o.pidType = typeof term.pid
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('echo "v=$((6*7)) $SERVE_SDK_PTY"\n'))
    o.sawEcho = Boolean(await until(() => out.includes('v=42 pty-env'), 10_000))
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size; tty\n'))
    o.sawSize = Boolean(await until(() => /\b24 80\b/.test(out), 10_000))
    await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size\n'))
    o.sawResize = Boolean(await until(() => /\b30 100\b/.test(out), 10_000))
    o.isTty = /\/dev\/pts\/\d+/.test(out)
    o.killed = await sbx.pty.kill(term.pid)
    o.waitAfterKill = await expectThrow(() => term.wait())
    o.killUnknown = await sbx.pty.kill(999999)
    // a second terminal that exits by itself
    let out2 = ''
    const t2 = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out2 += dec.decode(d, { stream: true }) } })
    await sbx.pty.sendInput(t2.pid, new TextEncoder().encode('exit 0\n'))
    const r = await t2.wait()
    o.exitCode = r.exitCode
    o.output = out.slice(-2000)
  })

  await killCreated()
  await scenario('get_host', async (o) => {
    const sbx = await create('later-host')
    o.sandboxId = sbx.sandboxId
    o.host = sbx.getHost(8000)
    await sbx.files.write('www/hello.txt', 'served from the sandbox')
    const server = await sbx.commands.run('python3 -m http.server 8000', { background: true, cwd: '/home/user/www' })
    o.serverPid = server.pid
    const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' }
    let last
    const body = await until(async () => {
      try {
        const r = await fetch(`${SANDBOX_URL}/hello.txt`, { headers })
        last = { status: r.status, body: (await r.text()).slice(0, 500) }
        return r.status === 200 ? last.body : null
      } catch (e) {
        last = { error: e.message, cause: e.cause ? String(e.cause.message ?? e.cause) : null }
        return null
      }
    }, 15_000, 300)
    o.body = body ?? null
    o.last = last
    // a port nothing listens on
    try {
      const r = await fetch(`${SANDBOX_URL}/`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8001' } })
      o.closedPort = { status: r.status, body: (await r.text()).slice(0, 300) }
    } catch (e) {
      o.closedPort = { error: e.message }
    }
    await server.kill()
  })

  await killCreated()
  await scenario('watch_dir', async (o) => {
    const sbx = await create('later-watch')
    o.sandboxId = sbx.sandboxId
    await sbx.files.makeDir('watched/nested')
    const events = []
    const handle = await sbx.files.watchDir('watched', (e) => events.push({ name: e.name, type: e.type }), { recursive: true })
    await sleep(300)
    await sbx.files.write('watched/new.txt', 'created')
    await sbx.files.write('watched/nested/deep.txt', 'deeper')
    await sbx.commands.run('rm /home/user/watched/new.txt')
    o.sawCreate = Boolean(await until(() => events.some((e) => e.name === 'new.txt' && (e.type === FilesystemEventType.CREATE || e.type === FilesystemEventType.WRITE)), 10_000))
    o.sawNested = Boolean(await until(() => events.some((e) => e.name === 'nested/deep.txt'), 10_000))
    o.sawRemove = Boolean(await until(() => events.some((e) => e.name === 'new.txt' && e.type === FilesystemEventType.REMOVE), 10_000))
    await handle.stop()
    o.events = events.slice(0, 50)
    o.missingDir = await expectThrow(() => sbx.files.watchDir('no-such-dir', () => {}))
  })

  await killCreated()
  await scenario('metrics', async (o) => {
    const sbx = await create('later-metrics')
    o.sandboxId = sbx.sandboxId
    await sleep(1500)
    const m = await sbx.getMetrics()
    o.count = m.length
    o.first = m[0] ? { ...m[0], timestamp: isoOrNull(m[0].timestamp) } : null
  })
  await killCreated()
})

// Group e, the control plane's lifecycle: list with metadata, getInfo,
// connect to a running sandbox, setTimeout, kill, the default timeout.

import crypto from 'node:crypto'
import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow, isoOrNull } from './lib.mjs'

const info = (i) => ({
  sandboxId: i.sandboxId,
  templateId: i.templateId,
  name: i.name ?? null,
  metadata: i.metadata,
  startedAt: isoOrNull(i.startedAt),
  endAt: isoOrNull(i.endAt),
  state: i.state,
  cpuCount: i.cpuCount,
  memoryMB: i.memoryMB,
  envdVersion: i.envdVersion,
})

async function listAll(opts) {
  const pages = []
  const paginator = Sandbox.list(opts)
  let guard = 0
  while (paginator.hasNext && guard++ < 50) pages.push(...(await paginator.nextItems()))
  return pages
}

await runGroup('lifecycle', async (scenario) => {
  const run = crypto.randomUUID()
  const metadata = { suite: 'serve_sdk', group: 'lifecycle', run }
  let sbx
  await scenario('create', async (o) => {
    const t0 = Date.now()
    sbx = killLater(scenario, await Sandbox.create({ metadata, timeoutMs: 120_000 }))
    o.createdAt = new Date(t0).toISOString()
    o.sandboxId = sbx.sandboxId
    o.isRunning = await sbx.isRunning()
  })
  if (!sbx) return

  await scenario('list', async (o) => {
    const all = await listAll()
    o.allIds = all.map((s) => s.sandboxId)
    const mine = all.find((s) => s.sandboxId === sbx.sandboxId)
    o.mine = mine ? info(mine) : null
    const filtered = await listAll({ query: { metadata: { run } } })
    o.filteredIds = filtered.map((s) => s.sandboxId)
    const other = await listAll({ query: { metadata: { run: 'no-such-run' } } })
    o.otherIds = other.map((s) => s.sandboxId)
    const running = await listAll({ query: { state: ['running'], metadata: { run } } })
    o.runningIds = running.map((s) => s.sandboxId)
    const paused = await listAll({ query: { state: ['paused'], metadata: { run } } })
    o.pausedIds = paused.map((s) => s.sandboxId)
  })

  await scenario('get_info', async (o) => {
    o.now = new Date().toISOString()
    o.info = info(await sbx.getInfo())
    o.static = info(await Sandbox.getInfo(sbx.sandboxId))
  })

  await scenario('default_timeout', async (o) => {
    // No timeoutMs: E2B's default of 300 s.
    const other = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group: 'lifecycle-default' } }))
    const i = await other.getInfo()
    o.info = info(i)
    o.seconds = (i.endAt.getTime() - i.startedAt.getTime()) / 1000
    o.killed = await other.kill()
  })

  await scenario('connect', async (o) => {
    await sbx.runCode('marker = 12345')
    await sbx.files.write('connect-marker.txt', 'from the first handle')
    const again = await Sandbox.connect(sbx.sandboxId)
    o.sameId = again.sandboxId === sbx.sandboxId
    o.marker = (await again.runCode('marker')).text ?? null
    o.file = await again.files.read('connect-marker.txt')
    o.command = (await again.commands.run('cat connect-marker.txt')).stdout
    // the instance method as well
    const viaInstance = await sbx.connect()
    o.instanceMarker = (await viaInstance.runCode('marker + 1')).text ?? null
  })

  await scenario('set_timeout', async (o) => {
    const before = info(await sbx.getInfo())
    const t = Date.now()
    await sbx.setTimeout(60_000)
    const after = await sbx.getInfo()
    o.before = before
    o.after = info(after)
    o.calledAt = new Date(t).toISOString()
    o.endInSeconds = (after.endAt.getTime() - t) / 1000
    // a longer one moves it out again
    const t2 = Date.now()
    await Sandbox.setTimeout(sbx.sandboxId, 200_000)
    o.endInSeconds2 = ((await sbx.getInfo()).endAt.getTime() - t2) / 1000
  })

  await scenario('kill', async (o) => {
    o.runningBefore = await sbx.isRunning()
    o.killed = await sbx.kill()
    o.runningAfter = await sbx.isRunning()
    o.connectAfter = await expectThrow(() => Sandbox.connect(sbx.sandboxId))
    o.getInfoAfter = await expectThrow(() => Sandbox.getInfo(sbx.sandboxId))
    o.killAgain = await Sandbox.kill(sbx.sandboxId)
    o.listedAfter = (await listAll({ query: { metadata: { run } } })).map((s) => s.sandboxId)
    o.runCodeAfter = await expectThrow(() => sbx.runCode('1'))
    o.commandAfter = await expectThrow(() => sbx.commands.run('true', { requestTimeoutMs: 10_000 }))
  })

  await scenario('kill_unknown', async (o) => {
    o.killed = await Sandbox.kill('nonexistent-sandbox-id')
    o.killedStatic = await Sandbox.kill('i' + crypto.randomBytes(10).toString('hex'))
  })
})

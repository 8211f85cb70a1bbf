// Group f, errors: a wrong API key, an unknown sandbox, a sandbox whose
// timeout ends it.

import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow, sleep } from './lib.mjs'

const WRONG_KEY = 'e2b_' + 'f'.repeat(40)

await runGroup('errors', async (scenario) => {
  await scenario('wrong_api_key', async (o) => {
    o.create = await expectThrow(async () => {
      const s = await Sandbox.create({ apiKey: WRONG_KEY })
      await s.kill().catch(() => {})
      return s.sandboxId
    })
    o.list = await expectThrow(() => Sandbox.list({ apiKey: WRONG_KEY }).nextItems())
    o.kill = await expectThrow(() => Sandbox.kill('whatever', { apiKey: WRONG_KEY }))
  })

  await scenario('connect_nonexistent', async (o) => {
    o.connect = await expectThrow(() => Sandbox.connect('nonexistent'))
    o.getInfo = await expectThrow(() => Sandbox.getInfo('nonexistent'))
    o.setTimeout = await expectThrow(() => Sandbox.setTimeout('nonexistent', 10_000))
  })

  await scenario('timeout_ends_sandbox', async (o) => {
    const t0 = Date.now()
    const sbx = killLater(scenario, await Sandbox.create({ timeoutMs: 5_000, metadata: { suite: 'serve_sdk', group: 'errors-timeout' } }))
    o.sandboxId = sbx.sandboxId
    const i = await sbx.getInfo()
    o.lifetimeSeconds = (i.endAt.getTime() - i.startedAt.getTime()) / 1000
    o.runningAtStart = await sbx.isRunning()
    o.cell = (await sbx.runCode('6 * 7')).text ?? null
    // a timer may fire a millisecond early by Date.now(): wait until 8 s have passed
    while (Date.now() - t0 < 8_000) await sleep(8_000 - (Date.now() - t0))
    o.checkedAfterMs = Date.now() - t0
    o.getInfoAfter = await expectThrow(async () => {
      const j = await sbx.getInfo()
      return { state: j.state, endAt: j.endAt.toISOString() }
    })
    const listed = []
    const p = Sandbox.list({ query: { metadata: { group: 'errors-timeout' } } })
    while (p.hasNext) listed.push(...(await p.nextItems()))
    o.listedAfter = listed.map((s) => s.sandboxId)
    o.runningAfter = await sbx.isRunning().catch((e) => `error: ${e.message}`)
    o.connectAfter = await expectThrow(() => Sandbox.connect(sbx.sandboxId))
    o.killAfter = await Sandbox.kill(sbx.sandboxId)
  })
})

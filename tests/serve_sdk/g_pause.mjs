// Group g_pause: E2B's pause and resume through cellvm serve (docs/SERVE.md,
// "Pause and resume"): pause() and betaPause(), the state while paused,
// Sandbox.connect(id) and the instance's connect() resuming it with its
// variables, files and access token, a background command followed again
// after the resume (commands.connect), kill of a paused sandbox.

import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow, until } from './lib.mjs'

await runGroup('pause', async (scenario) => {
  const create = async (group) =>
    killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group } }))

  await scenario('pause_resume', async (o) => {
    const sbx = await create('later-pause')
    o.sandboxId = sbx.sandboxId
    await sbx.runCode('kept = [1, 2, 3]')
    await sbx.files.write('paused.txt', 'kept across pause')
    o.paused = await sbx.pause()
    const i = await Sandbox.getInfo(sbx.sandboxId)
    o.stateWhilePaused = i.state
    o.metadataWhilePaused = i.metadata
    const listed = []
    const p = Sandbox.list({ query: { metadata: { group: 'later-pause' }, state: ['paused'] } })
    while (p.hasNext) listed.push(...(await p.nextItems()))
    o.listedPaused = listed.map((s) => s.sandboxId)
    const running = []
    const r = Sandbox.list({ query: { metadata: { group: 'later-pause' }, state: ['running'] } })
    while (r.hasNext) running.push(...(await r.nextItems()))
    o.listedRunning = running.map((s) => s.sandboxId)
    o.pauseAgain = await expectThrow(() => sbx.pause())
    o.betaPauseAgain = await expectThrow(() => sbx.betaPause())
    const resumed = await Sandbox.connect(sbx.sandboxId)
    o.sameId = resumed.sandboxId === sbx.sandboxId
    o.stateAfter = (await resumed.getInfo()).state
    o.kept = (await resumed.runCode('sum(kept)')).text ?? null
    o.file = await resumed.files.read('paused.txt')
    o.killed = await resumed.kill()
  })

  await scenario('instance_connect', async (o) => {
    const sbx = await create('later-pause-instance')
    await sbx.runCode('n = 6')
    o.paused = await Sandbox.betaPause(sbx.sandboxId)
    o.runWhilePaused = await expectThrow(() => sbx.commands.run('true'))
    await sbx.connect() // the same object: its access token still works
    o.afterConnect = (await sbx.runCode('n * 7')).text ?? null
    o.sandboxId = sbx.sandboxId
    o.command = (await sbx.commands.run('echo resumed $E2B_SANDBOX_ID')).stdout
    o.pausedAgain = await sbx.pause()
    o.killed = await Sandbox.kill(sbx.sandboxId) // a paused sandbox's kill
    o.infoAfterKill = await expectThrow(() => Sandbox.getInfo(sbx.sandboxId))
    o.connectAfterKill = await expectThrow(() => Sandbox.connect(sbx.sandboxId))
  })
  await scenario('command_across_pause', async (o) => {
    const sbx = await create('later-pause-command')
    const h = await sbx.commands.run('while true; do echo tick; sleep 0.5; done', { background: true })
    await sbx.pause()
    await sbx.connect()
    o.listed = (await sbx.commands.list()).some((p) => p.pid === h.pid)
    let out = ''
    const again = await sbx.commands.connect(h.pid, { onStdout: (d) => { out += d } })
    o.samePid = again.pid === h.pid
    o.sawOutput = Boolean(await until(() => out.includes('tick'), 30_000))
    o.killed = await sbx.commands.kill(h.pid)
    o.waitAfterKill = await expectThrow(() => again.wait())
    o.connectUnknown = await expectThrow(() => sbx.commands.connect(999999))
  })
})

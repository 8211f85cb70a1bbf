// Group h, sandbox.pty: a terminal as E2B's SDK opens it (`/bin/bash -i -l`
// on a pseudo-terminal), typed input, resize, ^C, exit, kill, reconnect.

import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow, until } from './lib.mjs'

const enc = (s) => new TextEncoder().encode(s)

await runGroup('pty', async (scenario) => {
  // Its envs override E2B's default E2B_TEMPLATE_ID (checked in the terminal).
  const sbx = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group: 'pty' }, envs: { E2B_TEMPLATE_ID: 'pty-own' } }))

  await scenario('terminal', async (o) => {
    let out = ''
    const dec = new TextDecoder()
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += dec.decode(d, { stream: true }) }, envs: { SERVE_SDK_PTY: 'pty-env' } })
    o.pidType = typeof term.pid
    await sbx.pty.sendInput(term.pid, enc('echo "v=$((6*7)) $SERVE_SDK_PTY $TERM"\n'))
    o.sawEcho = Boolean(await until(() => out.includes('v=42 pty-env xterm-256color'), 30_000))
    o.sandboxId = sbx.sandboxId
    await sbx.pty.sendInput(term.pid, enc('echo "ids=$E2B_SANDBOX:$E2B_SANDBOX_ID:$E2B_TEMPLATE_ID"\n'))
    o.ids = (await until(() => out.match(/ids=(true:[^\s$"]+)/), 30_000))?.[1] ?? null
    await sbx.pty.sendInput(term.pid, enc('echo "size=$(stty size) tty=$(tty) uid=$(id -u)"\n'))
    o.line = (await until(() => out.match(/size=\d+ \d+ tty=\S+ uid=\d+/), 30_000))?.[0] ?? null
    // A foreground job that reports the window size on SIGWINCH until ^C.
    await sbx.pty.sendInput(term.pid, enc(`bash -c 'trap "echo winch=\\$(stty size)" WINCH; echo armed; while :; do sleep 0.1; done'\n`))
    o.armed = Boolean(await until(() => /[\r\n]armed\r\n/.test(out), 30_000))
    await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
    o.sawWinch = Boolean(await until(() => out.includes('winch=30 100'), 30_000))
    await sbx.pty.sendInput(term.pid, enc('\x03'))
    await sbx.pty.sendInput(term.pid, enc('echo "after=$(tput cols)"\n'))
    o.sawAfter = Boolean(await until(() => out.includes('after=100'), 30_000))
    o.listed = (await sbx.commands.list()).filter((p) => p.pid === term.pid).map((p) => ({ cmd: p.cmd, args: p.args }))
    await sbx.pty.sendInput(term.pid, enc('exit\n'))
    const r = await term.wait()
    o.exitCode = r.exitCode
    o.output = out.slice(-3000)
  })

  await scenario('kill', async (o) => {
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
    o.killed = await sbx.pty.kill(term.pid)
    o.waitAfterKill = await expectThrow(() => term.wait())
    o.gone = await expectThrow(() => sbx.commands.run(`kill -0 ${term.pid}`))
    o.killUnknown = await sbx.pty.kill(999999)
    o.resizeUnknown = await expectThrow(() => sbx.pty.resize(999999, { cols: 10, rows: 10 }))
  })

  await scenario('reconnect', async (o) => {
    let out1 = ''
    let out2 = ''
    const dec = new TextDecoder()
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out1 += dec.decode(d) }, envs: { FOO: 'first-bar' } })
    await sbx.pty.sendInput(term.pid, enc('echo "got=$FOO"\n'))
    o.first = Boolean(await until(() => out1.includes('got=first-bar'), 30_000))
    await term.disconnect()
    const again = await sbx.pty.connect(term.pid, { onData: (d) => { out2 += dec.decode(d) } })
    o.samePid = again.pid === term.pid
    await sbx.pty.sendInput(term.pid, enc('echo "again=$FOO"\nexit 0\n'))
    const r = await again.wait()
    o.exitCode = r.exitCode
    o.second = out2.includes('again=first-bar')
    o.firstHasSecond = out1.includes('again=')
  })
})

// Group c, commands (envd's process service): foreground and background runs,
// exit codes, streaming callbacks, stdin, kill, user, cwd, envs, list.

import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow, until, sleep } from './lib.mjs'

const res = (r) => ({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, error: r.error ?? null })

await runGroup('commands', async (scenario) => {
  let sbx
  await scenario('create', async (o) => {
    sbx = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group: 'commands' } }))
    o.sandboxId = sbx.sandboxId
  })
  if (!sbx) return

  await scenario('foreground', async (o) => {
    o.echo = res(await sbx.commands.run('echo hi'))
    o.both = res(await sbx.commands.run('echo out; echo err >&2'))
    // stdout as it comes, in order
    const chunks = []
    o.loop = res(await sbx.commands.run('for i in 1 2 3 4 5; do echo line$i; sleep 0.1; done', { onStdout: (d) => chunks.push(d) }))
    o.chunks = chunks
  })

  await scenario('nonzero_exit', async (o) => {
    o.thrown = await expectThrow(() => sbx.commands.run('echo partial; echo oops >&2; exit 3'))
    o.notFound = await expectThrow(() => sbx.commands.run('no-such-command-xyz'))
  })

  await scenario('background', async (o) => {
    const t0 = Date.now()
    const h = await sbx.commands.run('sleep 2; echo done', { background: true })
    o.returnedAfterMs = Date.now() - t0
    o.pidType = typeof h.pid
    o.pid = h.pid
    o.exitCodeBeforeWait = h.exitCode ?? null
    const r = await h.wait()
    o.waitedMs = Date.now() - t0
    o.result = res(r)
    o.handleStdout = h.stdout
    o.handleExitCode = h.exitCode
    // a failing background command: wait() raises CommandExitError
    const f = await sbx.commands.run('sleep 0.2; exit 7', { background: true })
    o.failedWait = await expectThrow(() => f.wait())
  })

  await scenario('stdin', async (o) => {
    o.supportsStdinClose = sbx.commands.supportsStdinClose
    const h = await sbx.commands.run('cat', { background: true, stdin: true })
    await sbx.commands.sendStdin(h.pid, 'hello\n')
    o.afterFirst = await until(() => (h.stdout === 'hello\n' ? h.stdout : null), 10_000).then((v) => v ?? h.stdout)
    await h.sendStdin(new TextEncoder().encode('world'))
    await until(() => h.stdout === 'hello\nworld', 10_000)
    await h.closeStdin()
    o.result = res(await h.wait())
  })

  await scenario('kill', async (o) => {
    const h = await sbx.commands.run('sleep 30', { background: true })
    await sleep(300)
    o.aliveBefore = res(await sbx.commands.run(`kill -0 ${h.pid} && echo alive`))
    const t0 = Date.now()
    o.killed = await h.kill()
    o.waitAfterKill = await expectThrow(() => h.wait())
    o.waitMs = Date.now() - t0
    o.probeAfter = await expectThrow(() => sbx.commands.run(`kill -0 ${h.pid}`))
    o.killUnknown = await sbx.commands.kill(999999)
    // kill through Commands by pid
    const h2 = await sbx.commands.run('sleep 30', { background: true })
    o.killedByPid = await sbx.commands.kill(h2.pid)
    o.wait2 = await expectThrow(() => h2.wait())
  })

  await scenario('users', async (o) => {
    o.root = res(await sbx.commands.run('whoami', { user: 'root' }))
    o.rootId = res(await sbx.commands.run('id -u', { user: 'root' }))
    o.default = res(await sbx.commands.run('whoami'))
    o.defaultId = res(await sbx.commands.run('id -u'))
    o.explicitUser = res(await sbx.commands.run('whoami', { user: 'user' }))
    o.home = res(await sbx.commands.run('echo $HOME; pwd'))
    o.rootHome = res(await sbx.commands.run('echo $HOME; pwd', { user: 'root' }))
    // the default user cannot write where only root may
    o.denied = await expectThrow(() => sbx.commands.run('touch /root/serve_sdk_denied'))
  })

  await scenario('cwd', async (o) => {
    o.tmp = res(await sbx.commands.run('pwd', { cwd: '/tmp' }))
    o.rel = res(await sbx.commands.run('mkdir -p sub && cd sub && pwd'))
    o.missing = await expectThrow(() => sbx.commands.run('pwd', { cwd: '/no/such/dir' }))
  })

  await scenario('envs', async (o) => {
    o.one = res(await sbx.commands.run('echo "$SERVE_SDK_FOO"', { envs: { SERVE_SDK_FOO: 'bar' } }))
    o.two = res(await sbx.commands.run('echo "$A-$B"', { envs: { A: '1', B: 'two words' } }))
    // E2B's default variables; a command's own envs win over them.
    o.sandboxId = sbx.sandboxId
    o.templateId = (await sbx.getInfo()).templateId
    o.defaults = res(await sbx.commands.run('echo "$E2B_SANDBOX $E2B_SANDBOX_ID $E2B_TEMPLATE_ID ${E2B_TEAM_ID-none}"'))
    o.overridden = res(await sbx.commands.run('echo "$E2B_SANDBOX_ID"', { envs: { E2B_SANDBOX_ID: 'mine' } }))
    o.after = res(await sbx.commands.run('echo "[$SERVE_SDK_FOO]"'))
  })

  await scenario('list', async (o) => {
    const h = await sbx.commands.run('sleep 45', { background: true, envs: { SERVE_SDK_TAG: 'listed' }, cwd: '/tmp' })
    await sleep(200)
    const procs = await sbx.commands.list()
    o.count = procs.length
    const mine = procs.find((p) => p.pid === h.pid)
    o.mine = mine ? { pid: mine.pid, cmd: mine.cmd, args: mine.args, cwd: mine.cwd ?? null, envs: mine.envs ?? null } : null
    o.pids = procs.map((p) => p.pid)
    await h.kill()
    await expectThrow(() => h.wait())
    o.pidsAfterKill = (await sbx.commands.list()).map((p) => p.pid)
    o.handlePid = h.pid
  })

  await scenario('connect', async (o) => {
    // A second handle on a running command (Process/Connect): its output from then on.
    const h = await sbx.commands.run('sleep 1; echo late', { background: true })
    const h2 = await sbx.commands.connect(h.pid)
    o.samePid = h2.pid === h.pid
    o.result = res(await h2.wait())
    o.connectUnknown = await expectThrow(() => sbx.commands.connect(999999))
  })
})

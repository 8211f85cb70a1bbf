// cellvm serve --backend agent-sandbox (tests/test_kube_backend.py): E2B's
// unchanged npm SDK against the control plane, whose sandboxes are claims of
// the stand-in's warm pool, each a real pod container. Prints what it
// observed as one JSON object; the checks are in tests/test_kube_backend.py.

import { Sandbox } from '@e2b/code-interpreter'

const out = {}
const failure = (e) => ({ name: e?.name ?? null, message: String(e?.message ?? e).slice(0, 500) })
const ids = async (opts) => (await Sandbox.list(opts).nextItems()).map((s) => s.sandboxId).sort()
try {
  const a = await Sandbox.create({ metadata: { suite: 'kube', n: '1' }, timeoutMs: 120_000 })
  out.a = a.sandboxId
  const ex = await a.runCode('import os\nprint(os.getuid())\n6 * 7')
  out.runCode = { text: ex.text ?? null, stdout: ex.logs.stdout, error: ex.error?.value ?? null }
  const chart = await a.runCode(
    'import matplotlib.pyplot as plt\n' +
      'plt.bar(["a", "b", "c"], [3, 1, 2])\n' +
      'plt.title("kube")\n' +
      'plt.show()'
  )
  out.chart = {
    error: chart.error?.value ?? null,
    formats: chart.results.map((r) => r.formats()),
    png: chart.results.map((r) => r.png ?? '').find((p) => p) ?? null,
  }
  const cmd = await a.commands.run('echo from-$(hostname)')
  out.command = { exitCode: cmd.exitCode, stdout: cmd.stdout }
  out.e2bSandboxId = (await a.commands.run('echo "$E2B_SANDBOX_ID"')).stdout
  const b = await Sandbox.create({ metadata: { suite: 'kube', n: '2' } })
  out.b = b.sandboxId
  out.bRunCode = (await b.runCode('1 + 1')).text ?? null
  out.listed = await ids()
  out.listedN2 = await ids({ query: { metadata: { n: '2' } } })
  await a.setTimeout(200_000)
  out.info = { id: (await a.getInfo()).sandboxId, endAt: (await a.getInfo()).endAt }
  out.killedA = await a.kill()
  out.aRunningAfterKill = await a.isRunning()
  out.bRunningAfterAKill = await b.isRunning()
  out.listedAfterKill = await ids()
  try {
    await Sandbox.connect(out.a)
    out.connectKilled = 'connected'
  } catch (e) {
    out.connectKilled = failure(e)
  }
  out.killedB = await b.kill()
  out.listedAtEnd = await ids()
} catch (e) {
  out.error = failure(e)
  process.exitCode = 1
}
console.log(JSON.stringify(out))

// The pod image's one sandbox (tests/test_oci.py): `cellvm serve --single` in a
// container, driven by E2B's unchanged npm SDK, configured only by
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY. Prints what it observed as
// one JSON object; the checks are in tests/test_oci.py.

import { Sandbox } from '@e2b/code-interpreter'

const out = {}
const failure = (e) => ({ name: e?.name ?? null, message: String(e?.message ?? e).slice(0, 500) })
let sbx
try {
  sbx = await Sandbox.create({ metadata: { suite: 'oci' } })
  out.sandboxId = sbx.sandboxId
  const ex = await sbx.runCode('import platform, os\nprint(os.getuid())\n6 * 7')
  out.runCode = { text: ex.text ?? null, stdout: ex.logs.stdout, error: ex.error?.value ?? null }
  const chart = await sbx.runCode(
    'import matplotlib.pyplot as plt\n' +
      'plt.bar(["a", "b", "c"], [3, 1, 2])\n' +
      'plt.title("pod")\n' +
      'plt.show()'
  )
  out.chart = {
    error: chart.error?.value ?? null,
    formats: chart.results.map((r) => r.formats()),
    png: chart.results.map((r) => r.png ?? '').find((p) => p) ?? null,
  }
  try {
    const second = await Sandbox.create()
    out.second = { created: second.sandboxId }
    await second.kill()
  } catch (e) {
    out.second = failure(e)
  }
  out.listed = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
  out.killed = await sbx.kill()
  out.runningAfterKill = await sbx.isRunning()
} catch (e) {
  out.error = failure(e)
  process.exitCode = 1
}
console.log(JSON.stringify(out))

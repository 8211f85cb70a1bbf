// E2B's `network` options through `cellvm serve` (tests/test_egress.py): a
// sandbox created with allowOut/denyOut reaches the allowed host through the
// guest's proxy, is refused the others, and updateNetwork changes that live.
// Argument: the port of the test's origin server, named allowed.test and
// denied.test by the server's $CELLVM_HOSTS. Prints one JSON object.

import { Sandbox, ALL_TRAFFIC } from '@e2b/code-interpreter'

const port = process.argv[2]
const out = {}
const fetchIn = async (sbx, host) => {
  const r = await sbx.commands.run(
    `curl -sS -o /tmp/body -w '%{http_code}' http://${host}:${port}/hello; echo; cat /tmp/body`,
    { timeoutMs: 60000 })
  const [status, ...body] = r.stdout.split('\n')
  return { status, body: body.join('\n') }
}
const sbx = await Sandbox.create({
  network: { allowOut: ['allowed.test'], denyOut: [ALL_TRAFFIC] },
  timeoutMs: 300000,
})
try {
  out.allowed = await fetchIn(sbx, 'allowed.test')
  out.denied = await fetchIn(sbx, 'denied.test')
  await sbx.updateNetwork({ allowOut: ['allowed.test', 'denied.test'], denyOut: [ALL_TRAFFIC] })
  out.deniedAfterUpdate = await fetchIn(sbx, 'denied.test')
  out.info = (await sbx.getInfo()).sandboxId === sbx.sandboxId
} finally {
  await sbx.kill()
}
console.log(JSON.stringify(out))

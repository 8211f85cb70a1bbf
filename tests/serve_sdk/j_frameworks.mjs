// What agent frameworks ask of `cellvm serve` through E2B's npm SDK (Mastra's
// E2BSandbox, ComputeSDK's e2b provider): Template.exists() before a create
// (GET /templates/aliases/{alias}), and getInfo() of a sandbox created with
// network options (SandboxDetail `network`). Prints one JSON object.

import { Sandbox, ALL_TRAFFIC } from '@e2b/code-interpreter'
import { Template } from 'e2b'

const out = {}
out.existsBase = await Template.exists('base')
out.existsCodeInterpreter = await Template.exists('code-interpreter-v1')
out.existsNone = await Template.exists('no-such-template-j')
const sbx = await Sandbox.create({
  network: { allowOut: ['example.com'], denyOut: [ALL_TRAFFIC], allowPublicTraffic: true },
  allowInternetAccess: true,
  timeoutMs: 300000,
})
try {
  const info = await sbx.getInfo()
  out.network = info.network
  out.allowInternetAccess = info.allowInternetAccess
  await sbx.updateNetwork({ allowOut: ['example.org'], denyOut: [ALL_TRAFFIC] })
  out.networkAfterUpdate = (await sbx.getInfo()).network
  const plain = await Sandbox.create({ timeoutMs: 300000 })
  try {
    const p = await plain.getInfo()
    out.plainNetwork = p.network ?? null
    out.plainAllowInternetAccess = p.allowInternetAccess ?? null
  } finally {
    await plain.kill()
  }
} finally {
  await sbx.kill()
}
console.log(JSON.stringify(out))

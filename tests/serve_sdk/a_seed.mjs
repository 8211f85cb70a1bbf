// Group a, the seed flow (client/python/examples/sales_chart.py as an E2B
// user writes it): create a sandbox, upload the sales CSV, pandas read +
// describe, a matplotlib bar chart returned as a PNG, kill.
// Usage: node a_seed.mjs PATH/TO/vendas.csv   (or $SERVE_SDK_CSV)

import fs from 'node:fs'
import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater } from './lib.mjs'

const csvPath = process.argv[2] || process.env.SERVE_SDK_CSV
if (!csvPath) {
  process.stderr.write('usage: node a_seed.mjs PATH/TO/vendas.csv\n')
  process.exit(2)
}
const csv = fs.readFileSync(csvPath, 'utf8')

const DESCRIBE = `
import pandas as pd
df = pd.read_csv("vendas.csv", parse_dates=["data"])
print(len(df), df["produto"].nunique())
df.describe()
`

const CHART = `
import json
import matplotlib.pyplot as plt
revenue = df.groupby("produto")["valor"].sum().sort_values(ascending=False)
print(json.dumps({k: round(float(v), 2) for k, v in revenue.items()}))
plt.figure(figsize=(8, 5))
plt.bar(revenue.index, revenue.values / 1000, label="revenue")
plt.title("Revenue by product, 2026")
plt.xlabel("product")
plt.ylabel("thousand R$")
plt.show()
`

await runGroup('seed', async (scenario) => {
  let sbx
  await scenario('create', async (o) => {
    const t0 = Date.now()
    sbx = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group: 'seed' } }))
    o.createMs = Date.now() - t0
    o.sandboxId = sbx.sandboxId
  })
  if (!sbx) return

  await scenario('upload', async (o) => {
    const info = await sbx.files.write('vendas.csv', csv)
    o.writeInfo = { name: info.name, path: info.path, type: info.type }
    // Read back through another route (a command): the bytes that arrived.
    const r = await sbx.commands.run('wc -c < vendas.csv && md5sum vendas.csv')
    o.wc = r.stdout
    o.hostBytes = Buffer.byteLength(csv)
  })

  await scenario('describe', async (o) => {
    const t0 = Date.now()
    const ex = await sbx.runCode(DESCRIBE, { timeoutMs: 120_000 })
    o.ms = Date.now() - t0
    o.stdout = ex.logs.stdout
    o.stderr = ex.logs.stderr
    o.error = ex.error ? { name: ex.error.name, value: ex.error.value } : null
    o.text = ex.text
    o.results = ex.results.map((r) => ({
      isMainResult: r.isMainResult,
      formats: r.formats(),
      html: r.html ? r.html.slice(0, 20000) : null,
      data: r.data ?? null,
    }))
  })

  await scenario('chart', async (o) => {
    const ex = await sbx.runCode(CHART, { timeoutMs: 120_000 })
    o.stdout = ex.logs.stdout
    o.error = ex.error ? { name: ex.error.name, value: ex.error.value, traceback: ex.error.traceback } : null
    o.results = ex.results.map((r) => {
      const png = r.png ? Buffer.from(r.png, 'base64') : null
      return {
        isMainResult: r.isMainResult,
        formats: r.formats(),
        text: r.text ?? null,
        pngBytes: png ? png.length : 0,
        pngMagicHex: png ? png.subarray(0, 8).toString('hex') : null,
        // IHDR: width and height, big-endian, at bytes 16..24
        pngSize: png && png.length >= 24 ? [png.readUInt32BE(16), png.readUInt32BE(20)] : null,
        chart: r.chart ? { type: r.chart.type, title: r.chart.title, elements: r.chart.elements } : null,
      }
    })
  })

  await scenario('kill', async (o) => {
    o.killed = await sbx.kill()
    o.runningAfter = await sbx.isRunning()
  })
})

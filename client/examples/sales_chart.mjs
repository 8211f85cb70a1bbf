// The sales-CSV chart example with E2B's own npm SDK, unchanged, against
// `cellvm serve` (README, "E2B's SDKs on your machine"). Only the three
// variables E2B's SDKs read point it here:
//
//   E2B_API_URL=http://127.0.0.1:3000 E2B_SANDBOX_URL=http://127.0.0.1:3000 E2B_API_KEY=...
//   node client/examples/sales_chart.mjs ../shared/fixtures/vendas.csv [out.png]
//
// It uploads the CSV into a micro-VM, runs pandas + matplotlib there and
// writes the chart the sandbox returns as a PNG file here.
import fs from 'node:fs'
import { Sandbox } from '@e2b/code-interpreter'

const [csvPath, outPath = 'sales_chart.png'] = process.argv.slice(2)
if (!csvPath) {
  console.error('usage: node sales_chart.mjs SALES.csv [OUT.png]')
  process.exit(2)
}

const ANALYSIS = `
import pandas as pd
import matplotlib.pyplot as plt

df = pd.read_csv("vendas.csv", parse_dates=["data"])
df["mes"] = df["data"].dt.to_period("M")
monthly = df.pivot_table(index="mes", columns="produto", values="valor", aggfunc="sum").fillna(0)
print(f"{len(df)} sales, {df['produto'].nunique()} products, "
      f"{df['data'].min():%Y-%m-%d} to {df['data'].max():%Y-%m-%d}")
print("Revenue by product (R$):")
print(df.groupby("produto")["valor"].sum().sort_values(ascending=False).round(2).to_string())

fig, ax = plt.subplots(figsize=(10, 5.5))
(monthly / 1000).plot(ax=ax, marker="o")
ax.set_title("Monthly revenue by product, 2026")
ax.set_xlabel("month")
ax.set_ylabel("revenue (thousand R$)")
ax.grid(True, alpha=0.3)
ax.legend(title="product", ncols=2, fontsize="small")
plt.show()
monthly.sum(axis=1).round(2)
`

const sbx = await Sandbox.create()
try {
  await sbx.files.write('vendas.csv', fs.readFileSync(csvPath))
  const execution = await sbx.runCode(ANALYSIS, {
    onStdout: (m) => process.stdout.write(m.line),
    onStderr: (m) => process.stderr.write(m.line),
  })
  if (execution.error) {
    console.error(`${execution.error.name}: ${execution.error.value}\n${execution.error.traceback}`)
    process.exit(1)
  }
  const chart = execution.results.find((r) => r.png)
  if (!chart) {
    console.error('the sandbox returned no chart')
    process.exit(1)
  }
  fs.writeFileSync(outPath, Buffer.from(chart.png, 'base64'))
  console.log(`monthly totals:\n${execution.text}`)
  console.log(`chart: ${outPath} (${chart.chart ? `a ${chart.chart.type} chart, ` : ''}sandbox ${sbx.sandboxId})`)
} finally {
  await sbx.kill()
}

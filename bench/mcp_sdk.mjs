// bench/mcp.py's third column: `run_code` of `1+1` as the official MCP
// TypeScript SDK's client sees it over stdio (it spawns `cellvm mcp`).
//   node bench/mcp_sdk.mjs CELLVM IMAGE N   -> one JSON line: {"ms": [...]}
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const [cellvm, image, n] = process.argv.slice(2);
// The SDK installed for the tests (tests/mcp_sdk, `npm ci`).
const sdk = join(dirname(fileURLToPath(import.meta.url)), "..", "tests", "mcp_sdk", "node_modules",
                 "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(join(sdk, "index.js"));
const { StdioClientTransport } = await import(join(sdk, "stdio.js"));

const client = new Client({ name: "cellvm-bench", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: cellvm, args: ["mcp", "--image", image],
                                                 env: process.env, stderr: "inherit" }));
const cell = { name: "run_code", arguments: { code: "1+1" } };
const check = (r) => {
  if (r.content[0].text !== "result:\n2") throw new Error(JSON.stringify(r));
};
check(await client.callTool(cell, undefined, { timeout: 300000 })); // the sandbox and its first cell
const ms = [];
for (let i = 0; i < Number(n); i++) {
  const t = process.hrtime.bigint();
  const r = await client.callTool(cell);
  ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  check(r);
}
await client.close();
process.stdout.write(JSON.stringify({ ms }) + "\n");

// The official MCP TypeScript SDK's client against cellvm (tests/test_mcp.py):
//   node suite.mjs stdio CELLVM IMAGE CSV    (spawns `cellvm mcp --image IMAGE`)
//   node suite.mjs http URL KEY CSV          (cellvm serve's /mcp)
// Runs the scenarios in one session (one sandbox) and prints one JSON object:
// {scenario: observations | {thrown: message}}; the Python side checks them.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const [mode, a, b, csvPath] = process.argv.slice(2);
const CALL = { timeout: 300000 }; // a first pandas import is slow under TCG
const out = {};

function transportFor(key) {
  if (mode === "stdio")
    return new StdioClientTransport({ command: a, args: ["mcp", "--image", b], env: process.env,
                                      stderr: "inherit" });
  return new StreamableHTTPClientTransport(new URL(a + "/mcp"),
                                           { requestInit: { headers: { "X-API-Key": key } } });
}

const texts = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text);
const images = (r) => r.content.filter((c) => c.type === "image");
const brief = (r) => ({ isError: r.isError === true, texts: texts(r),
                        images: images(r).map((i) => ({ mimeType: i.mimeType,
                          magicHex: Buffer.from(i.data, "base64").subarray(0, 8).toString("hex"),
                          bytes: Buffer.from(i.data, "base64").length })) });

async function scenario(name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = { thrown: String(e && e.message ? e.message : e), code: e && e.code };
  }
}

// Over HTTP, a wrong key is refused before any session exists.
if (mode === "http") {
  await scenario("wrong_key", async () => {
    const other = new Client({ name: "cellvm-tests-wrong-key", version: "1.0.0" });
    try {
      await other.connect(transportFor("e2b_not_the_key"));
      return { connected: true };
    } catch (e) {
      return { connected: false, message: String(e.message), code: e.code ?? null };
    }
  });
}

const client = new Client({ name: "cellvm-tests", version: "1.0.0" });
const transport = transportFor(b);
await client.connect(transport);
const call = async (name, args) => brief(await client.callTool({ name, arguments: args }, undefined, CALL));

await scenario("initialize", async () => ({
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  instructions: client.getInstructions(),
  latest: LATEST_PROTOCOL_VERSION,
  negotiated: transport.protocolVersion ?? null, // HTTP keeps it; stdio has no header
  sessionId: transport.sessionId ?? null,
}));

await scenario("tools_list", async () => {
  const { tools } = await client.listTools();
  const ajv = new Ajv({ strict: false });
  return tools.map((t) => {
    let schemaError = null;
    try {
      ajv.compile(t.inputSchema);
    } catch (e) {
      schemaError = String(e.message);
    }
    return { name: t.name, description: t.description, required: t.inputSchema.required ?? [],
             properties: Object.keys(t.inputSchema.properties ?? {}), type: t.inputSchema.type,
             schemaError, validEmpty: ajv.validate(t.inputSchema, {}) };
  });
});

await scenario("sales", async () => {
  const csv = readFileSync(csvPath, "utf8");
  const write = await call("write_file", { path: "vendas.csv", content: csv });
  const totals = await call("run_code", { code: [
    "import json, pandas as pd",
    "df = pd.read_csv('vendas.csv')",
    "print(json.dumps(df.groupby('produto')['valor'].sum().round(2).to_dict()))",
    "len(df)",
  ].join("\n") });
  const chart = await call("run_code", { code: [
    "import matplotlib.pyplot as plt",
    "s = df.groupby('produto')['valor'].sum().sort_values(ascending=False) / 1000",
    "fig, ax = plt.subplots(figsize=(8, 4.5))",
    "ax.bar(s.index, s.values)",
    "ax.set_title('Revenue by product, 2026')",
    "fig.savefig('chart.png')",
    "plt.show()",
  ].join("\n") });
  return { write, totals, chart };
});

await scenario("error_traceback", async () => {
  const error = await call("run_code", { code: "def f(x):\n    raise ValueError(f'bad input {x}')\nf(7)" });
  const fixed = await call("run_code", { code: "x_after_error = 5\nx_after_error * 2" });
  return { error, fixed };
});

await scenario("stderr", async () =>
  call("run_code", { code: "import sys\nprint('to out')\nprint('to err', file=sys.stderr)" }));

await scenario("files", async () => {
  const bin = Buffer.from([0, 1, 2, 250, 251, 252, 253, 254, 255]);
  return {
    writeB64: await call("write_file", { path: "data/bin.dat", content_base64: bin.toString("base64") }),
    size: await call("run_command", { command: "stat -c %s data/bin.dat && od -An -tu1 data/bin.dat" }),
    writeText: await call("write_file", { path: "data/notes.txt", content: "línea uno\nline two\n" }),
    readText: await call("read_file", { path: "data/notes.txt" }),
    readBinary: await call("read_file", { path: "/home/user/data/bin.dat" }),
    readImage: await call("read_file", { path: "chart.png" }),
    list: await call("list_files", { path: "data" }),
    listHome: await call("list_files", {}),
    missing: await call("read_file", { path: "no/such/file.txt" }),
  };
});

await scenario("commands", async () => ({
  ok: await call("run_command", { command: "echo hello; echo warn >&2; pwd; whoami" }),
  failing: await call("run_command", { command: "echo partial; echo broken >&2; exit 7" }),
  bash: await call("run_code", { code: "echo from-bash-kernel", language: "bash" }),
}));

await scenario("timeout", async () => {
  const runaway = await call("run_code", { code: "import time\nwhile True:\n    time.sleep(0.01)", timeout: 3 });
  const after = await call("run_code", { code: "x_after_error + 1" });
  const cmd = await call("run_command", { command: "sleep 60", timeout: 2 });
  return { runaway, after, cmd };
});

await scenario("bad_calls", async () => {
  const res = {};
  try {
    await client.callTool({ name: "no_such_tool", arguments: {} }, undefined, CALL);
    res.unknownTool = { thrown: null };
  } catch (e) {
    res.unknownTool = { thrown: String(e.message), code: e.code };
  }
  res.missing = await call("run_code", {});
  res.mistyped = await call("run_code", { code: 42 });
  res.badTimeout = await call("run_code", { code: "1", timeout: "soon" });
  res.extra = await call("read_file", { path: "x", mode: "r" });
  res.both = await call("write_file", { path: "x", content: "a", content_base64: "YQ==" });
  res.badBase64 = await call("write_file", { path: "x", content_base64: "***" });
  res.badLanguage = await call("run_code", { code: "1", language: "cobol" });
  await client.ping();
  res.stillServing = await call("run_code", { code: "x_after_error" });
  return res;
});

// A request the client gives up on (its timeout) is cancelled: the cell
// stops, and the next call runs at once rather than after the sleep.
await scenario("cancel", async () => {
  let thrown = null;
  try {
    await client.callTool({ name: "run_code", arguments: { code: "import time\ncancelled_cell = 'started'\ntime.sleep(600)\ncancelled_cell = 'finished'", timeout: 900 } },
                          undefined, { timeout: 4000 });
  } catch (e) {
    thrown = { message: String(e.message), code: e.code };
  }
  const after = await call("run_code", { code: "cancelled_cell" });
  return { thrown, after };
});

// Big output is cut with a marker; the call still answers.
await scenario("truncation", async () => ({
  ascii: await call("run_code", { code: "print('x' * 200000)" }),
  // Two-byte characters: the bound falls inside one (65536 is even, but
  // "stdout" starts after a one-byte 'a').
  multibyte: await call("run_code", { code: "print('a' + 'é' * 100000)" }),
  bigText: await (async () => {
    await call("run_command", { command: "python3 -c \"print('ü' * 5000000)\" > big.txt" });
    return call("read_file", { path: "big.txt" });
  })(),
}));

await scenario("close", async () => {
  const sessionId = transport.sessionId ?? null;
  if (mode === "http") await transport.terminateSession();
  await client.close();
  return { sessionId };
});

process.stdout.write(JSON.stringify(out) + "\n");

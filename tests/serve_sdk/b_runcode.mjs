// Group b, runCode: results, streaming callbacks, errors, state, execution
// counts, code contexts, languages, per-run envs, DataFrame display.

import { Sandbox } from '@e2b/code-interpreter'
import { runGroup, killLater, expectThrow } from './lib.mjs'

const err = (e) => (e ? { name: e.name, value: e.value, traceback: e.traceback } : null)
const results = (ex) =>
  ex.results.map((r) => ({
    isMainResult: r.isMainResult,
    formats: r.formats(),
    text: r.text ?? null,
    html: r.html ?? null,
    data: r.data ?? null,
    json: r.json ?? null,
    rawKeys: Object.keys(r.raw ?? {}).sort(),
  }))
const summary = (ex) => ({
  text: ex.text ?? null,
  stdout: ex.logs.stdout,
  stderr: ex.logs.stderr,
  error: err(ex.error),
  executionCount: ex.executionCount ?? null,
  results: results(ex),
})

await runGroup('runcode', async (scenario) => {
  let sbx
  await scenario('create', async (o) => {
    // Its envs override E2B's default E2B_TEMPLATE_ID (scenario default_envs).
    sbx = killLater(scenario, await Sandbox.create({ metadata: { suite: 'serve_sdk', group: 'runcode' }, envs: { E2B_TEMPLATE_ID: 'runcode-own' } }))
    o.sandboxId = sbx.sandboxId
  })
  if (!sbx) return

  await scenario('one_plus_one', async (o) => {
    Object.assign(o, summary(await sbx.runCode('1+1')))
  })

  await scenario('streaming', async (o) => {
    // Callbacks fire while the cell runs: the first line long before the end.
    const events = []
    const t0 = Date.now()
    const code = [
      'import sys, time',
      'print("first", flush=True)',
      'time.sleep(1.5)',
      'for i in range(5):',
      '    print(f"out{i}", flush=True)',
      '    print(f"err{i}", file=sys.stderr, flush=True)',
      '    time.sleep(0.05)',
    ].join('\n')
    const ex = await sbx.runCode(code, {
      onStdout: (m) => events.push({ s: 'stdout', line: m.line, error: m.error, at: Date.now() - t0 }),
      onStderr: (m) => events.push({ s: 'stderr', line: m.line, error: m.error, at: Date.now() - t0 }),
    })
    o.doneAt = Date.now() - t0
    o.events = events
    Object.assign(o, summary(ex))
  })

  await scenario('error', async (o) => {
    const seen = []
    const ex = await sbx.runCode('def f():\n    raise ValueError("boom")\n\nf()', { onError: (e) => seen.push(e.name) })
    Object.assign(o, summary(ex))
    o.onError = seen
    // The next cell runs normally.
    o.after = (await sbx.runCode('"still alive"')).text ?? null
  })

  await scenario('stateful', async (o) => {
    await sbx.runCode('x = 41\ndef inc(v):\n    return v + 1')
    o.text = (await sbx.runCode('inc(x)')).text ?? null
    await sbx.runCode('import math')
    o.math = (await sbx.runCode('math.factorial(5)')).text ?? null
  })

  await scenario('execution_count', async (o) => {
    const ctx = await sbx.createCodeContext()
    const counts = []
    for (const code of ['a = 1', 'a + 1', 'print(a)']) counts.push((await sbx.runCode(code, { context: ctx })).executionCount ?? null)
    o.counts = counts
    await sbx.removeCodeContext(ctx)
  })

  await scenario('contexts', async (o) => {
    const plain = await sbx.createCodeContext()
    o.plain = plain
    const tmp = await sbx.createCodeContext({ cwd: '/tmp', language: 'python' })
    o.tmp = tmp
    o.cwdInTmp = summary(await sbx.runCode('import os; os.getcwd()', { context: tmp }))
    o.cwdInPlain = (await sbx.runCode('import os; os.getcwd()', { context: plain })).text ?? null
    const listed = await sbx.listCodeContexts()
    o.listed = listed
    // Contexts are independent: a name set in one is not in another.
    await sbx.runCode('only_here = 5', { context: tmp })
    o.inOwn = (await sbx.runCode('only_here', { context: tmp })).text ?? null
    o.inOther = err((await sbx.runCode('only_here', { context: plain })).error)
    // restart: the state goes, the context stays.
    await sbx.restartCodeContext(tmp)
    o.afterRestart = err((await sbx.runCode('only_here', { context: tmp })).error)
    o.listedAfterRestart = (await sbx.listCodeContexts()).map((c) => c.id)
    // remove: gone from the list, and running in it is refused.
    await sbx.removeCodeContext(tmp.id)
    o.listedAfterRemove = (await sbx.listCodeContexts()).map((c) => c.id)
    o.runInRemoved = await expectThrow(() => sbx.runCode('1', { context: tmp }))
    o.removeAgain = await expectThrow(() => sbx.removeCodeContext(tmp.id))
    await sbx.removeCodeContext(plain)
  })

  await scenario('context_missing_cwd', async (o) => {
    // E2B runs `%cd cwd` in the new kernel, which only prints its failure: the
    // context is made, keeps the cwd asked for, and works in /home/user. A
    // bash kernel's `cd` fails instead: a 500.
    const c = await sbx.createCodeContext({ cwd: '/home/user/not-made-yet', language: 'python' })
    o.created = c
    o.listed = (await sbx.listCodeContexts()).filter((x) => x.id === c.id)
    o.cwd = (await sbx.runCode('import os; os.getcwd()', { context: c })).text ?? null
    await sbx.removeCodeContext(c)
    o.bash = await expectThrow(() => sbx.createCodeContext({ cwd: '/home/user/not-made-yet', language: 'bash' }))
  })

  await scenario('kernel_dies', async (o) => {
    // The kernel's process ends under a cell (os._exit, a crash, the OOM
    // killer): E2B's Jupyter restarts it and its server ends the cell with
    // ContextRestarting; the context goes on, empty.
    const c = await sbx.createCodeContext()
    await sbx.runCode('before = 1', { context: c })
    o.died = summary(await sbx.runCode('import os\nos._exit(3)', { context: c }))
    o.after = summary(await sbx.runCode('"back"', { context: c }))
    o.stateGone = err((await sbx.runCode('before', { context: c })).error)
    await sbx.removeCodeContext(c)
  })

  await scenario('lang_python', async (o) => {
    Object.assign(o, summary(await sbx.runCode('import sys; sys.version_info[0] * 10 + 2', { language: 'python' })))
  })

  await scenario('lang_js', async (o) => {
    o.log = summary(await sbx.runCode('console.log("Hello from " + "js")', { language: 'js' }))
    o.value = summary(await sbx.runCode('const jsv = 20 + 22; jsv', { language: 'js' }))
    o.state = summary(await sbx.runCode('jsv * 2', { language: 'javascript' }))
    o.await = summary(await sbx.runCode("await Promise.resolve('awaited')", { language: 'js' }))
  })

  await scenario('lang_ts', async (o) => {
    o.log = summary(await sbx.runCode('const message: string = "Hello TS"; console.log(message)', { language: 'ts' }))
    o.value = summary(await sbx.runCode('const n: number = 6; n * 7', { language: 'typescript' }))
  })

  await scenario('lang_bash', async (o) => {
    o.echo = summary(await sbx.runCode('echo hi', { language: 'bash' }))
    o.pwd = summary(await sbx.runCode('pwd; whoami', { language: 'bash' }))
    o.state = summary(await sbx.runCode('V=abc', { language: 'bash' }))
    o.stateRead = summary(await sbx.runCode('echo "v=$V"', { language: 'bash' }))
    o.bang = summary(await sbx.runCode('!pwd'))
  })

  await scenario('bash_stderr', async (o) => {
    // E2B's bash contexts are bash_kernel's: bash on a terminal, so what it
    // and its commands write on stderr arrives as stdout.
    o.mixed = summary(await sbx.runCode('echo out; echo err >&2; echo out2', { language: 'bash' }))
    o.failed = summary(await sbx.runCode('ls /nonexistent-dir', { language: 'bash' }))
    o.notFound = summary(await sbx.runCode('no-such-command-here', { language: 'bash' }))
    o.partial = summary(await sbx.runCode("printf 'a\\rb\\n'; printf 'no newline'", { language: 'bash' }))
  })

  await scenario('unknown_language', async (o) => {
    // E2B's server cannot start a kernel for it: a 500, SandboxError("500 ...").
    o.run = await expectThrow(() => sbx.runCode('1', { language: 'cobol' }))
    o.context = await expectThrow(() => sbx.createCodeContext({ language: 'cobol' }))
  })

  await scenario('timeout_interrupts', async (o) => {
    // runCode's timeoutMs aborts the request; E2B's server sees the client
    // leave and interrupts the kernel, so the next cell runs at once.
    const t0 = Date.now()
    o.timedOut = await expectThrow(() => sbx.runCode('import time\ntime.sleep(60)\nprint("late")', { timeoutMs: 2000 }))
    o.timedOutMs = Date.now() - t0
    const t1 = Date.now()
    o.next = summary(await sbx.runCode('"next"'))
    o.nextMs = Date.now() - t1
  })

  await scenario('envs', async (o) => {
    o.python = summary(await sbx.runCode('import os; os.getenv("SERVE_SDK_FOO")', { envs: { SERVE_SDK_FOO: 'bar' } }))
    o.pythonAfter = summary(await sbx.runCode("import os; os.getenv('SERVE_SDK_FOO', 'default')"))
    o.bash = summary(await sbx.runCode('echo "[$SERVE_SDK_FOO]"', { language: 'bash', envs: { SERVE_SDK_FOO: 'baz' } }))
    o.bashAfter = summary(await sbx.runCode('echo "[$SERVE_SDK_FOO]"', { language: 'bash' }))
    o.js = summary(await sbx.runCode('process.env.SERVE_SDK_FOO', { language: 'js', envs: { SERVE_SDK_FOO: 'qux' } }))
  })

  // E2B's default variables, in every language's context (E2B's server sets envd's /envs in each),
  // with the create's envs over them.
  await scenario('default_envs', async (o) => {
    o.sandboxId = sbx.sandboxId
    o.python = summary(await sbx.runCode('import os; print(os.environ["E2B_SANDBOX"], os.environ["E2B_SANDBOX_ID"], os.environ["E2B_TEMPLATE_ID"], os.environ.get("E2B_TEAM_ID"))'))
    o.js = summary(await sbx.runCode('[process.env.E2B_SANDBOX, process.env.E2B_SANDBOX_ID, process.env.E2B_TEMPLATE_ID].join(" ")', { language: 'js' }))
    o.ts = summary(await sbx.runCode('const sid: string = process.env.E2B_SANDBOX_ID as string; sid', { language: 'ts' }))
    o.bash = summary(await sbx.runCode('echo "$E2B_SANDBOX $E2B_SANDBOX_ID $E2B_TEMPLATE_ID"', { language: 'bash' }))
    o.perCall = summary(await sbx.runCode('import os; os.environ["E2B_SANDBOX_ID"]', { envs: { E2B_SANDBOX_ID: 'per-call' } }))
  })

  await scenario('dataframe', async (o) => {
    Object.assign(o, summary(await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})')))
  })

  await scenario('dict_json', async (o) => {
    Object.assign(o, summary(await sbx.runCode('{"k": [1, 2], "s": "v"}')))
  })
})

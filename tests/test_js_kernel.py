"""JavaScript and TypeScript contexts (docs/JAVASCRIPT.md) against a dev-mode
agent: Node.js runs node-executor/driver.js, confined as Python executors are.
Needs `node` (/usr/bin/node, or CELLVM_NODE) and Debian's node-acorn and
node-typescript (.ci/packages)."""

import os
import time

import pytest

from conftest import AgentProcess

NODE = os.environ.get("CELLVM_NODE", "/usr/bin/node")

pytestmark = pytest.mark.skipif(not os.access(NODE, os.X_OK), reason=f"no {NODE}")


@pytest.fixture
def js(sbx):
    """A JavaScript context of its own."""
    from cellvm import NotFoundException
    c = sbx.create_code_context(language="js")
    yield c
    try:
        sbx.remove_code_context(c)
    except NotFoundException:
        pass


def test_languages_and_aliases(sbx):
    for lang in ("js", "javascript", "JavaScript", "ts", "typescript"):
        e = sbx.run_code("console.log('Hello, World!')", language=lang)
        assert e.error is None, (lang, e.error)
        assert e.logs.stdout == ["Hello, World!\n"], lang
    langs = {c.language for c in sbx.list_code_contexts()}
    assert {"python", "javascript", "typescript"} <= langs


def test_default_javascript_context_listed_before_use(fresh_agent):
    """E2B lists a javascript context in a new sandbox; ours starts on first use."""
    from cellvm import Sandbox
    with Sandbox.connect(fresh_agent.addr) as s:
        contexts = s.list_code_contexts()
        js = [c for c in contexts if c.language == "javascript"]
        assert len(js) == 1 and js[0].cwd == fresh_agent.workdir
        assert "node" not in open("/proc/self/cmdline").read()
        assert not [p for p in _node_pids() if _ppid_chain_has(p, fresh_agent.proc.pid)]
        assert s.run_code("6 * 7", language="js").text == "42"
        assert [p for p in _node_pids() if _ppid_chain_has(p, fresh_agent.proc.pid)]
        # The same context ran it.
        assert [c.id for c in s.list_code_contexts() if c.language == "javascript"] == [js[0].id]


def _node_pids():
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if len(argv) > 1 and argv[1].endswith(b"node-executor/driver.js"):
                out.append(int(d))
    return out


def _ppid_chain_has(pid, ancestor):
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
    return False


def test_global_scope_persists(sbx, js):
    run = lambda code: sbx.run_code(code, context=js)
    assert run("var v = 1; let l = 2; const c = 3; function f() { return v + l + c }\n"
               "class K { get x() { return 41 } }").error is None
    assert run("f() + new K().x").text == "47"
    assert run("v = 10; l = 20; f()").text == "33"
    # As in E2B's kernel: a const or let declared again is V8's SyntaxError...
    e = run("const c = 4")
    assert e.error.name == "SyntaxError"
    assert e.error.value == "Identifier 'c' has already been declared"
    # ...and the context goes on with its old value.
    assert run("c").text == "3"
    # Names a top-level await's cell declares are globals afterwards.
    assert run("const t = await Promise.resolve(5); let [a, b] = [1, 2]; function g() { return t }").error is None
    assert run("g() + a + b").text == "8"


def test_results_as_e2b_shows_them(sbx, js):
    run = lambda code: sbx.run_code(code, context=js)
    assert run("1 + 1").text == "2"
    assert run("await Promise.resolve('Hello World!')").text == "Hello World!"
    assert run("'a string'").text == "a string"
    assert run("({a: 1, b: [1, 2], s: 'x'})").text == "{ a: 1, b: [ 1, 2 ], s: 'x' }"
    assert run("new Map([[1, 'one']])").text == "Map(1) { 1 => 'one' }"
    assert run("Promise.resolve(7)").text == "7"
    e = run("undefined")
    assert e.results == [] and e.error is None
    e = run("let nothing = 1")
    assert e.results == [] and e.error is None
    e = run("console.log('x'); 5")
    assert e.logs.stdout == ["x\n"] and e.text == "5"
    assert e.execution_count == run("1").execution_count - 1


def test_imports_and_require(sbx, workdir):
    with open(os.path.join(workdir, "helper.js"), "w") as f:
        f.write("module.exports = { twice: (x) => 2 * x };\n")
    with open(os.path.join(workdir, "esm.mjs"), "w") as f:
        f.write("export const answer = 42; export default 'dflt';\n")
    c = sbx.create_code_context(language="javascript", cwd=workdir)
    try:
        run = lambda code: sbx.run_code(code, context=c)
        e = run("import { readFileSync } from 'fs'\nconsole.log(typeof readFileSync)")
        assert e.error is None and e.logs.stdout == ["function\n"]
        assert run("typeof readFileSync").text == "function"
        assert run("import * as path from 'node:path'; path.basename('/a/b.txt')").text == "b.txt"
        assert run("import os, { platform } from 'os'; platform() === os.platform()").text == "true"
        assert run("require('./helper.js').twice(21)").text == "42"
        assert run("import dflt, { answer } from './esm.mjs'; `${dflt} ${answer}`").text == "dflt 42"
        assert run("(await import('./esm.mjs')).answer").text == "42"
        e = run("import { nope } from 'no-such-package-here'")
        assert e.error is not None and "no-such-package-here" in e.error.value
    finally:
        sbx.remove_code_context(c)


def test_env_per_execution_and_sandbox(agent):
    from cellvm import Sandbox
    with Sandbox.connect(agent.addr, envs={"SBX_VAR": "sandbox"}) as s:
        c = s.create_code_context(language="js")
        run = lambda code, **kw: s.run_code(code, context=c, **kw)
        assert run("process.env.SBX_VAR").text == "sandbox"
        assert run("process.env.FOO", envs={"FOO": "bar"}).text == "bar"
        assert run("process.env.FOO || 'default'").text == "default"
        assert run("process.env.SBX_VAR", envs={"SBX_VAR": "overwrite"}).text == "overwrite"
        assert run("process.env.SBX_VAR").text == "sandbox"
        # As E2B's server: a run's variable is deleted after it, even one the
        # context had set before (only a sandbox-wide one gets its value back).
        run("process.env.MINE = 'mine'")
        assert run("process.env.MINE", envs={"MINE": "run"}).text == "run"
        assert run("'MINE' in process.env").text == "false"
        # Subprocesses see them too.
        e = run("require('child_process').execSync('echo $FOO').toString().trim()", envs={"FOO": "sub"})
        assert e.text == "sub"
        s.remove_code_context(c)


def test_cwd_is_the_contexts(sbx, agent, workdir):
    assert sbx.run_code("process.cwd()", language="js").text == agent.workdir
    c = sbx.create_code_context(language="ts", cwd=workdir)
    try:
        assert c.language == "typescript" and c.cwd == workdir
        assert sbx.run_code("process.cwd()", context=c).text == workdir
        sbx.run_code("require('fs').writeFileSync('made.txt', 'hi')", context=c)
        assert open(os.path.join(workdir, "made.txt")).read() == "hi"
    finally:
        sbx.remove_code_context(c)


def test_errors_and_the_context_survives(sbx, js):
    run = lambda code: sbx.run_code(code, context=js)
    run("let kept = 'still here'")
    e = run("function thrower() { throw new TypeError('bad input') }\nthrower()")
    assert (e.error.name, e.error.value) == ("TypeError", "bad input")
    assert "TypeError: bad input" in e.error.traceback
    assert "at thrower (evalmachine.<anonymous>:1:" in e.error.traceback
    assert "driver.js" not in e.error.traceback and "node:vm" not in e.error.traceback
    e = run("await Promise.reject(new RangeError('nope'))")
    assert (e.error.name, e.error.value) == ("RangeError", "nope")
    e = run("Promise.reject(new Error('rejected'))")
    assert (e.error.name, e.error.value) == ("Error", "rejected")
    # A rejection nobody handles, while the cell runs.
    e = run("Promise.reject(new Error('unhandled')); 1")
    assert (e.error.name, e.error.value) == ("Error", "unhandled")
    e = run("setTimeout(() => { throw new Error('later') }, 10); await new Promise(r => setTimeout(r, 300))")
    assert (e.error.name, e.error.value) == ("Error", "later")
    e = run("this is not javascript")
    assert e.error.name == "SyntaxError"
    assert e.error.value == "Unexpected identifier" or e.error.value.startswith("Unexpected identifier")
    e = run("throw 'a string'")
    assert (e.error.name, e.error.value) == ("string", "a string")
    assert run("kept").text == "still here"


def test_typescript(sbx):
    run = lambda code: sbx.run_code(code, language="ts")
    e = run("const message: string = 'Hello, World!'; console.log(message)")
    assert e.logs.stdout == ["Hello, World!\n"] and e.error is None
    assert run("interface P { x: number; y?: string }\nconst p: P = { x: 1 }\np.x").text == "1"
    assert run("enum Color { Red, Green }\nColor.Green").text == "1"
    assert run("function id<T>(x: T): T { return x }\nid<number>(3)").text == "3"
    assert run("type N = number; const n = (5 as N) * 2; n").text == "10"
    assert run("const later: number = await Promise.resolve(9); later").text == "9"
    assert run("import { join } from 'path'; join('a', 'b')").text == "a/b"
    # Types are stripped, not checked (as E2B).
    assert run("const wrong: number = 'text' as any as number; typeof wrong").text == "string"
    e = run("const broken: = 1")
    assert e.error is not None and e.error.name == "SyntaxError"
    # The javascript context takes TypeScript's syntax too, as E2B's kernel does.
    assert sbx.run_code("const typed: number = 2; typed * 2", language="js").text == "4"


def test_output_streams_while_the_cell_runs(sbx, js):
    seen = []
    t0 = time.monotonic()
    e = sbx.run_code("console.log('first'); console.error('err');\n"
                     "await new Promise(r => setTimeout(r, 1500));\nconsole.log('second')",
                     context=js, on_stdout=lambda m: seen.append((m.line, time.monotonic() - t0)))
    took = time.monotonic() - t0
    assert e.logs.stdout == ["first\n", "second\n"] and e.logs.stderr == ["err\n"]
    assert seen[0][0] == "first\n" and seen[0][1] < took - 1.0
    # A subprocess writes to the context's pipes.
    e = sbx.run_code("require('child_process').execSync('echo out; echo err >&2', {stdio: 'inherit'}); 0",
                     context=js)
    assert "out\n" in "".join(e.logs.stdout) and "err\n" in "".join(e.logs.stderr)
    e = sbx.run_code("process.stdout.write(Buffer.from([0xc3])); process.stdout.write(Buffer.from([0xa9, 0x0a]))",
                     context=js)
    assert "".join(e.logs.stdout) == "é\n"


def test_interrupt_and_timeout(sbx, js):
    from cellvm import TimeoutException
    sbx.run_code("let survivor = 'alive'", context=js)
    t0 = time.monotonic()
    with pytest.raises(TimeoutException):
        sbx.run_code("while (true) {}", context=js, timeout=1)
    # The synchronous loop stops at the interrupt: the context keeps its state.
    assert time.monotonic() - t0 < 2.5
    assert sbx.run_code("survivor", context=js).text == "alive"
    with pytest.raises(TimeoutException):
        sbx.run_code("await new Promise(() => {})", context=js, timeout=1)
    assert sbx.run_code("survivor", context=js).text == "alive"


def test_a_loop_after_await_is_killed_and_restarted(sbx, js):
    """V8 cannot stop JavaScript running from a promise's continuation: the agent's
    kill 2 s after the interrupt ends it, and the context restarts empty."""
    sbx.run_code("let before = 1", context=js)
    from cellvm import TimeoutException
    t0 = time.monotonic()
    with pytest.raises(TimeoutException):
        sbx.run_code("await null; while (true) {}", context=js, timeout=1)
    e = sbx.run_code("typeof before", context=js)
    assert e.text == "undefined"
    assert time.monotonic() - t0 < 10


def test_confined_as_python_executors(sbx, agent):
    py = sbx.run_code("import os; print(os.getuid(), open('/proc/self/status').read().split('Seccomp:')[1].split()[0])")
    uid, seccomp = py.logs.stdout[0].split()
    e = sbx.run_code("const st = require('fs').readFileSync('/proc/self/status', 'utf8');\n"
                     "`${process.getuid()} ${st.split('Seccomp:')[1].trim().split(/\\s/)[0]}`", language="js")
    assert e.text == f"{uid} {seccomp}" and seccomp == "2"
    # The filter's rules hold: a denied syscall (unshare of a user namespace) fails.
    e = sbx.run_code("require('child_process').spawnSync('unshare', ['-U', 'true']).status", language="js")
    assert e.text != "0"


def test_restart_and_remove(sbx, js):
    from cellvm import NotFoundException
    sbx.run_code("globalThis.mark = 1", context=js)
    sbx.restart_code_context(js)
    assert sbx.run_code("typeof mark", context=js).text == "undefined"
    sbx.remove_code_context(js)
    with pytest.raises(NotFoundException):
        sbx.run_code("1", context=js)


def test_output_cap_holds_for_javascript():
    a = AgentProcess("--output-max", "10000", preload="")
    try:
        from cellvm import Sandbox
        with Sandbox.connect(a.addr) as s:
            e = s.run_code("for (let i = 0; i < 1000; i++) console.log('x'.repeat(99))", language="js")
            out = "".join(e.logs.stdout)
            assert len(out) <= 10000
            assert "output truncated" in "".join(e.logs.stderr)
            assert s.run_code("1 + 1", language="js").text == "2"
    finally:
        a.stop()


def test_missing_node_is_a_clear_error(tmp_path):
    """Without Node.js a JavaScript cell fails with an error that says so (after
    the agent's usual start retries), and Python contexts are unaffected."""
    from cellvm import SandboxException
    old = os.environ.get("CELLVM_NODE")
    os.environ["CELLVM_NODE"] = str(tmp_path / "no-node-here")
    env_agent = None
    try:
        env_agent = AgentProcess(preload="")
        from cellvm import Sandbox
        with Sandbox.connect(env_agent.addr, request_timeout=30) as s:
            with pytest.raises(SandboxException) as exc:
                s.run_code("1", language="js", timeout=20)
            assert "no Node.js at " + str(tmp_path / "no-node-here") in str(exc.value)
            assert "Debian's nodejs" in str(exc.value)
            assert s.run_code("1 + 1").text == "2"
    finally:
        if old is None:
            os.environ.pop("CELLVM_NODE", None)
        else:
            os.environ["CELLVM_NODE"] = old
        if env_agent:
            env_agent.stop()


def test_next_context_gets_a_warm_node(fresh_agent):
    """After a first JavaScript context the zygote keeps a Node.js started (the
    spare): the next context is that process, already running before it was asked."""
    from cellvm import Sandbox
    with Sandbox.connect(fresh_agent.addr) as s:
        assert s.run_code("1", language="js").text == "1"
        mine = lambda: [p for p in _node_pids() if _ppid_chain_has(p, fresh_agent.proc.pid)]
        used = {int(s.run_code("process.pid", language="js").text)}
        deadline = time.monotonic() + 30
        while not set(mine()) - used and time.monotonic() < deadline:
            time.sleep(0.05)
        spare = set(mine()) - used
        assert len(spare) == 1, spare
        # Confined before any context asked for it: the same uid as the executors.
        with open(f"/proc/{next(iter(spare))}/status") as f:
            st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        assert st["Seccomp"].strip() == "2"
        c = s.create_code_context(language="ts")
        pid = int(s.run_code("process.pid", context=c).text)
        assert {pid} == spare
        assert s.run_code("const n: number = 2; n * 21", context=c).text == "42"
        assert s.run_code("process.cwd()", context=c).text == fresh_agent.workdir


def test_interrupt_request(sbx, js):
    """INTERRUPT (Sandbox.interrupt): a synchronous loop ends with Node's own
    interruption error and the context keeps its names; a loop V8 cannot stop
    (after an await) is killed 2 s later and the client is told, as E2B tells it,
    ContextRestarting (the agent's ContextRestarted)."""
    import threading
    sbx.run_code("let kept = 7", context=js)
    for code, name, value_part in (
            ("while (true) {}", "Error", "Script execution was interrupted by `SIGINT`"),
            ("await null; while (true) {}", "ContextRestarting", "Context was restarted")):
        timer = threading.Timer(1.0, lambda: sbx.interrupt(js))
        timer.start()
        try:
            t0 = time.monotonic()
            e = sbx.run_code(code, context=js, timeout=30)
        finally:
            timer.cancel()
        assert e.error is not None and e.error.name == name, e.error
        assert value_part in e.error.value
        assert time.monotonic() - t0 < 10
    # Killed and restarted: a fresh namespace that works.
    assert sbx.run_code("typeof kept", context=js).text == "undefined"
    assert sbx.run_code("1 + 1", context=js).text == "2"

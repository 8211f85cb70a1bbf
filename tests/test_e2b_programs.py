"""E2B programs as people write them (E2B's README and docs, e2b-cookbook
examples, the code-interpreter SDK's own tests), with the LLM's generated code
replaced by fixed code strings.

Programs that only need the code interpreter run twice, on cellvm and on the
ipykernel reference of test_e2b_compat (driven as E2B's server drives it):
both what the program prints and the Executions it gets must agree. Programs
that need E2B's sandbox services (files, commands, timeouts, sandbox-wide
envs, charts) run unchanged as E2B programs (`from e2b_code_interpreter
import ...`) against the dev agent, and what they print is checked against
what E2B's SDK and docs say they print. test_e2b_formats_as_read_from_source
pins the repr/str of E2B's SDK objects as E2B's source writes them.
"""

import ast
import base64
import json
import os
import re
import textwrap
import uuid

import pytest

pytest.importorskip("jupyter_client")

from cellvm import Context, FileType, Sandbox, WriteInfo  # noqa: E402
from conftest import run_e2b_program  # noqa: E402
from test_e2b_compat import ANSI, KernelSandbox, png_size, reference_kernel, view  # noqa: E402


# --- the reference's share of E2B's sandbox ----------------------------------

class ReferenceSandbox(KernelSandbox):
    """The ipykernel reference with what these programs use besides run_code:
    files.write/make_dir (on this host, where the kernel runs, relative paths
    from the home directory as E2B's envd resolves them) and code contexts
    (a kernel each, started in `cwd` as E2B's server does with `%cd`)."""

    home = None

    @property
    def files(self):
        return _LocalFiles(self.home)

    def run_code(self, code, context=None, **kw):
        if context is not None:
            return self.contexts[context.id].run_code(code, **kw)
        return super().run_code(code, **kw)

    def create_code_context(self, cwd=None, language=None, request_timeout=None):
        cm = reference_kernel(cwd=cwd or self.home, cls=KernelSandbox)
        k = cm.__enter__()
        ctx = Context(str(uuid.uuid4()), language or "python", cwd or self.home)
        self.contexts[ctx.id] = k
        self._exits.append(cm)
        return ctx

    def list_code_contexts(self):
        return [Context("default", "python", self.home)] + [
            Context(i, "python", "") for i in self.contexts]

    def restart_code_context(self, context):
        from test_e2b_compat import E2B_STARTUP
        k = self.contexts[context.id]
        k.manager.restart_kernel(now=True)
        k.client.wait_for_ready(timeout=60)
        k.client.execute_interactive(E2B_STARTUP, silent=True, timeout=60)

    def remove_code_context(self, context):  # E2B: a Context or its id
        del self.contexts[getattr(context, "id", context)]


class _LocalFiles:
    def __init__(self, home):
        self.home = home

    def _path(self, path):
        return os.path.join(self.home, path)

    def write(self, path, data):
        path = self._path(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if hasattr(data, "read"):
            data = data.read()
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        return WriteInfo(name=os.path.basename(path), type=FileType.FILE, path=path)

    def make_dir(self, path):
        os.makedirs(self._path(path), exist_ok=True)
        return True


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    home = str(tmp_path_factory.mktemp("home"))
    with reference_kernel(cwd=home, cls=ReferenceSandbox) as k:
        k.home, k.contexts, k._exits = home, {}, []
        try:
            yield k
        finally:
            for cm in k._exits:
                cm.__exit__(None, None, None)


# --- the programs -------------------------------------------------------------
# Each is `program(sandbox, print, home, local)`: `print` records what the
# program prints, `home` is the sandbox's home (E2B's /home/user), `local` a
# directory of this host for what the program saves. Each returns the
# Executions it got.

def hello_world(sandbox, print, home, local):
    # e2b-cookbook hello-world-python (and E2B's README).
    execution = sandbox.run_code("print('hello world')")
    print(execution.logs)
    print(execution)
    print(execution.logs.stdout)
    return [execution]


MONTE_CARLO = """
import numpy as np
import matplotlib.pyplot as plt

rng = np.random.default_rng(42)
x = rng.uniform(-1, 1, 1000)
y = rng.uniform(-1, 1, 1000)
inside = x**2 + y**2 <= 1
pi_estimate = 4 * inside.sum() / len(x)
print(f"Estimated value of pi: {pi_estimate}")

plt.figure(figsize=(6, 6))
plt.scatter(x[inside], y[inside], color="orange", s=5)
plt.scatter(x[~inside], y[~inside], color="grey", s=5)
plt.xlim(-1, 1)
plt.ylim(-1, 1)
plt.title("Monte Carlo estimation of pi")
plt.show()
pi_estimate
"""


def claude_code_interpreter(sandbox, print, home, local):
    # e2b-cookbook claude-code-interpreter-python: code_interpret() as the tool,
    # its results stringified for the model, the first result's PNG saved.
    def code_interpret(e2b_code_interpreter, code):
        print("Running code interpreter...")
        exec_result = e2b_code_interpreter.run_code(
            code,
            on_stderr=lambda stderr: print("[Code Interpreter stderr]", stderr),
            on_stdout=lambda stdout: print("[Code Interpreter stdout]", stdout),
        )
        if exec_result.error:
            print("[Code Interpreter ERROR]", exec_result.error.name, exec_result.error.value)
            return [{"error": f"ERROR: {exec_result.error.name}: {exec_result.error.value}"}], exec_result
        return exec_result.results, exec_result

    results, ex1 = code_interpret(sandbox, MONTE_CARLO)
    print(f"Tool Result: {len(results)} results")
    print("tool_result content:", str(results))
    result = results[0]
    print(f"First result: {result}")
    if hasattr(result, "png") and result.png:
        path = os.path.join(local, "output.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(result.png))
        with open(path, "rb") as f:
            print("Image saved to output.png:", f.read(8) == b"\x89PNG\r\n\x1a\n", png_size(result.png))
    results, ex2 = code_interpret(sandbox, "import pandas as pd\npd.read_csv('missing.csv')")
    print(results)
    return [ex1, ex2]


SALES = "month,region,revenue\n2024-01,north,120\n2024-01,south,80\n2024-02,north,180\n" \
        "2024-02,south,95.5\n2024-03,north,160\n2024-03,south,\n"


def csv_upload_and_analysis(sandbox, print, home, local):
    # E2B docs "Analyze data with AI": the user's CSV uploaded with files.write
    # (a file object, a path relative to the home), its path put in the code.
    with open(os.path.join(local, "sales.csv"), "w") as f:
        f.write(SALES)
    with open(os.path.join(local, "sales.csv"), "rb") as f:
        dataset_path_in_sandbox = sandbox.files.write("sales.csv", f)
    print(dataset_path_in_sandbox.name, dataset_path_in_sandbox.path)
    execution = sandbox.run_code(textwrap.dedent(f"""
        import pandas as pd

        df = pd.read_csv("{dataset_path_in_sandbox.path}")
        print(df)
        print(df.dtypes)
        print(df.isna().sum().to_dict())
        df["revenue"].sum()
        """))
    if execution.error:
        raise RuntimeError(execution.error)
    print("stdout:")
    print("".join(execution.logs.stdout or []).strip())
    print("stderr:")
    print("".join(execution.logs.stderr or []).strip())
    print("text:")
    print(execution.text)
    pivot = sandbox.run_code("df.pivot_table(index='month', columns='region', values='revenue')")
    print(pivot.text)
    print(pivot.results[0].formats(), sorted(pivot.results[0].data or {}))
    return [execution, pivot]


BAR_CHART = """
import matplotlib.pyplot as plt

categories = ['Category A', 'Category B', 'Category C', 'Category D']
values = [10, 20, 15, 25]

plt.figure(figsize=(10, 6))
plt.bar(categories, values, color='skyblue')
plt.xlabel('Categories')
plt.ylabel('Values')
plt.title('Values by Category')
plt.show()
"""


def chart_saved_from_png(sandbox, print, home, local):
    # E2B docs "Charts & visualizations" (static charts): every result with a
    # PNG written to a file.
    execution = sandbox.run_code(BAR_CHART)
    for idx, result in enumerate(execution.results):
        print(idx, result, result.formats(), result.is_main_result)
        if result.png:
            with open(os.path.join(local, f"chart-{idx}.png"), "wb") as f:
                f.write(base64.b64decode(result.png))
            print(f"Chart saved to chart-{idx}.png", png_size(result.png))
    fig = sandbox.run_code("fig, ax = plt.subplots()\nax.plot([1, 2, 3], [1, 4, 9])\nfig")
    print([(r.is_main_result, r.formats(), r.text) for r in fig.results])
    saved = sandbox.run_code("fig.savefig('plot.png')\nplt.close(fig)\nimport os; os.path.getsize('plot.png') > 0")
    print(saved.text, saved.results[0].formats())
    return [execution, fig, saved]


def streaming_callbacks(sandbox, print, home, local):
    # E2B docs "Streaming": on_stdout/on_stderr/on_error print what they get;
    # on_result gets each Result (the code indented, as the docs write it).
    code_to_run = """
  import time
  import sys
  print("This goes first to stdout")
  time.sleep(0.3)
  print("This goes later to stderr", file=sys.stderr)
  time.sleep(0.3)
  print("This goes last")
"""
    got = []
    ex1 = sandbox.run_code(
        code_to_run,
        on_error=lambda error: print("error:", error),
        on_stdout=lambda data: got.append(data) or print("stdout:", data),
        on_stderr=lambda data: got.append(data) or print("stderr:", data),
    )
    print([(type(m).__name__, m.line, m.error, isinstance(m.timestamp, int)) for m in got])
    ex2 = sandbox.run_code(
        BAR_CHART + "\nimport pandas as pd\ndisplay(pd.DataFrame({'v': values}, index=categories))\n'done'",
        on_result=lambda result: print("result:", type(result).__name__, result, result.is_main_result),
    )
    errors = []
    ex3 = sandbox.run_code("print('about to fail')\nraise ValueError('bad input')",
                           on_error=lambda error: errors.append(error) or print("error:", error.name, error.value),
                           on_stdout=lambda data: print("stdout:", str(data), end=""))
    print(type(errors[0]).__name__, errors[0] is ex3.error)
    return [ex1, ex2, ex3]


def execution_to_json(sandbox, print, home, local):
    # A tool handing the whole Execution to the model as JSON.
    ex1 = sandbox.run_code("import math\nprint('computing')\nmath.sqrt(2)")
    print(ex1.to_json())
    ex2 = sandbox.run_code("import pandas as pd\npd.DataFrame({'x': [1, 2], 'y': ['a', 'b']})")
    payload = json.loads(ex2.to_json())
    print(sorted(payload), [sorted(r) for r in payload["results"]], payload["results"][0]["data"])
    print(json.loads(payload["logs"]), payload["error"])
    ex3 = sandbox.run_code("{'status': 'ok', 'items': [1, 2, 3]}")
    print(ex3.to_json())
    ex4 = sandbox.run_code("int('x')")
    err = json.loads(json.loads(ex4.to_json())["error"])
    print(err["name"], err["value"], ANSI.sub("", err["traceback"]).splitlines()[-1])
    return [ex1, ex2, ex3, ex4]


def langchain_tool(sandbox, print, home, local):
    # e2b-cookbook langchain-python CodeInterpreterFunctionTool.call(): the
    # observation dict, everything but the results sent back as JSON.
    def call(code):
        execution = sandbox.run_code(code)
        return execution, {"results": execution.results, "stdout": execution.logs.stdout,
                           "stderr": execution.logs.stderr,
                           "error": execution.error.to_json() if execution.error else None}

    executions = []
    for code in ["import numpy as np\nprices = np.array([10.5, 11.0, 9.75, 12.25])\nprint(prices.mean())",
                 "returns = np.diff(prices) / prices[:-1]\nreturns.round(4)",
                 "import warnings\nwarnings.warn('small sample')\nprices.std()"]:
        execution, observation = call(code)
        executions.append(execution)
        content = json.dumps({k: v for k, v in observation.items() if k not in ("results")}, indent=2)
        print(re.sub(r'"/[^"]*?\.py:', '"<cell>.py:', content))
        print([str(r) for r in observation["results"]])
    return executions


TRUNCATED_AND_BROKEN = [
    "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\ndf['b']",
    "print('before')\nundefined_function()",
    "import nonexistent_package_xyz",
    "data = [1, 2,\n",                      # the model's answer cut off
    "for i in range(3):\n",
    "print(\"\"\"unterminated",
    "def f(:\n    pass",
    "if True:\n        x = 1\n    y = 2",
    "result = {'a': 1}\nresult['b']",
    "import json\njson.loads('{bad json')",
]


def errors_fed_back_to_the_model(sandbox, print, home, local):
    # e2b-cookbook claude examples: an error goes back to the model as
    # "ERROR: name: value" with the traceback's last line.
    executions = []
    for code in TRUNCATED_AND_BROKEN:
        execution = sandbox.run_code(code)
        executions.append(execution)
        if execution.error:
            tb = ANSI.sub("", execution.error.traceback).strip().splitlines()
            print(f"ERROR: {execution.error.name}: {execution.error.value}\n{tb[-1]}")
        print("stdout:", execution.logs.stdout, "text:", execution.text)
    return executions


def code_contexts(sandbox, print, home, local):
    # E2B's SDK tests (test_contexts.py, test_cwd.py) and docs: contexts of
    # their own, one with its cwd, isolated from each other. (Two new ones:
    # the default context's history belongs to every program before.)
    sandbox.files.make_dir("project")
    main = sandbox.create_code_context()
    ctx = sandbox.create_code_context(cwd=f"{home}/project")
    print(type(ctx).__name__, ctx.language, ctx.cwd, main.cwd)
    executions = [sandbox.run_code("x = 'main context'", context=main),
                  sandbox.run_code("x = 'project context'", context=ctx)]
    for c in (main, ctx):
        ex = sandbox.run_code("x", context=c)
        executions.append(ex)
        print(ex.text)
    executions.append(sandbox.run_code("from pathlib import Path; print(Path.cwd())", context=ctx))
    print("".join(executions[-1].logs.stdout).strip())
    executions.append(sandbox.run_code("open('notes.txt', 'w').write('hello')", context=ctx))
    executions.append(sandbox.run_code("open('project/notes.txt').read()", context=main))
    print(executions[-1].text)
    print(ctx.id in [c.id for c in sandbox.list_code_contexts()])
    sandbox.restart_code_context(ctx)
    executions.append(sandbox.run_code("x", context=ctx))
    print(executions[-1].error.name, executions[-1].error.value)
    for c in (main, ctx):
        sandbox.remove_code_context(c)
    print(ctx.id in [c.id for c in sandbox.list_code_contexts()])
    return executions


def envs_per_execution(sandbox, print, home, local):
    # E2B's SDK tests env_vars/test_python.py: envs for one run_code only.
    result = sandbox.run_code("import os; os.getenv('FOO')", envs={"FOO": "bar"}, language="python")
    result_empty = sandbox.run_code("import os; os.getenv('FOO', 'default')", language="python")
    print(result.results[0].text.strip(), result_empty.results[0].text.strip())
    shell = sandbox.run_code("import subprocess\nprint(subprocess.run('echo $FOO', shell=True, "
                             "capture_output=True, text=True).stdout, end='')", envs={"FOO": "child"})
    print("".join(shell.logs.stdout))
    runtime = sandbox.run_code("import os; os.environ['RUNTIME_ENV'] = 'value'")
    after = sandbox.run_code("os.getenv('RUNTIME_ENV')")
    print(after.text)
    return [result, result_empty, shell, runtime, after]


def display_rich_outputs(sandbox, print, home, local):
    # E2B's SDK tests (test_custom_repr_object.py, test_display_data.py) and
    # docs: what display() gives, formats() of each result, result[fmt].
    code = r"""
from IPython.display import display, HTML, Markdown, Latex, JSON, SVG, Math
display({'text/latex': r'\text{CustomReprObject}'}, raw=True)
display(HTML("<b>bold</b>"))
display(Markdown("# Title\n*it*"))
display(Latex(r"$\alpha + \beta$"))
display(Math(r"x^2"))
display(JSON({"a": [1, 2]}))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'))

class Report:
    def _repr_html_(self):
        return "<table><tr><td>42</td></tr></table>"
    def _repr_markdown_(self):
        return "| v |\n|---|\n| 42 |"

Report()
"""
    execution = sandbox.run_code(code)
    for result in execution.results:
        print(result.formats(), result.is_main_result, repr(result))
        for fmt in result.formats():
            value = result[fmt]
            print(" ", fmt, value if fmt != "svg" else value[:40])
    return [execution]


def dataframe_data(sandbox, print, home, local):
    # E2B's SDK test_data.py and the docs: a DataFrame's result.data.
    execution = sandbox.run_code("""
        import pandas as pd
        pd.DataFrame({"a": [1, 2, 3], "when": pd.date_range("2024-01-01", periods=3),
                      "score": [0.5, None, 2.25]})
        """)
    data = execution.results[0].data
    print(execution.results[0].formats(), sorted(data), len(data["a"]), data["when"], data["score"])
    series = sandbox.run_code("import pandas as pd\npd.Series([1, 2], name='n').to_frame().T")
    print(series.results[0].data)
    return [execution, series]


def indented_sdk_test_cells(sandbox, print, home, local):
    # E2B's SDK tests pass indented triple-quoted code (test_streaming.py:
    # a plot and a value give two results to on_result).
    out = []
    execution = sandbox.run_code(
        """
        import matplotlib.pyplot as plt
        import numpy as np

        x = np.linspace(0, 20, 100)
        y = np.sin(x)

        plt.plot(x, y)
        plt.show()

        x[:3]
        """,
        on_result=out.append,
    )
    print(len(out), [r.is_main_result for r in out], out[1].text)
    return [execution]


def shell_and_magics(sandbox, print, home, local):
    # E2B's SDK test_bash.py ("!pwd") and what model-written cells use.
    cells = ["!pwd", "!echo hello from shell && echo err >&2",
             "files = !ls\nsorted(f for f in files if f.endswith('.csv'))",
             "%env GREETING=hi\nimport os; os.environ['GREETING']",
             "%%bash\necho from bash\nexit 0\n",
             "%%writefile helper.py\ndef double(v):\n    return v * 2\n",
             "from helper import double\ndouble(21)",
             "%run helper.py\ndouble(4)",
             "%pwd"]
    executions = []
    for cell in cells:
        ex = sandbox.run_code(cell)
        executions.append(ex)
        # chunk boundaries of a stream differ (docs/SDK.md): the text joined
        print(repr("".join(ex.logs.stdout)), repr("".join(ex.logs.stderr)), ex.text,
              ex.error and ex.error.name)
    return executions


def agent_loop_state(sandbox, print, home, local):
    # A multi-step agent: state across cells, each Execution printed for the log.
    steps = [
        "import statistics\nscores = [72, 88, 95, 61, 79]\nprint(len(scores), 'scores loaded')",
        "def grade(s):\n    return 'A' if s >= 90 else 'B' if s >= 80 else 'C'\n[grade(s) for s in scores]",
        "summary = {'mean': statistics.mean(scores), 'median': statistics.median(scores)}\nsummary",
        "print(f\"mean={summary['mean']:.1f}\")\nsummary['mean'] > 75",
        "scores.sort(); scores",
    ]
    executions = []
    for i, code in enumerate(steps, 1):
        execution = sandbox.run_code(code)
        executions.append(execution)
        print(f"step {i}:", execution)
        print("  text:", execution.text, "count delta:", execution.execution_count - executions[0].execution_count)
    return executions


COMPARED = [hello_world, claude_code_interpreter, csv_upload_and_analysis, chart_saved_from_png,
            streaming_callbacks, execution_to_json, langchain_tool, errors_fed_back_to_the_model,
            code_contexts, envs_per_execution, display_rich_outputs, dataframe_data,
            indented_sdk_test_cells, shell_and_magics, agent_loop_state]


# jupyter_client's packer, in the reference as in E2B, sends NaN and infinities
# (a DataFrame's e2b/data) as the strings 'nan'/'inf', as cellvm does, and
# warns once on the cell's stderr with a path into E2B's own installation,
# which cellvm does not copy (docs/SDK.md).
PACKER_WARNING = re.compile(r"[^\n]*jupyter_client/session\.py:\d+: UserWarning: Message serialization "
                            r"failed with:.*?\n  content = self\.pack\(content\)\n", re.S)


# A stream's chunks: Logs' repr, its to_json(), and that inside Execution's.
LOG_LIST = re.compile(r'(Logs\(stdout: |, stderr: |"std(?:out|err)": |\\"std(?:out|err)\\": )\[')


def _chunks_at(text, start, kind):
    """(end, chunks, render) of the list literal at text[start], written as
    `kind` says (a Python repr, JSON, or JSON inside a JSON string)."""
    if kind.startswith("\\"):
        parse, render = (lambda s: json.loads(json.loads(f'"{s}"')),
                         lambda v: json.dumps(json.dumps(v))[1:-1])
    elif kind.startswith('"'):
        parse, render = json.loads, json.dumps
    else:
        parse, render = ast.literal_eval, repr
    end = start
    while (end := text.find("]", end) + 1) > 0:
        try:
            chunks = parse(text[start:end])
        except (ValueError, SyntaxError):
            continue
        if isinstance(chunks, list) and all(isinstance(c, str) for c in chunks):
            return end, chunks, render
        return None
    return None


def joined_chunks(text):
    """ipykernel's OutStream sends what was written within its flush interval
    (0.2 s) as one chunk, so where a stream's text is cut depends on the
    machine's load (a loaded CI once saw `print(5, 'scores loaded')` arrive
    as '5' and ' scores loaded\\n'). Each stream's chunks become one."""
    out, pos = [], 0
    for m in LOG_LIST.finditer(text):
        start = m.end() - 1
        found = None if start < pos else _chunks_at(text, start, m.group(1).lstrip(", "))
        if found is None:
            continue
        end, chunks, render = found
        out += [text[pos:start], render(["".join(chunks)] if chunks else [])]
        pos = end
    return "".join(out) + text[pos:]


def clean(text, home, reference):
    """What legitimately differs: the home directory's path, the kernel's pid
    in a cell's file name, ANSI colours, object addresses, "chart" (E2B's chart extractor is
    not in the reference kernel; test_charts.py checks cellvm's), the
    packer's warning above, and where a stream's text is cut into chunks."""
    if text is None:
        return None
    text = joined_chunks(text)
    text = text.replace(home, "/home/user")
    text = ANSI.sub("", text)
    text = re.sub(r"\\u001b\[[0-9;]*m", "", text)
    text = re.sub(r"/ipykernel_\d+/", "/ipykernel_<pid>/", text)
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x...", text)
    text = text.replace(", 'chart'", "").replace(', "chart"', "")
    if reference:
        text = PACKER_WARNING.sub("", text)
    return text


def clean_view(executions, home, reference):
    out = view(executions)
    for ex in out:
        for key in ("stdout", "stderr", "text"):
            ex[key] = clean(ex[key], home, reference)
        if ex["error"] is not None:
            ex["error"] = tuple(clean(v, home, reference) if isinstance(v, str) else v for v in ex["error"])
        for r in ex["results"]:
            for key in ("text", "html", "markdown"):
                r[key] = clean(r[key], home, reference)
    return out


def run_program(program, sandbox, home, local, reference):
    printed = []

    def record(*args, sep=" ", end="\n", **_):
        printed.append(sep.join(str(a) for a in args) + ("" if end == "\n" else end))

    os.makedirs(local, exist_ok=True)
    executions = program(sandbox, record, home, local)
    return clean("\n".join(printed), home, reference).split("\n"), clean_view(executions, home, reference)


def assert_same_run(got, want):
    """(printed lines, executions) of cellvm and of the reference agree."""
    (got_printed, got_ex), (want_printed, want_ex) = got, want
    assert want_printed != [""], "the program printed nothing"
    assert got_printed == want_printed
    assert len(got_ex) == len(want_ex)
    for i, (g, w) in enumerate(zip(got_ex, want_ex)):
        assert g == w, f"execution {i} differs"


@pytest.mark.parametrize("program", COMPARED, ids=[p.__name__ for p in COMPARED])
def test_program_same_as_ipykernel(program, agent, reference, tmp_path):
    want = run_program(program, reference, reference.home, str(tmp_path / "ref"), True)
    with Sandbox.connect(agent.addr) as sbx:  # E2B: `with Sandbox.create() as sandbox:`
        got = run_program(program, sbx, agent.workdir, str(tmp_path / "cellvm"), False)
    assert_same_run(got, want)


# --- programs that need E2B's sandbox services, run unchanged -----------------
# Run with /usr/bin/python3, E2B's module names from client/python/compat and
# $CELLVM_ADDR (conftest.run_e2b_program); $E2B_PROGRAM_DIR is a directory of
# the sandbox user's. Expected: what E2B's SDK and docs say they print.

SANDBOX_LIFECYCLE_AND_ENVS = '''
from e2b_code_interpreter import Sandbox

# E2B's SDK tests test_env_vars.py (override) and env_vars/test_python.py.
sbx = Sandbox.create(envs={"FOO": "bar", "SBX": "value"})
sbx.run_code("import os; os.environ['FOO'] = 'bar'; os.environ['RUNTIME_ENV'] = 'value'")
print(sbx.run_code("import os; os.getenv('FOO')", envs={"FOO": "baz"}).text)
print(sbx.run_code("import os; os.getenv('RUNTIME_ENV')").text)
print(sbx.run_code("import os; os.getenv('SBX')").text)
print(sbx.run_code("import os; os.getenv('FOO')").text)
# code-interpreter template/server/messaging.py (ContextWebSocket.execute):
# the sandbox's envs are set once, at a context's first execution, so a
# cell's change to one stays; after a run with `envs`, each of its keys is
# set back to the sandbox's value.
sbx.run_code("os.environ['SBX'] = 'changed'")
print(sbx.run_code("os.getenv('SBX')").text)
sbx.run_code("os.environ['SBX'] = 'by the cell'", envs={"SBX": "per run"})
print(sbx.run_code("os.getenv('SBX')").text)
print(sbx.commands.run("echo $SBX").stdout, end="")
print(sbx.run_code("!echo $SBX").logs.stdout)
print(sbx.kill())

# E2B's README: a sandbox as a context manager, state kept between cells.
with Sandbox() as sandbox:
    sandbox.run_code("x = 1")
    execution = sandbox.run_code("x+=1; x")
    print(execution.text, sandbox.is_running())
'''


COMMANDS = '''
from e2b_code_interpreter import Sandbox, CommandExitException

with Sandbox.create() as sandbox:
    # E2B docs "Streaming command output": the callbacks get the text (str).
    seen = []
    result = sandbox.commands.run("echo hello; sleep 0.2; echo world >&2; echo done",
                                  on_stdout=lambda data: seen.append(("out", type(data).__name__, data)),
                                  on_stderr=lambda data: seen.append(("err", type(data).__name__, data)))
    print(sorted(seen))
    print(repr(result.stdout), repr(result.stderr), result.exit_code, result.error)
    print(result)

    # A failing command raises; the exception is the CommandResult too.
    try:
        sandbox.commands.run("echo partial; echo 'no such file' >&2; exit 2")
    except CommandExitException as e:
        print(type(e).__name__, e.exit_code, repr(e.stdout), repr(e.stderr))
        print(str(e))

    # E2B docs "Running commands in background".
    handle = sandbox.commands.run("for i in 1 2 3; do echo tick $i; sleep 0.1; done", background=True)
    print(type(handle).__name__, isinstance(handle.pid, int))
    done = handle.wait(on_stdout=lambda data: print("bg:", data.strip()))
    print(done.exit_code, done.stdout.split())
    sleeper = sandbox.commands.run("sleep 30", background=True)
    print(sleeper.kill())
    print(sandbox.commands.run("pip --version >/dev/null && echo pip ok").stdout.strip())
'''


FILES = '''
import os
from e2b_code_interpreter import Sandbox, FileType

work = os.environ["E2B_PROGRAM_DIR"]
with Sandbox.create() as sandbox:
    # E2B docs "Read & write files", "Upload data", "Download data".
    info = sandbox.files.write(work + "/data/notes.txt", "first line\\nsecond line\\n")
    print(info.name, info.type, info.path == work + "/data/notes.txt")
    sandbox.files.write(work + "/data/raw.bin", bytes(range(5)))
    print(sandbox.files.read(work + "/data/notes.txt").splitlines())
    raw = sandbox.files.read(work + "/data/raw.bin", format="bytes")
    print(type(raw).__name__, list(raw))
    for entry in sorted(sandbox.files.list(work + "/data"), key=lambda e: e.name):
        print(entry.name, entry.type, entry.type == FileType.FILE, entry.size)
    print(sandbox.files.exists(work + "/data/notes.txt"), sandbox.files.exists(work + "/nope.txt"))

    # The code writes a file; the program downloads it.
    execution = sandbox.run_code(f"""
import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({{"day": [1, 2, 3], "sales": [3, 5, 4]}})
df.to_csv("{work}/report.csv", index=False)
df.plot(x="day", y="sales")
plt.savefig("{work}/report.png")
plt.close()
print("saved")
""")
    print(execution.logs.stdout, execution.error)
    print(sandbox.files.read(work + "/report.csv").splitlines())
    png = sandbox.files.read(work + "/report.png", format="bytes")
    print(bytes(png[:8]) == b"\\x89PNG\\r\\n\\x1a\\n")
    sandbox.files.remove(work + "/data/raw.bin")
    print(sorted(e.name for e in sandbox.files.list(work + "/data")))
'''


TIMEOUTS = '''
from e2b_code_interpreter import Sandbox
from e2b import TimeoutException

with Sandbox.create() as sandbox:
    # E2B's SDK test_timeout.py: a timed-out execution raises, the sandbox
    # stays usable.
    context = sandbox.create_code_context()
    try:
        sandbox.run_code("import time; time.sleep(5)", context=context, timeout=1)
    except TimeoutException as e:
        print(type(e).__name__, isinstance(e, Exception))
        print(e)
    result = sandbox.run_code("x = 1; x", context=context, timeout=15)
    print(result.text)
    try:
        sandbox.commands.run("sleep 5", timeout=1)
    except TimeoutException as e:
        print("command:", type(e).__name__)
'''


CHART_DATA = '''
from e2b_code_interpreter import Sandbox

# E2B docs "Interactive charts": the chart's data from result.chart.
code = """
import matplotlib.pyplot as plt

authors = ['Author A', 'Author B', 'Author C', 'Author D']
sales = [100, 200, 300, 400]

plt.figure(figsize=(10, 6))
plt.bar(authors, sales, label='Books Sold', color='blue')
plt.xlabel('Authors')
plt.ylabel('Number of Books Sold')
plt.title('Book Sales by Authors')
plt.tight_layout()
plt.show()
"""
with Sandbox.create() as sandbox:
    execution = sandbox.run_code(code)
    chart = execution.results[0].chart
    print("Type:", chart.type)
    print("Title:", chart.title)
    print("X Label:", chart.x_label)
    print("Y Label:", chart.y_label)
    print("X Unit:", chart.x_unit)
    print("Y Unit:", chart.y_unit)
    print("Elements:")
    for element in chart.elements:
        print("\\n  Label:", element.label)
        print("  Value:", element.value)
        print("  Group:", element.group)
'''


# sandbox.files call by call, as E2B's SDK tests use it (packages/python-sdk/
# tests/sync/sandbox_sync/files/: test_make_dir, test_write, test_read,
# test_files_list, test_info, test_rename, test_remove, test_watch). Paths are
# printed relative to the program's directory ("~"). Expected, from E2B's
# sources: e2b/sandbox_sync/filesystem/filesystem.py (make_dir True/False,
# write_files([]) == [], read formats str/bytearray/iterator of bytes, list
# depth check "depth should be at least 1", envd's error messages passed
# through as FileNotFoundException/InvalidArgumentException); envd
# (e2b-dev/infra packages/envd) internal/api/download.go ("path '...' does not
# exist", "path '...' is a directory"), internal/services/filesystem/utils.go
# entryInfo ("file not found: lstat ...: no such file or directory"), dir.go
# ListDir/MakeDir ("path is not a directory: ...", "path already exists but it
# is not a directory: ..."), move.go (destination parents created; "source
# file not found: rename OLD NEW: ..."), remove.go (os.RemoveAll: a missing
# path is no error), shared/pkg/filesystem/entry.go (mode: permission bits;
# a symlink has its target's type and mode, symlink_target the resolved
# path); e2b/sandbox_sync/filesystem/watch_handle.py ("The watcher is
# already stopped"); fsnotify's CREATE then WRITE for `echo hi > new-file`.
FILES_API = '''
import io
import os
import time
from e2b import (Sandbox, FileType, FilesystemEventType, NotFoundException, FileNotFoundException,
                 InvalidArgumentException, SandboxException)

work = os.environ["E2B_PROGRAM_DIR"]
d = work + "/tree"


def rel(text):
    return text.replace(work, "~")


with Sandbox.create() as sandbox:
    # test_make_dir.py: True once created (parents too), False when it exists.
    print(sandbox.files.make_dir(d + "/subdir1/subdir1_1"), sandbox.files.make_dir(d + "/subdir1/subdir1_1"))
    sandbox.files.make_dir(d + "/subdir2")
    # filesystem.py write/write_files: str, bytes or a file object; a list of
    # WriteEntry gives a list of WriteInfo, [] for none.
    info = sandbox.files.write(d + "/file1.txt", "Hello, world!")
    print(type(info).__name__, info.name, rel(info.path))
    infos = sandbox.files.write_files([
        {"path": d + "/bin.dat", "data": b"\\x00\\x01\\x02"},
        {"path": d + "/io.txt", "data": io.BytesIO(b"from a file object")},
        {"path": d + "/new/parents/deep.txt", "data": "missing parents are created"},
    ])
    print([(i.name, rel(i.path)) for i in infos], sandbox.files.write_files([]))

    # test_read.py: text (str), bytes (bytearray), stream (chunks of bytes).
    print(repr(sandbox.files.read(d + "/file1.txt")))
    print(repr(sandbox.files.read(d + "/bin.dat", format="bytes")))
    print(b"".join(sandbox.files.read(d + "/io.txt", format="stream")))
    print(sandbox.files.read(d + "/new/parents/deep.txt"))

    # test_files_list.py: depth None/1 are the children, 2 a level more, in walk order.
    for depth in (None, 1, 2):
        print(depth, [(rel(e.path), e.type.name) for e in sandbox.files.list(d, depth=depth)])
    # test_files_list.py test_file_entry_details / test_info.py: EntryInfo fields.
    entry = [e for e in sandbox.files.list(d) if e.name == "file1.txt"][0]
    print(entry.name, entry.type, rel(entry.path), entry.size, oct(entry.mode), entry.permissions,
          type(entry.modified_time).__name__, entry.symlink_target)
    info = sandbox.files.get_info(d + "/subdir1")
    print(info.name, info.type, rel(info.path), info.size > 0, oct(info.mode), info.permissions)
    # test_info.py test_file_symlink: a symlink has its target's type and the resolved target.
    sandbox.commands.run("ln -s file1.txt link.txt", cwd=d)
    link = sandbox.files.get_info(d + "/link.txt")
    print(link.type, rel(link.symlink_target), oct(link.mode))
    print(sandbox.files.exists(d + "/file1.txt"), sandbox.files.exists(d + "/subdir2"),
          sandbox.files.exists(d + "/nope.txt"))

    # Errors: the SDK raises envd's message (sandbox_sync/filesystem/filesystem.py).
    for call in (lambda: sandbox.files.read(d + "/nope.txt"),
                 lambda: sandbox.files.read(d + "/nope.txt", format="stream"),
                 lambda: sandbox.files.get_info(d + "/nope.txt"),
                 lambda: sandbox.files.rename(d + "/nope.txt", d + "/other.txt"),
                 lambda: sandbox.files.read(d),
                 lambda: sandbox.files.list(d + "/file1.txt"),
                 lambda: sandbox.files.list(d, depth=0),
                 lambda: sandbox.files.make_dir(d + "/file1.txt")):
        try:
            call()
        except (NotFoundException, InvalidArgumentException) as e:
            print(type(e).__name__, isinstance(e, NotFoundException), rel(str(e)))

    try:
        sandbox.files.list(d + "/nodir")
    except FileNotFoundException as e:
        print(type(e).__name__)

    # test_rename.py: rename returns the new entry; test_remove.py: a missing path is no error.
    moved = sandbox.files.rename(d + "/io.txt", d + "/moved/io.txt")
    print(moved.name, rel(moved.path), sandbox.files.exists(d + "/io.txt"))
    print(sandbox.files.remove(d + "/bin.dat"), sandbox.files.remove(d + "/bin.dat"),
          sandbox.files.exists(d + "/bin.dat"))
    sandbox.files.remove(d + "/subdir1")
    print(sorted(e.name for e in sandbox.files.list(d)))

    # test_watch.py: events name what changed, relative to the directory.
    handle = sandbox.files.watch_dir(d + "/subdir2")
    sandbox.commands.run(f"echo hi > {d}/subdir2/w.txt")
    time.sleep(0.5)
    print([(e.type.name, e.name) for e in handle.get_new_events()])
    handle.stop()
    try:
        handle.get_new_events()
    except SandboxException as e:
        print(type(e).__name__, e)
    try:
        sandbox.files.watch_dir(d + "/nodir")
    except NotFoundException as e:
        print(type(e).__name__)
'''


# sandbox.commands call by call, as E2B's SDK tests use it (packages/python-sdk/
# tests/sync/sandbox_sync/commands/: test_run, test_cmd_list, test_cmd_kill,
# test_send_stdin). Expected, from E2B's sources: e2b/sandbox_sync/commands/
# command.py (ProcessInfo cmd "/bin/bash", args ["-l", "-c", cmd], cwd as
# given; kill() False for an unknown pid), command_handle.py (utf-8 decoding
# with errors="replace"; wait() raises CommandExitException with the end
# event's exit_code/error: Go's ProcessState "exit status 3", -1 and "signal:
# killed" after SIGKILL; iterating yields (stdout, stderr, pty)),
# e2b/sandbox/commands/command_handle.py (CommandExitException is a
# @dataclass CommandResult: its repr, and its __str__), test_run.py
# (TimeoutException in the foreground and while iterating a handle).
COMMANDS_API = '''
import os
import time
from e2b import Sandbox, CommandExitException, CommandHandle, TimeoutException

work = os.environ["E2B_PROGRAM_DIR"]

with Sandbox.create() as sandbox:
    # test_run.py: stdout as text, special characters, broken UTF-8 replaced.
    r = sandbox.commands.run('echo "!@#$%^&*()_+"')
    print(r.exit_code, repr(r.stdout), repr(r.stderr), r.error)
    print(repr(sandbox.commands.run('printf "aa\\\\xe2"').stdout))
    # cwd, envs and user (E2B docs "Running commands": cwd=, envs=, user="root").
    print(sandbox.commands.run("pwd", cwd=work).stdout == work + "\\n")
    print(sandbox.commands.run('echo "$GREETING $NAME"', envs={"GREETING": "hi", "NAME": "e2b"}).stdout, end="")
    print(sandbox.commands.run("whoami", user="root").stdout, end="")
    # command_handle.py: a non-zero exit raises CommandExitException (a CommandResult).
    try:
        sandbox.commands.run("echo out; echo err >&2; exit 3")
    except CommandExitException as e:
        print(repr(e))
        print(str(e).splitlines())
    # test_run.py: too short a timeout raises TimeoutException, also iterating a handle.
    for background in (False, True):
        try:
            cmd = sandbox.commands.run("sleep 10", timeout=1, background=background)
            for _ in cmd:
                pass
        except TimeoutException:
            print("TimeoutException", background)

    # Background: a CommandHandle; commands.list() has its ProcessInfo (test_cmd_list.py).
    handle = sandbox.commands.run("sleep 30", background=True, cwd=work)
    print(isinstance(handle, CommandHandle), isinstance(handle.pid, int))
    info = [p for p in sandbox.commands.list() if p.pid == handle.pid][0]
    print(info.cmd, info.args, info.cwd == work)
    # test_cmd_kill.py: kill -> True, the process is gone, False for an unknown pid.
    print(sandbox.commands.kill(handle.pid))
    try:
        handle.wait()
    except CommandExitException as e:
        print(e.exit_code, e.error)
    print(handle.pid in [p.pid for p in sandbox.commands.list()], sandbox.commands.kill(999999))
    try:
        sandbox.commands.run(f"kill -0 {handle.pid}")
    except CommandExitException as e:
        print("kill -0:", e.exit_code)

    # test_send_stdin.py: stdin=True, send_stdin(pid, data), output as it comes.
    cat = sandbox.commands.run("cat", background=True, stdin=True)
    sandbox.commands.send_stdin(cat.pid, "Hello,\\nWorld!")
    for stdout, stderr, pty in cat:
        print(repr(stdout), stderr, pty)
        break
    print(cat.kill())

    # E2B docs: wait() with callbacks gets each chunk as str.
    seen = []
    h = sandbox.commands.run("echo one; sleep 0.2; echo two >&2", background=True)
    result = h.wait(on_stdout=lambda s: seen.append(("out", s)), on_stderr=lambda s: seen.append(("err", s)))
    print(seen, result)
'''


UNCHANGED = {
    "sandbox_lifecycle_and_envs": (SANDBOX_LIFECYCLE_AND_ENVS, [
        "baz", "value", "value", "bar", "changed", "value", "value", "['value\\r\\n']", "True", "2 True"]),
    "commands": (COMMANDS, [
        "[('err', 'str', 'world\\n'), ('out', 'str', 'done\\n'), ('out', 'str', 'hello\\n')]",
        "'hello\\ndone\\n' 'world\\n' 0 None",
        "CommandResult(stderr='world\\n', stdout='hello\\ndone\\n', exit_code=0, error=None)",
        "CommandExitException 2 'partial\\n' 'no such file\\n'",
        "Command exited with code 2 and error:", "no such file", "",
        "CommandHandle True", "bg: tick 1", "bg: tick 2", "bg: tick 3",
        "0 ['tick', '1', 'tick', '2', 'tick', '3']", "True", "pip ok"]),
    "files": (FILES, [
        "notes.txt FileType.FILE True", "['first line', 'second line']", "bytearray [0, 1, 2, 3, 4]",
        "notes.txt FileType.FILE True 23", "raw.bin FileType.FILE True 5", "True False",
        "['saved\\n'] None", "['day,sales', '1,3', '2,5', '3,4']", "True", "['notes.txt']"]),
    "timeouts": (TIMEOUTS, [
        "TimeoutException True",
        "Execution timed out — the 'timeout' option can be used to increase this timeout",
        "1", "command: TimeoutException"]),
    "chart_data": (CHART_DATA, [
        "Type: ChartType.BAR", "Title: Book Sales by Authors", "X Label: Authors",
        "Y Label: Number of Books Sold", "X Unit: None", "Y Unit: None", "Elements:",
        "", "  Label: Author A", "  Value: 100.0", "  Group: Books Sold",
        "", "  Label: Author B", "  Value: 200.0", "  Group: Books Sold",
        "", "  Label: Author C", "  Value: 300.0", "  Group: Books Sold",
        "", "  Label: Author D", "  Value: 400.0", "  Group: Books Sold"]),
    "files_api": (FILES_API, [
        "True False",
        "WriteInfo file1.txt ~/tree/file1.txt",
        "[('bin.dat', '~/tree/bin.dat'), ('io.txt', '~/tree/io.txt'), ('deep.txt', '~/tree/new/parents/deep.txt')] []",
        "'Hello, world!'",
        "bytearray(b'\\x00\\x01\\x02')",
        "b'from a file object'",
        "missing parents are created",
        "None [('~/tree/bin.dat', 'FILE'), ('~/tree/file1.txt', 'FILE'), ('~/tree/io.txt', 'FILE'), ('~/tree/new', 'DIR'), ('~/tree/subdir1', 'DIR'), ('~/tree/subdir2', 'DIR')]",
        "1 [('~/tree/bin.dat', 'FILE'), ('~/tree/file1.txt', 'FILE'), ('~/tree/io.txt', 'FILE'), ('~/tree/new', 'DIR'), ('~/tree/subdir1', 'DIR'), ('~/tree/subdir2', 'DIR')]",
        "2 [('~/tree/bin.dat', 'FILE'), ('~/tree/file1.txt', 'FILE'), ('~/tree/io.txt', 'FILE'), ('~/tree/new', 'DIR'), ('~/tree/new/parents', 'DIR'), ('~/tree/subdir1', 'DIR'), ('~/tree/subdir1/subdir1_1', 'DIR'), ('~/tree/subdir2', 'DIR')]",
        "file1.txt FileType.FILE ~/tree/file1.txt 13 0o644 -rw-r--r-- datetime None",
        "subdir1 FileType.DIR ~/tree/subdir1 True 0o755 drwxr-xr-x",
        "FileType.FILE ~/tree/file1.txt 0o644",
        "True True False",
        "FileNotFoundException True path '~/tree/nope.txt' does not exist",
        "FileNotFoundException True path '~/tree/nope.txt' does not exist",
        "FileNotFoundException True file not found: lstat ~/tree/nope.txt: no such file or directory",
        "FileNotFoundException True source file not found: rename ~/tree/nope.txt ~/tree/other.txt: no such file or directory",
        "InvalidArgumentException False path '~/tree' is a directory",
        "InvalidArgumentException False path is not a directory: ~/tree/file1.txt",
        "InvalidArgumentException False depth should be at least 1",
        "InvalidArgumentException False path already exists but it is not a directory: ~/tree/file1.txt",
        "FileNotFoundException",
        "io.txt ~/tree/moved/io.txt False",
        "None None False",
        "['file1.txt', 'link.txt', 'moved', 'new', 'subdir2']",
        "[('CREATE', 'w.txt'), ('WRITE', 'w.txt')]",
        "SandboxException The watcher is already stopped",
        "FileNotFoundException",
    ]),
    "commands_api": (COMMANDS_API, [
        "0 '!@#$%^&*()_+\\n' '' None",
        "'aa\ufffd'",
        "True",
        "hi e2b",
        "root",
        "CommandExitException(stderr='err\\n', stdout='out\\n', exit_code=3, error='exit status 3')",
        "['Command exited with code 3 and error:', 'err']",
        "TimeoutException False",
        "TimeoutException True",
        "True True",
        "/bin/bash ['-l', '-c', 'sleep 30'] True",
        "True",
        "-1 signal: killed",
        "False False",
        "kill -0: 1",
        "'Hello,\\nWorld!' None None",
        "True",
        "[('out', 'one\\n'), ('err', 'two\\n')] CommandResult(stderr='two\\n', stdout='one\\n', exit_code=0, error=None)",
    ]),
}


def assert_prints(agent, tmp_path, name, program):
    """An E2B program run unchanged prints what E2B's SDK and docs say:
    `program` is (source, expected lines)."""
    source, expected = program
    r = run_e2b_program(agent, tmp_path, source, f"e2b-{name}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == expected, r.stdout


@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_e2b_program_unchanged(name, agent, tmp_path):
    assert_prints(agent, tmp_path, name, UNCHANGED[name])


def test_e2b_formats_as_read_from_source(agent):
    """What programs print of E2B's SDK objects, as E2B's sources write it
    (no local reference has E2B's SDK)."""
    import datetime
    with Sandbox.connect(agent.addr) as sandbox:
        ex = sandbox.run_code("from IPython.display import display\n"
                              "display({'text/latex': r'\\text{x}'}, raw=True)\nprint('out')\n1/0")
        # code-interpreter python/e2b_code_interpreter/models.py: Result.__repr__
        # (and __str__) list formats() when there is no text; Logs.__repr__;
        # ExecutionError is a @dataclass(name, value, traceback) with the
        # generated repr; Execution.__repr__.
        assert str(ex.results[0]) == repr(ex.results[0]) == "Result(Formats: latex)"
        assert repr(ex.logs) == "Logs(stdout: ['out\\n'], stderr: [])"
        assert repr(ex.error) == ("ExecutionError(name='ZeroDivisionError', value='division by zero', "
                                  f"traceback={ex.error.traceback!r})")
        assert repr(ex) == f"Execution(Results: [Result(Formats: latex)], Logs: {ex.logs!r}, Error: {ex.error!r})"
        # models.py Execution.to_json/serialize_results: logs and error are
        # JSON text inside the JSON; every result has "text", None or not.
        data = json.loads(ex.to_json())
        assert data["results"] == [{"latex": "\\text{x}", "text": None}]
        assert json.loads(data["logs"]) == {"stdout": ["out\n"], "stderr": []}
        assert json.loads(data["error"]) == {"name": "ZeroDivisionError", "value": "division by zero",
                                             "traceback": ex.error.traceback}
        # models.py OutputMessage: @dataclass(line, timestamp, error), __str__ the line.
        msgs = []
        sandbox.run_code("print('hi')", on_stdout=msgs.append)
        assert str(msgs[0]) == "hi\n"
        assert repr(msgs[0]) == f"OutputMessage(line='hi\\n', timestamp={msgs[0].timestamp}, error=False)"
        # models.py Context: @dataclass(id, language, cwd).
        ctx = sandbox.create_code_context()
        try:
            assert repr(ctx) == f"Context(id={ctx.id!r}, language='python', cwd={ctx.cwd!r})"
        finally:
            sandbox.remove_code_context(ctx)
        # E2B python-sdk e2b/sandbox/filesystem/filesystem.py: WriteInfo(name,
        # type, path, metadata kw_only), EntryInfo adds size, mode, permissions,
        # owner, group, modified_time (aware UTC: protobuf.wkt Timestamp.to_datetime()),
        # symlink_target; FileType is a plain Enum.
        path = os.path.join(agent.workdir, "formats", "f.txt")
        info = sandbox.files.write(path, "x")
        assert repr(info) == f"WriteInfo(name='f.txt', type=<FileType.FILE: 'file'>, path={path!r}, metadata=None)"
        entry = sandbox.files.get_info(path)
        assert repr(entry).startswith(f"EntryInfo(name='f.txt', type=<FileType.FILE: 'file'>, path={path!r}, "
                                      "metadata=None, size=1, mode=")
        assert entry.modified_time.tzinfo == datetime.timezone.utc
        now = datetime.datetime.now(datetime.timezone.utc)
        assert abs((now - entry.modified_time).total_seconds()) < 60
        assert str(entry.modified_time) == entry.modified_time.isoformat(" ")
        # e2b/sandbox/commands/command_handle.py: CommandResult is a
        # @dataclass(stderr, stdout, exit_code, error); CommandExitException's
        # __str__ (both also printed by the `commands` program above).
        r = sandbox.commands.run("echo ok")
        assert repr(r) == "CommandResult(stderr='', stdout='ok\\n', exit_code=0, error=None)"

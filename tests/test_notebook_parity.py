"""Realistic notebooks (tests/notebooks/*.py, cells split at '# %%') run top
to bottom on a real ipykernel (driven as E2B's server drives it: E2B's
startup formatters, allow_stdin False) and on cellvm through the SDK, each
notebook in its own context. Every cell must agree on what a user sees:
stdout, stderr, results and display data (text, MIME types, html, markdown,
latex, json, e2b data, PNG sizes), and the error (name, value, last
traceback line, the cells and lines of its frames).

Normalised, because the two legitimately differ: execution counts (relative
to the notebook's first cell), memory addresses, the working directory, the
kernel's pid in the cells' file names, timings of %time/%timeit/%run -t
(and unittest's "Ran N tests in"), ANSI colours, Styler ids,
CRLF from !commands (a pty in ipykernel), the location of pandas' warnings
from E2B's DataFrame formatter, the source path of IPython's own
warnings ("To exit", FormatterWarning, %pylab's clobbered names, the output
cache's limit), jupyter_client's warning when it cleans
NaN out of a message, IPython's history database's complaint after a
run_cell(store_history=True).
"""

import contextlib
import glob
import os
import re

import pytest

jupyter_client = pytest.importorskip("jupyter_client")

# A comparison with a reference implementation: run by `make conformance`
# (tests/conformance/run-reference), not by `make test` (tests/run).
pytestmark = pytest.mark.reference

from cellvm import Execution, ExecutionError, Result, Sandbox  # noqa: E402
from test_e2b_compat import E2B_STARTUP, png_size  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOKS = sorted(glob.glob(os.path.join(HERE, "notebooks", "*.py")))
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def load_cells(path, fixtures_dir):
    with open(path) as f:
        text = f.read()
    text = re.sub(r"\bCSV\b", repr(os.path.join(fixtures_dir, "vendas.csv")), text)
    text = text.replace("FIXTURES", fixtures_dir)
    cells = [c.strip("\n") for c in re.split(r"^# %%\n", text, flags=re.M)]
    return [c + "\n" if "\n" in c else c for c in cells if c.strip()]


# Debian's ipykernel 6.17 cannot serialise a Period (or any non-JSON value) in
# E2B's e2b/data and fails the whole cell ("Can't clean for JSON"); cellvm
# sends such values as text, which is what this formatter does too (lists and
# dicts in cells are JSON's, and stay so). NaN and
# infinities become 'nan'/'inf'/'-inf' as jupyter_client's packer makes them
# (here before the packer, which would also warn on the cell's stderr).
E2B_DATA_FALLBACK = r'''
def _e2b_data_text_fallback(self):
    out = _dataframe_repr_e2b_data_(self)
    def clean(v):
        if isinstance(v, float) and (v != v or v in (float('inf'), float('-inf'))):
            return repr(v)
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        return v if v is None or isinstance(v, (str, int, float, bool)) else str(v)
    return {str(key): [clean(v) for v in value] for key, value in out.items()}
_ip.display_formatter.formatters["e2b/data"].type_printers[_pd.DataFrame] = _e2b_data_text_fallback
'''


class IpykernelRunner:
    """run_code over a real ipykernel, converting messages as E2B's server does."""

    def __init__(self, client):
        self.client = client

    def run_code(self, code):
        ex = Execution()

        def hook(msg):
            kind, c = msg["msg_type"], msg["content"]
            if kind == "execute_input":
                ex.execution_count = c["execution_count"]
            elif kind == "stream":
                (ex.logs.stderr if c["name"] == "stderr" else ex.logs.stdout).append(c["text"])
            elif kind in ("display_data", "execute_result"):
                ex.results.append(Result.from_bundle(dict(c["data"]),
                                                     is_main_result=kind == "execute_result"))
            elif kind == "error" and ex.error is None:
                # An error's _render_traceback_ may give None: ipykernel sends
                # it, E2B's server fails on it (docs/NOTEBOOK.md); cellvm sends
                # no traceback, as this does.
                tb = c["traceback"] or []
                ex.error = ExecutionError(c["ename"], c["evalue"], "".join(tb), traceback_lines=tb)

        reply = self.client.execute_interactive(code, output_hook=hook, timeout=60,
                                                stop_on_error=False, allow_stdin=False)
        # E2B's server also takes the error from execute_reply (a UsageError
        # has no error message, only a line on stderr).
        c = reply["content"]
        if ex.error is None and c["status"] == "error":
            ex.error = ExecutionError(c["ename"], c["evalue"], "".join(c["traceback"]),
                                      traceback_lines=c["traceback"])
        return ex


@contextlib.contextmanager
def new_ipykernel(cwd):
    """A new ipykernel in `cwd`, with E2B's startup as its server runs it: a
    notebook gets a kernel of its own, as it gets a new cellvm context (what
    one leaves in a kernel, such as an extension, an alias or pyplot's state,
    changed another's output)."""
    from jupyter_client.manager import start_new_kernel

    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
    # Under pytest ipykernel leaves fds 1/2 alone (no capture of what
    # os.system or a subprocess writes there); a kernel in production does.
    env.pop("PYTEST_CURRENT_TEST", None)
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=cwd)
    try:
        kc.execute_interactive(E2B_STARTUP + E2B_DATA_FALLBACK, silent=True, timeout=60)
        yield IpykernelRunner(kc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@pytest.fixture
def ipykernel(tmp_path):
    with new_ipykernel(str(tmp_path)) as runner:
        yield runner, str(tmp_path)


TIMING = [
    (re.compile(r"CPU times: .*"), "CPU times: <t>"),
    (re.compile(r"Wall time: .*"), "Wall time: <t>"),
    (re.compile(r".* per loop \(mean ± std\. dev\. of (\d+) runs?, ([\d,]+) loops? each\)"),
     r"<t> per loop (\1 runs, \2 loops)"),
    # IPython's timeit warns when the slowest run took over 4 times the
    # fastest: a matter of this machine's load, on either side.
    (re.compile(r"^The slowest run took [\d.]+ times longer than the fastest\. "
                r"This could mean that an intermediate result is being cached\.\n", re.M), ""),
    # %run -t's CPU times (getrusage).
    (re.compile(r"^  (User|System) +: .*$", re.M), r"  \1 : <t>"),
    # unittest's summary line (unittest.main in a cell).
    (re.compile(r"^Ran (\d+ tests?) in \d+\.\d+s$", re.M), r"Ran \1 in <t>"),
    # ipykernel's connection file (sys.argv): a new one for each kernel, a
    # temporary file where jupyter_client starts the kernel itself.
    (re.compile(r"(?:/[\w.-]+)+/(?:kernel-[0-9a-f-]{36}|tmp\w{8})\.json"), "<connection file>"),
    # IPython's select_figure_formats lists a set: its order varies by process.
    (re.compile(r"supported formats are: (?:'\w+',)*'\w+' not"), "supported formats are: <set> not"),
]


def normalise(text, cwd):
    if not text:
        return text
    text = ANSI.sub("", text)
    # ipykernel runs !commands in a pty (CRLF line ends); cellvm in pipes.
    text = text.replace("\r\n", "\n")
    text = text.replace(cwd, "<cwd>")
    # A cell's file is named after its source's hash, in a directory named
    # after the kernel's pid: only the pid differs.
    text = re.sub(r"/tmp/ipykernel_\d+/", "/tmp/ipykernel_<pid>/", text)
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x<addr>", text)
    text = re.sub(r"T_[0-9a-f]{5}", "T_<id>", text)
    # %edit's temporary folder and file, each named by tempfile at random.
    text = re.sub(r"/ipython_edit_\w{8}", "/ipython_edit_<id>", text)
    # jupyter_client's packer warns, from its own source file, when it had to
    # clean NaN or infinities out of a message; cellvm cleans them as it does
    # but does not copy the warning (docs/SDK.md).
    text = re.sub(r"\S*/jupyter_client/session\.py:\d+: UserWarning: Message serialization failed with:\n"
                  r".*?\n  content = self\.pack\(content\)\n", "", text, flags=re.S)
    # IPython warns with warnings.warn from its own source file.
    text = re.sub(r"\S*/IPython/core/interactiveshell\.py:\d+: (UserWarning: To exit.*\n)  warn\(.*\)\n",
                  r"\1", text)
    text = re.sub(r"\S*/IPython/core/formatters\.py:\d+: (FormatterWarning: .*\n)  warnings\.warn\(\n",
                  r"\1", text)
    text = re.sub(r"\S*/IPython/core/magics/pylab\.py:\d+: (UserWarning: pylab import has clobbered .*\n.*\n)"
                  r"  warn\(.*\n", r"\1", text)
    text = re.sub(r"\S*/IPython/core/displayhook\.py:\d+: (UserWarning: Output cache limit .*\n.*\n)"
                  r"  warn\(.*\n", r"\1", text)
    # pandas warns from the frame that called it: for a DataFrame's e2b/data,
    # E2B's startup formatter (a file of E2B's template; here a cell of the
    # reference and cellvm's kernel/e2b_data.py), each with its own line.
    text = re.sub(r"(?m)^.+?:\d+: (\w+Warning: .*\n)  .*\bto_dict\(orient=\"list\"\).*\n", r"\1", text)
    # tqdm.auto's warning where ipywidgets is missing, at its first import in
    # an ipykernel: the executor does not import IPython before a cell does,
    # so tqdm picks its text bars without it (docs/NOTEBOOK.md, "Known
    # differences").
    text = re.sub(r"\S*/tqdm/auto\.py:\d+: TqdmWarning: IProgress not found\..*\n"
                  r"  from \.autonotebook import .*\n", "", text)
    # IPython's history database complains when a run_cell(store_history=True)
    # took the running count; cellvm has no database (docs/NOTEBOOK.md).
    text = re.sub(r"(?m)^ERROR! Session/line number was not unique in database\. "
                  r"History logging moved to new session \d+\n", "", text)
    for rx, sub in TIMING:
        text = rx.sub(sub, text)
    return text


FRAME_HEADER = re.compile(r"Cell In ?\[(\d+)\]")


def traceback_frames(tb, first):
    """(cell relative to the notebook's first, line) of each frame in a cell.
    IPython 8.5 writes "Cell In [3], line 2"; cellvm, as the IPython >= 8.10
    of E2B's template, "Cell In[3], line 2"."""
    frames = []
    heads = list(FRAME_HEADER.finditer(tb))
    for i, m in enumerate(heads):
        block = tb[m.start():heads[i + 1].start() if i + 1 < len(heads) else len(tb)]
        arrow = re.search(r"^-*> ?(\d+)", block, re.M)
        line = re.search(r"line:? (\d+)", block)
        frames.append((int(m.group(1)) - first,
                       int(arrow.group(1)) if arrow else int(line.group(1)) if line else None))
    return frames


def view(ex, first, cwd):
    err = None
    if ex.error is not None:
        tb = normalise(ex.error.traceback, cwd)
        lines = [ln for ln in tb.splitlines() if ln.strip()]
        frames = traceback_frames(tb, first)
        err = (ex.error.name, normalise(ex.error.value, cwd), lines[-1] if lines else "", frames)
    n = lambda s: normalise(s, cwd)  # noqa: E731
    return {
        "count": None if ex.execution_count is None else ex.execution_count - first,
        "stdout": n("".join(ex.logs.stdout)),
        "stderr": n("".join(ex.logs.stderr)),
        "results": [{
            "main": r.is_main_result,
            # e2b/chart is E2B's addition, absent from the reference kernel
            # (no extractor there); test_charts.py checks it.
            "formats": sorted(f for f in r.formats() if f != "chart"),
            "text": n(r.text),
            "html": n(r.html),
            "markdown": r.markdown,
            "latex": r.latex,
            "json": r.json,
            "data": r.data,
            "png": png_size(r.png) if r.png else None,
        } for r in ex.results],
        "error": err,
    }


def run_notebook(runner, cells, cwd, tracebacks=False):
    execs = [runner.run_code(c) for c in cells]
    first = next((e.execution_count for e in execs if e.execution_count is not None), 0)
    views = [view(e, first, cwd) for e in execs]
    if tracebacks:
        for v, e in zip(views, execs):
            v["traceback"] = whole_traceback(e, first)
    return views


ADDRESS = re.compile(r"0x[0-9a-f]+")


def whole_traceback(e, first):
    """An error's whole traceback as a user reads it: every frame and source
    line; IPython 8.5's "Cell In [3]" written as cellvm's, cells relative to
    the notebook's first, no addresses nor kernel pids."""
    if e.error is None:
        return None
    tb = FRAME_HEADER.sub(lambda m: f"Cell In[{int(m.group(1)) - first}]", ANSI.sub("", e.error.traceback))
    tb = re.sub(r"/tmp/ipykernel_\d+/", "/tmp/ipykernel_<pid>/", tb)  # a cell's file shown by name
    return ADDRESS.sub("0x<addr>", tb)


def brief(got, want):
    """The two values around their first difference."""
    g, w = repr(got), repr(want)
    i = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
    start = max(i - 150, 0)
    return f"    cellvm:    {g[start:i + 250]}\n    ipykernel: {w[start:i + 250]}"


class ContextRunner:
    def __init__(self, sbx, ctx):
        self.sbx, self.ctx = sbx, ctx

    def run_code(self, code):
        return self.sbx.run_code(code, context=self.ctx, timeout=60)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p)[:-3] for p in NOTEBOOKS])
def test_notebook_same_as_ipykernel(path, agent, tmp_path, fixtures_dir):
    compare_with_ipykernel(path, agent, tmp_path, fixtures_dir)


def test_ipython_api_without_preloads(fresh_agent, tmp_path, fixtures_dir):
    """The IPython API notebook where nothing is preloaded: IPython is then
    imported before pyplot, whose import registers its post_execute callback
    with the shell (with the preloads pyplot comes first)."""
    compare_with_ipykernel(os.path.join(HERE, "notebooks", "25_ipython_api.py"),
                           fresh_agent, tmp_path, fixtures_dir)


def compare_with_ipykernel(path, agent, tmp_path, fixtures_dir):
    """The notebook at `path` on a new ipykernel and in a new cellvm context,
    each in a new directory of its own (what a notebook writes there is its
    own)."""
    cells = load_cells(path, fixtures_dir)
    name = os.path.basename(path)[:-3]

    def reference(attempt=0):
        kcwd = str(tmp_path / f"ipykernel-{attempt}")
        os.mkdir(kcwd)
        with new_ipykernel(kcwd) as runner:
            return run_notebook(runner, cells, kcwd)

    expected = reference()
    cwd = os.path.join(agent.workdir, f"notebook-{name}")
    os.mkdir(cwd)
    agent.give_to_sandbox_user(cwd)
    with Sandbox.connect(agent.addr) as sbx:
        ctx = sbx.create_code_context(cwd=cwd)
        try:
            got = run_notebook(ContextRunner(sbx, ctx), cells, cwd)
        finally:
            sbx.remove_code_context(ctx)
    # The reference must have produced something, or equality proves nothing.
    assert any(e["stdout"] or e["results"] or e["error"] for e in expected)
    diffs = differences(cells, got, expected)
    if diffs:
        # ipykernel's `!cmd` (IPython's pexpect reader) can lose a fast child's
        # output on a loaded machine: a second run of the reference decides.
        diffs = differences(cells, got, reference(1))
    assert not diffs, f"{len(diffs)} of {len(cells)} cells differ\n" + "\n".join(diffs)


def differences(cells, got, expected):
    diffs = []
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            keys = [k for k in e if g.get(k) != e[k]]
            diffs.append(f"--- cell {i}:\n{cells[i]}\n" + "\n".join(
                f"  {k}:\n{brief(g.get(k), e[k])}" for k in keys))
    return diffs


# The guest image may have no IPython: the kernel's own display(), formatters
# and input() must then give what ipykernel gives. The cellvm context hides
# IPython (sys.modules['IPython'] = None) before these cells run.
WITHOUT_IPYTHON = [
    "class Card:\n    def _repr_html_(self):\n        return '<div>card</div>'\n"
    "    def _repr_markdown_(self):\n        return '*card*'\n    def __repr__(self):\n"
    "        return 'Card()'\ndisplay(Card())\nCard()\n",
    "class Formula:\n    def _repr_latex_(self):\n        return r'$x^2$'\n"
    "    def _repr_json_(self):\n        return {'x': 2}\nFormula()\n",
    "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\ndisplay(df)\ndf.describe()\n",
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 3))\nax.plot([1, 3, 2])\n"
    "display(fig)\nplt.show()\n",
    "display(1, 'two', [3], {'four': 4}, None)\n",
    "input('name? ')\n",
    "import getpass\ngetpass.getpass()\n",
    "len?\n",
    "%time 1 + 1\n",
    "from IPython.display import HTML\n",
]


def test_without_ipython_same_as_ipykernel(agent, ipykernel):
    runner, kcwd = ipykernel
    expected = run_notebook(runner, WITHOUT_IPYTHON, kcwd)
    with Sandbox.connect(agent.addr) as sbx:
        ctx = sbx.create_code_context()
        try:
            hide = sbx.run_code("import sys\nsys.modules['IPython'] = None\nimport os\nos.getcwd()",
                                context=ctx)
            got = run_notebook(ContextRunner(sbx, ctx), WITHOUT_IPYTHON, hide.text)
        finally:
            sbx.remove_code_context(ctx)
    # The last cell shows that IPython really was out of reach on cellvm's side.
    assert got[-1]["error"][0] == "ModuleNotFoundError" and expected[-1]["error"] is None
    for i, (g, e) in enumerate(zip(got[:-1], expected[:-1])):
        assert g == e, f"cell {i}:\n{WITHOUT_IPYTHON[i]}\n" + "\n".join(
            f"  {k}:\n{brief(g.get(k), e[k])}" for k in e if g.get(k) != e[k])


# What only a kernel that has run nothing shows (the notebooks share one):
# pyplot turns interactive when the inline backend is first loaded, at the
# first figure, and so undoes a plt.ioff() made before it.
# A figure that fails to draw fails first in that draw, before the backend's
# flush, until a plt.ioff() puts the draw after it.
FRESH_KERNEL = [
    "import matplotlib\nmatplotlib.is_interactive()\n",
    "import matplotlib.pyplot as plt\nplt.ioff()\nplt.isinteractive()\n",
    "plt.plot([1, 2])\nplt.isinteractive()\n",
    "plt.title(r'$\\frac{1}$')\n",
    "plt.ioff()\nplt.plot([2, 1])\nprint(len(plt.get_fignums()))\n",
    "plt.ion()\nplt.figure()\nplt.title(r'$\\frac{1}$')\n",
    # %lsmagic lists what a kernel has: here ipykernel's own magics and aliases,
    # then what a notebook added or removed.
    "%lsmagic\n",
    "from IPython.core.magic import register_line_magic\n@register_line_magic\ndef shout(line):\n"
    "    return line.upper()\n%unalias lx\n%alias_magic fresh_w who\n%automagic off\n"
    "lm = %lsmagic\nprint(lm)\nlm._repr_json_()['line']['shout'], 'lx' in lm._repr_json_()['line']\n",
    "%automagic on\n%load_ext autoreload\n%lsmagic\n",
]


def same_as_a_fresh_ipykernel(agent, cells, tracebacks=False):
    """`cells` on a new ipykernel and in a new cellvm context, compared cell
    by cell (errors' whole tracebacks too if `tracebacks`); ipykernel's views."""
    import shutil
    import tempfile

    cwd = tempfile.mkdtemp(prefix="fresh-ipykernel-")  # what the cells write stays out of the tree
    try:
        with new_ipykernel(cwd) as runner:
            expected = run_notebook(runner, cells, "\0", tracebacks)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    with Sandbox.connect(agent.addr) as sbx:
        ctx = sbx.create_code_context()
        try:
            got = run_notebook(ContextRunner(sbx, ctx), cells, "\0", tracebacks)
        finally:
            sbx.remove_code_context(ctx)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"cell {i}:\n{cells[i]}\n" + "\n".join(
            f"  {k}:\n{brief(g.get(k), e[k])}" for k in e if g.get(k) != e[k])
    return expected


def test_fresh_kernel_same_as_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_KERNEL)
    # The backend is loaded in the first cell with a figure, not before.
    assert expected[1]["results"][0]["text"] == "False"
    assert [r["formats"] for r in expected[2]["results"]] == [["text"], ["png", "text"]]
    assert expected[3]["stdout"].startswith("Error in callback") and not expected[5]["stdout"]


# The inline backend takes the shell's config when it is made, at the first
# figure: a format a notebook set there before (Kaggle's learntools does)
# applies; one set after the first figure does not.
FRESH_CONFIG = [
    "import matplotlib.pyplot as plt\nget_ipython().config.InlineBackend.figure_format = 'retina'\n"
    "plt.plot([1, 2]);\n",
    "get_ipython().config.InlineBackend.figure_format = 'png'\nplt.plot([1, 2]);\n",
]


# What a figure's draw warns (a glyph missing from the font: emoji in titles,
# as agents write them) reads as in ipykernel: pyplot's post_execute draw of
# stale figures (from IPython's events.trigger), then IPython's print_figure;
# figure.autolayout lays the figure out in that draw. On a fresh kernel: a
# notebook's plt.ioff() ends that draw for good.
FRESH_DRAW = [
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title('🚀 again')\n",
    "fig, ax = plt.subplots()\nax.bar(['a', 'b'], [1, 2])\nax.set_title('📊 Sales')\nplt.tight_layout()\nplt.show()\n",
    "fig, ax = plt.subplots()\nax.set_title('📈 Trend')\nplt.show()\n",
    "fig, ax = plt.subplots()\nax.plot([1, 2])\nax.set_title('🔥 hot')\nfig\n",
    "fig, ax = plt.subplots()\nax.set_title('💡 idea')\nimport io\nplt.savefig(io.BytesIO(), format='png')\nplt.close()\n",
    "import numpy as np\nplt.rcParams['figure.autolayout'] = True\nplt.rcParams['font.size'] = 16\nplt.figure(figsize=(4, 3)); plt.plot(np.linspace(-1, 1, 20) ** 3); plt.xlabel('time [days]');\n",
    "plt.rcdefaults()\nfig, ax = plt.subplots()\nax.plot([1, 2, 3], [1, np.nan, 3]); ax.text(np.nan, 1, 'nan label')\n",
    "import matplotlib.dates as mdates, pandas as pd\nfig, ax = plt.subplots()\nax.plot(pd.date_range('2000-01-01', periods=3, freq='D'), [1, 2, 3])\nax.xaxis.set_major_locator(mdates.DayLocator(interval=1))\n",
    # A font the image lacks (agents set SimHei for CJK titles): findfont
    # warns as often as in ipykernel, whose PNG is printed by the canvas that
    # drew the figure (the text sizes it measured are reused).
    "plt.rcParams['font.family'] = 'NoSuchFont'\n",
    "fig, ax = plt.subplots(figsize=(2, 2))\nax.plot([1, 2])\n",
    "fig, ax = plt.subplots(figsize=(2, 2))\nax.plot([1, 2])\nax.set_title('x')\nplt.show()\n",
    "fig, ax = plt.subplots(figsize=(2, 2))\nax.plot([1, 2])\nfig\n",
    "type(fig.canvas), fig.canvas.get_supported_filetypes() == fig.canvas.__class__.__mro__[1].get_supported_filetypes()\n",
    'plt.rcdefaults()\n',
]


def test_figure_draws_warn_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_DRAW)
    assert "events.py:89: UserWarning: Glyph 128640" in expected[0]["stderr"], expected[0]
    assert "pylabtools.py:151: UserWarning: Glyph 128202" in expected[1]["stderr"], expected[1]
    assert expected[9]["stderr"].count("findfont: Font family 'NoSuchFont' not found.") > 10, expected[9]


# A failing repr, _repr_*_ method, formatter or figure draw: the error's whole
# traceback reads as in ipykernel (E2B keeps a cell's first error): IPython's
# formatter, pretty-printer and print_figure frames above the user's, and an
# unshown figure's failed draw from pyplot's post_execute callback.
FRESH_FORMAT_ERRORS = [
    "class R:\n    def __repr__(self):\n        return 1 / 0\nR()\n",
    "class P:\n    def _repr_pretty_(self, p, cycle):\n        raise RuntimeError('pretty')\nP()\n",
    "class H:\n    def _repr_html_(self):\n        return {}['html']\nH()\n",
    "class M:\n    def _repr_mimebundle_(self, include=None, exclude=None):\n        raise KeyError('mb')\nM()\n",
    "class D:\n    def _ipython_display_(self):\n        raise OSError('display')\nD()\n",
    "class B:\n    pass\ndef bad(o):\n    raise ValueError('printer')\n"
    "get_ipython().display_formatter.formatters['text/html'].for_type(B, bad)\nB()\n",
    "10 ** 5000\n",
    "[1, R()]\n",
    "{'k': R()}\n",
    "import pandas as pd\npd.DataFrame({'a': [R()]})\n",
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title(r'$\\bad{x}$')\n",
    "fig, ax = plt.subplots()\nax.plot([1, 2])\nax.set_xlabel(r'$\\frac{1}$')\nplt.show()\n",
    "plt.plot([1, 2])\nplt.title(r'$\\bad$')\nplt.savefig('/dev/null', format='png')\n",
    "print('next')\n",
    # Containers whose own methods fail where IPython's printers call them.
    "class L(list):\n    def __len__(self):\n        raise ValueError('no len')\nL([1, 2])\n",
    "class S(set):\n    def __len__(self):\n        raise ValueError('no len')\nS({1})\n",
    "class K(dict):\n    def keys(self):\n        raise KeyError('no keys')\nK(a=1)\n",
    # Items of what IPython prints through a CallExpression: its printer's
    # frame and CallExpression's (deque's by name at its first use, then by
    # class).
    "import collections, re, types\ncollections.deque([R()])\n",
    "collections.deque([R()], maxlen=3)\n",
    "collections.defaultdict(int, {1: R()})\n",
    "collections.OrderedDict(a=R())\n",
    "collections.Counter({R(): 1})\n",
    "collections.UserList([R()])\n",
    "types.SimpleNamespace(a=R())\n",
    "ValueError(R())\n",
    "class Sup:\n    __repr__ = R.__repr__\n    def sup(self):\n        return super()\nSup().sup()\n",
    "d = collections.deque([1]); d.append(d); d, re.compile('a+', re.I)\n",
]


def test_formatting_errors_read_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_FORMAT_ERRORS, tracebacks=True)
    assert all(e["traceback"] for i, e in enumerate(expected) if i not in (13, 26)), expected
    assert "formatters.py:707, in PlainTextFormatter.__call__" in expected[0]["traceback"]
    assert "pretty.py:640, in _seq_pprinter_factory.<locals>.inner" in expected[7]["traceback"]
    assert "pyplot.py:119, in _draw_all_if_interactive()" in expected[10]["traceback"]
    assert "pylabtools.py:151, in print_figure(" in expected[11]["traceback"]
    # The cell's own error comes first, then the draw's (after the cell).
    assert "----> 3 plt.savefig(" in expected[12]["traceback"] and expected[12]["stdout"].startswith("Error in callback")
    assert "pretty.py:641, in _seq_pprinter_factory.<locals>.inner" in expected[14]["traceback"]
    assert "pretty.py:655, in _set_pprinter_factory.<locals>.inner" in expected[15]["traceback"]
    assert "pretty.py:685, in _dict_pprinter_factory.<locals>.inner" in expected[16]["traceback"]
    assert "pretty.py:914, in _deque_pprint" in expected[17]["traceback"]
    assert "pretty.py:564, in CallExpression._repr_pretty_" in expected[17]["traceback"]
    assert "pretty.py:398, in RepresentationPrinter.pretty" in expected[17]["traceback"]
    assert "pretty.py:398, in RepresentationPrinter.pretty" not in expected[18]["traceback"]
    assert "pretty.py:569, in CallExpression._repr_pretty_" in expected[23]["traceback"]
    assert "pretty.py:707, in _super_pprint" in expected[25]["traceback"]
    assert expected[26]["results"][0]["text"] == "(deque([1, deque(...)]), re.compile(r'a+', re.IGNORECASE|re.UNICODE))"


# %config as IPython's: before the first figure InlineBackend is no
# configurable yet, so the shell's config keeps its values unchecked and the
# backend checks them when made (a refused one fails that figure's cell);
# after, a refused value is logged (ERROR:root:...) and the cell goes on.
FRESH_CONFIG_MAGIC = [
    "%config InlineBackend.figure_format = 'bad'\n",
    'print("after")\n',
    '%config InlineBackend.nosuch = 1\n',
    "%config InlineBackend.figure_format = 'svg'\n",
    'import matplotlib.pyplot as plt\nplt.plot([1])\n',
    "%config InlineBackend.figure_format = 'png'\n",
    "%config ZMQInteractiveShell.ast_node_interactivity = 'bad'\n",
    '%config IPCompleter.greedy = True\n',
    '%config Nope.x = 1\n',
    "%config InlineBackend.figure_format = 'jpeg'\n",
    '%config InlineBackend.figure_format\n',
    '%config InlineBackend.close_figures = 2\n',
    '%config InlineBackend.close_figures = 0\n',
    '%config InlineBackend.close_figures\n',
    "%config InlineBackend.figure_formats = 'svg'\n",
    '%config InlineBackend.figure_formats\n',
    '%config InlineBackend.rc = [1]\n',
    '%config InlineBackend.print_figure_kwargs = 3\n',
    '%config LoggingMagics.quiet = 3\n',
    'import logging\nlogging.warning("after config")\n',
    "%config InlineBackend.close_figures = True\n%config InlineBackend.figure_formats = set(['png'])\n"
    "plt.plot([2]);\n",
    # set_matplotlib_formats changes the formatters, not the trait: setting
    # the trait to what it still holds changes nothing.
    "from IPython.display import set_matplotlib_formats\nset_matplotlib_formats('svg')\n",
    '%config InlineBackend.figure_formats\n',
    "%config InlineBackend.figure_formats = set(['png'])\nplt.plot([3]);\n",
    "%config InlineBackend.figure_formats = ['png', 'svg']\n%config InlineBackend.figure_formats = set(['png'])\n"
    "plt.plot([4]);\n",
]
# InlineBackend.rc is loaded into rcParams when the backend is made and at
# each %matplotlib inline; an unknown figure format leaves figures no image.
FRESH_INLINE_RC = [
    "%config InlineBackend.rc = {'figure.dpi': 30}\n",
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.rcParams['figure.dpi']\n",
    "plt.plot([1, 2])\n",
    "plt.rcParams['figure.dpi'] = 80\n%matplotlib inline\nplt.rcParams['figure.dpi']\n",
    "%config InlineBackend.figure_formats = ['bmp']\n",
    "plt.plot([1, 2])\n",
]
# Cells as E2B programs send them, without a trailing newline: a cell
# magic's body still ends with one (IPython's transform_cell adds it);
# argparse in a cell sees ipykernel's own arguments (-f <connection file>).
FRESH_NO_TRAILING_NEWLINE = [
    "%%html\n<b>hi</b>",
    "%%markdown\n# Title",
    "%%latex\n$x^2$",
    "%%javascript\nconsole.log(1)",
    "%%writefile w9.txt\nline one",
    "open('w9.txt').read()",
    "%%bash\necho hi",
    "%%capture cap\nprint('x')",
    "cap.stdout",
    "%%timeit -n1 -r1\npass",
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--input', default='data.csv')\n"
    "args = p.parse_args()\nargs.input",
    "p.parse_known_args()[0].input, len(p.parse_known_args()[1])",
    "import sys\nsys.argv[0].endswith('ipykernel_launcher.py'), sys.argv[1:2], len(sys.argv)",
]
# A value refused before the first figure fails that figure's cell.
FRESH_CONFIG_REFUSED = [
    "%config InlineBackend.close_figures = 'x'\n",
    "import matplotlib.pyplot as plt\nplt.plot([1])\n",
]


def test_cells_without_a_trailing_newline_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_NO_TRAILING_NEWLINE)
    assert expected[0]["results"][0]["html"] == "<b>hi</b>\n", expected[0]
    assert expected[5]["results"][0]["text"] == r"line one\n", expected[5]  # E2B strips a str's quotes
    assert expected[10]["error"][0] == "SystemExit", expected[10]


def test_config_magic_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_CONFIG_MAGIC)
    assert expected[0]["error"] is None and [r["formats"] for r in expected[4]["results"]] == [
        ["text"], ["svg", "text"]], expected[4]
    assert expected[6]["stderr"].startswith("ERROR:root:The 'ast_node_interactivity' trait"), expected[6]
    assert expected[11]["stderr"].startswith("ERROR:root:The 'close_figures' trait"), expected[11]
    assert [r["formats"] for r in expected[23]["results"]] == [["svg", "text"]], expected[23]
    assert [r["formats"] for r in expected[24]["results"]] == [["png", "text"]], expected[24]
    expected = same_as_a_fresh_ipykernel(agent, FRESH_CONFIG_REFUSED)
    assert expected[1]["error"][0] == "TraitError", expected[1]
    expected = same_as_a_fresh_ipykernel(agent, FRESH_INLINE_RC)
    assert expected[1]["results"][0]["text"] == "30.0" and expected[3]["results"][0]["text"] == "30.0"
    assert [r["formats"] for r in expected[5]["results"]] == [["text"], ["text"]], expected[5]


def test_shell_config_reaches_the_inline_backend_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_CONFIG)
    assert [r["png"] for r in expected[0]["results"]] == [(1095, 826)], expected[0]
    assert expected[1]["results"][0]["png"] == (1095, 826), expected[1]


def test_exit_same_as_ipykernel(agent):
    """exit() ends the cell quietly in ipykernel (which then stops the kernel:
    a private one here). cellvm shows the same and keeps the context."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        runner = IpykernelRunner(kc)
        expected = [view(runner.run_code(c), 0, "") for c in ("print('before')", "exit()")]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    with Sandbox.connect(agent.addr) as sbx:
        ctx = sbx.create_code_context()
        try:
            runner = ContextRunner(sbx, ctx)
            got = [view(runner.run_code(c), 0, "") for c in ("print('before')", "exit()")]
            for g, e in zip(got, expected):
                g["count"] = e["count"] = None
            assert got == expected
            for bare in ("quit", "exit"):
                ex = runner.run_code(bare)
                assert (ex.error, ex.results, ex.logs.stdout, ex.logs.stderr) == (None, [], [], [])
            assert runner.run_code("1 + 1").text == "2"
        finally:
            sbx.remove_code_context(ctx)


# sys.exit()'s "To exit" warning is IPython's warnings.warn: once until the
# filters change, and an ignore filter silences it (projects set one).
FRESH_SYS_EXIT = [
    "import sys\nsys.exit(1)\n",
    "sys.exit(2)\n",
    "import warnings\nwarnings.simplefilter('always')\nsys.exit(3)\n",
    "sys.exit(4)\n",
    "warnings.filterwarnings('ignore', message=\"To exit: use 'exit', 'quit', or Ctrl-D.\")\nsys.exit(5)\n",
]


def test_sys_exit_warns_as_ipython(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_SYS_EXIT)
    warned = ["To exit: use" in e["stderr"] for e in expected]
    assert warned == [True, False, True, True, False], expected


# A magic's error shows IPython's frames (run_line_magic / run_cell_magic, the
# magic's own), as ipykernel's traceback does; a function's %time and %timeit
# see its variables (IPython's needs_local_scope).
FRESH_MAGIC_ERRORS = [
    "%%bash\necho out; exit 3\n",
    "%%script sh\nexit 4\n",
    "%%script\necho no program\n",
    "%timeit 1/0\n",
    "%timeit -n1 -r1 1/0\n",
    "%%timeit -n1 -r1 x = 0\ny = 1\nz = y / x\n",
    "%%writefile /nonexistent/x.py\nx\n",
    "def f():\n    z = 3\n    %timeit -q -n1 -r1 z\n    %time w = z + 1\n    %time z * 2\n    return w\nf()\n",
    "z\n",
    "%load_ext version_information\n",
    "%reload_ext watermark_nosuch\n",
    "%load_ext json\n",
    "%run nosuch.py\n",
    "%run\n",
]


def test_magic_errors_read_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_MAGIC_ERRORS, tracebacks=True)
    assert "script.py:305, in ScriptMagics.shebang" in expected[0]["traceback"], expected[0]
    assert "script.py:239, in ScriptMagics.shebang" in expected[2]["traceback"], expected[2]
    assert "<magic-timeit>:2, in inner" in expected[5]["traceback"], expected[5]
    assert expected[7]["error"][0] == "NameError" and expected[8]["results"][0]["text"] == "3", expected[7:]


# Errors raised inside IPython's own helpers: find_user_code (%load),
# traitlets' setter and the formatter's observer (%precision, chained from
# the check's error), find_gui_and_backend (%matplotlib, %pylab), and
# compile.ast_parse (%time, %timeit); a SyntaxError raised while a cell runs
# lists IPython's run_code frame first (SyntaxTB).
FRESH_LOOKUP_ERRORS = [
    "%load\n",  # no target: the inputs before its line, none in a first cell
    "%load nosuch.py\n",
    "%load no_such_name\n",
    "%precision %q\n",
    "%precision abc\n",
    "%precision -3\n",
    "%precision 3\n",
    "1.23456789\n",
    "%matplotlib nosuch\n",
    "%pylab Inline\n",
    'eval("1 +")\n',
    'import asyncio\nx = await asyncio.sleep(0, result=eval("1 +"))\n',
    "%timeit x = (\n",
    "%time x = (\n",
    "%%timeit x = (\npass\n",
    "%%time\n!echo hi\nx = 5\nx\n",
    "%time await asyncio.sleep(0)\n",
    "%%time\nx = 1\nawait asyncio.sleep(0)\n",
    "%timeit await asyncio.sleep(0)\n",
]


def test_helper_errors_read_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_LOOKUP_ERRORS, tracebacks=True)
    assert "ValueError: '' was not found in history" in expected[0]["traceback"], expected[0]
    assert "interactiveshell.py:3702, in InteractiveShell.find_user_code" in expected[1]["traceback"], expected[1]
    assert "traitlets.py:1431, in HasTraits._notify_observers" in expected[3]["traceback"], expected[3]
    assert expected[7]["results"][0]["text"] == "1.235", expected[7]
    assert "pylabtools.py:321, in find_gui_and_backend" in expected[8]["traceback"], expected[8]
    assert "interactiveshell.py:3376 in run_code" in expected[11]["traceback"], expected[11]
    assert "execution.py:1107 in timeit" in expected[14]["traceback"], expected[14]
    assert "codeop.py:118 in __call__" in expected[16]["traceback"], expected[16]
    assert "execution.py:1118 in timeit" in expected[18]["traceback"], expected[18]


# How a cell runs, as seen from inside it: a warning pointing above the cell
# names IPython's run_code (exec, or await for a cell with a top-level await);
# a top-level await's error starts at the cell; numpy's warning filters (its
# RankWarning 'always') hold; source lines keep trailing spaces; MPLBACKEND is
# the inline backend's for processes a cell starts; %run of a notebook or .ipy
# runs its cells as cells (without the shell's futures: frames show the file).
FRESH_CELL_RUNNING = [
    "import warnings\nwarnings.warn('x', UserWarning, stacklevel=2)\n",
    "import asyncio\nawait asyncio.sleep(0, result=warnings.warn('y', UserWarning, stacklevel=2))\n",
    "import numpy as np\nnp.polyfit(np.arange(5.), np.arange(5.)**2, 9)\n",
    "np.polyfit(np.arange(5.), np.arange(5.)**2, 9)\n",
    "async def w():\n    raise KeyError('k')\nawait w()\n",
    "await asyncio.wait_for(asyncio.sleep(1), 0.01)\n",
    "x = 1   \nif x == 1:    \n    1 / 0\n",
    "import traceback\ntraceback.print_stack(limit=1)\n",
    "import os\nos.environ['MPLBACKEND']\n",
    "import json\n"
    "cell = lambda src: {'cell_type': 'code', 'metadata': {}, 'execution_count': None, 'outputs': [], 'source': src}\n"
    "nb = {'nbformat': 4, 'nbformat_minor': 5, 'metadata': {}, 'cells': [\n"
    "    {'cell_type': 'markdown', 'metadata': {}, 'source': '# utils'},\n"
    "    cell(\"print('utils loaded')\\nx_from_nb = 42\\nx_from_nb\"),\n"
    "    cell(['%time y = 1\\n', 'def helper(a):\\n', '    return a * 2'])]}\n"
    "json.dump(nb, open('utils.ipynb', 'w'))\n"
    "json.dump(dict(nb, cells=nb['cells'] + [cell('1/0'), cell('print(2)')]), open('bad.ipynb', 'w'))\n"
    "open('more.ipy', 'w').write(\"a = 7\\n%time b = 8\\nprint('ipy ran', a)\\n\")\n",
    "%run utils.ipynb\n",
    "x_from_nb, y, helper(3), '__file__' in dir()\n",
    "__file__ = 'mine'\n%run -i more.ipy\n__file__, a, b\n",
    "%run bad.ipynb\n",
    # An error whose str() raises: that error, raised in ipykernel's own
    # _showtraceback, in every %xmode.
    "class BadStr(Exception):\n    def __str__(self):\n        raise RuntimeError('no str')\nraise BadStr()\n",
    "%xmode Plain\n",
    "raise BadStr()\n",
    "%xmode Minimal\n",
    "raise BadStr()\n",
    "%xmode Context\n",
]


def test_cell_running_reads_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_CELL_RUNNING, tracebacks=True)
    assert "interactiveshell.py:3378: UserWarning: x" in expected[0]["stderr"], expected[0]
    assert "interactiveshell.py:3376: UserWarning: y" in expected[1]["stderr"], expected[1]
    assert "RankWarning" in expected[3]["stderr"], expected[3]
    assert "base_events" not in expected[4]["traceback"], expected[4]
    assert "      1 x = 1   \n" in expected[6]["traceback"], expected[6]
    assert "matplotlib_inline" in expected[8]["results"][0]["text"], expected[8]
    assert "utils loaded" in expected[10]["stdout"] and not expected[10]["results"], expected[10]
    assert expected[11]["results"][0]["text"] == "(42, 1, 6, False)", expected[11]
    assert "ipy ran 7" in expected[12]["stdout"], expected[12]
    assert "zmqshell.py:538, in ZMQInteractiveShell._showtraceback" in expected[14]["traceback"], expected[14]
    assert expected[13]["error"][0] == "ZeroDivisionError", expected[13]


# %%capture runs its body as IPython's run_cell does: its trailing value and
# its figures (post_execute) go into the capture, not to the cell; a line
# magic that is only a cell magic says so.
FRESH_CAPTURE = [
    "%%capture c\nprint('p')\n1 + 1\n",
    "len(c.outputs), [o.data for o in c.outputs], c.stdout\n",
    "c()\n",
    "%%capture c2 --no-display\n1 + 2\n",
    "import matplotlib.pyplot as plt\n",
    "%%capture c1\nplt.plot([1, 2])\n",
    "len(c1.outputs), 'image/png' in c1.outputs[1].data\n",
    "ip = get_ipython()\nf = lambda: print('post_execute ran')\nip.events.register('post_execute', f)\n",
    "%%capture c4\nx = 1\n",
    "ip.events.unregister('post_execute', f)\nc4.stdout\n",
    "%%capture c5\n1/0\n",
    "%%capture c6\nx = 5\nx;\n",
    "'c6' in dir()\n",
    "%writefile foo.txt\n",
    # A body with a top-level await: IPython's run_cell hands it to its loop
    # runner, which ipykernel's running loop refuses; the body never runs.
    # (Last: the next error would free the refused coroutine, whose "never
    # awaited" warning comes when Python's cycle collector runs.)
    "import asyncio\n",
    "%%capture c7\nprint('a')\nawait asyncio.sleep(0)\n",
    "c7.stdout, c7.stderr\n",
]


def test_capture_reads_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_CAPTURE, tracebacks=True)
    assert expected[1]["results"][0]["text"] == "(1, [{'text/plain': '2'}], 'p\\n')", expected[1]
    assert expected[3]["results"][0]["text"] == "3", expected[3]
    assert not expected[5]["results"] and expected[6]["results"][0]["text"] == "(2, True)", expected[5:7]
    assert expected[9]["results"][0]["text"] == "post_execute ran\\n", expected[9]  # E2B strips the quotes
    assert "But cell magic `%%writefile` exists" in expected[13]["error"][1], expected[13]
    assert "async_helpers.py:56, in _AsyncIORunner.__call__" in expected[15]["traceback"], expected[15]
    assert expected[16]["results"][0]["text"] == "('', '')", expected[16]


# What IPython's own helpers take from the shell: ultratb formatting an
# error (compile's _filename_map, hooks), a notebook importer's
# input_transformer_manager, transform_cell, compile's flags.
FRESH_SHELL_API = [
    "import sys\nfrom IPython.core import ultratb\ndef boom():\n    return 1/0\ntry:\n    boom()\n"
    "except ZeroDivisionError:\n    info = sys.exc_info()\n"
    "print(ultratb.VerboseTB(color_scheme='NoColor').text(*info))\n",
    "ip = get_ipython()\nip.user_global_ns is ip.user_ns\n",
    "ip.transform_cell('%time x = 1')\n",
    "ip.input_transformer_manager.transform_cell('!ls\\nx = 1')\n",
    "from __future__ import annotations\n",
    "type(ip.compile.ast_parse('x = 1')).__name__, bool(ip.compile.flags & 0x1000000)\n",
    "try:\n    {}['k']\nexcept KeyError:\n    get_ipython().showtraceback(exception_only=True)\nprint('after')\n",
    "r = get_ipython().run_cell('%%nosuch\\n1')\nr.success, type(r.error_in_exec).__name__\n",
    "%%capture c\n%nosuchmagic\n",
    "c.stderr\n",
    "em = get_ipython().extension_manager\nsorted(em.loaded)\n",
    "(em.load_extension('storemagic'), em.load_extension('json'), em.unload_extension('json'),\n"
    " em.reload_extension('json'), em.unload_extension('storemagic'))\n",
    "em.load_extension('autoreload'), sorted(em.loaded), em.unload_extension('autoreload')\n",
    "%load_ext autoreload\n",
    "em.load_extension('nosuchmod')\n",
    "%load_ext nosuchmod\n",
    # history_manager, which plotly's iframe renderers read (get_tail); the
    # session number is the host's history database's, so left out.
    "hm = get_ipython().history_manager\n[(line, src) for _, line, src in hm.get_tail(2)]\n",
    "list(hm.get_range(start=16, stop=18)), hm.input_hist_raw[16], len(hm.input_hist_parsed)\n",
    "[(line, src) for _, line, src in hm.get_tail(1, include_latest=True, output=True)]\n",
    # showsyntaxerror: the line and caret; the frames with running_compiled_code.
    "ip = get_ipython()\ntry:\n    compile('1 +', '<x>', 'exec')\nexcept SyntaxError:\n    ip.showsyntaxerror()\n"
    "print('after')\n",
    "try:\n    eval('1 +')\nexcept SyntaxError:\n    ip.showsyntaxerror(running_compiled_code=True)\n",
    "try:\n    compile('x = (', 'f.py', 'exec')\nexcept SyntaxError:\n    ip.showsyntaxerror(filename='named.py')\n",
]


def test_shell_api_reads_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_SHELL_API, tracebacks=True)
    assert "Cell In [1], line 4, in boom()" in expected[0]["stdout"], expected[0]
    assert expected[5]["results"][0]["text"] == "('Module', True)", expected[5]
    assert expected[6]["traceback"].startswith("An exception has occurred"), expected[6]
    assert expected[7]["error"] is None and "UsageError" in expected[7]["stderr"], expected[7]
    assert expected[8]["error"] is None and "UsageError" in expected[9]["results"][0]["text"], expected[8:]
    # get_ipython().extension_manager: what %load_ext and the others call.
    assert expected[10]["results"][0]["text"] == "['IPython.extensions.storemagic']", expected[10]
    assert expected[11]["results"][0]["text"].replace("\n ", " ") == (
        "('already loaded', 'no load function', 'not loaded', None, 'no unload function')"), expected[11]
    assert "'IPython.extensions.autoreload'" in expected[12]["results"][0]["text"], expected[12]
    assert "already loaded" in expected[13]["stdout"], expected[13]
    assert expected[14]["error"][0] == expected[15]["error"][0] == "ModuleNotFoundError", expected[14:]
    assert "'%load_ext nosuchmod'" in expected[16]["results"][0]["text"], expected[16]
    assert expected[19]["traceback"].startswith("  File <x>:1") and expected[19]["stdout"] == "after\n", expected[19]
    assert "Cell In[" in expected[20]["traceback"] and "named.py" in expected[21]["traceback"], expected[20:]


# IPython's coloured tracebacks render a frame's lines from its scope's text,
# which ends with the scope's last statement: a comment after it is not shown.
# NoColor renders the file's lines as they are.
FRESH_TB_COMMENTS = [
    "def n():\n    return 1/0  # last line raising\nn()\n",
    "def m(x):\n    if x:\n        return 1/0  # in if\n    else:\n        pass  # c\nm(1)\n",
    "def k():\n    y = 1/0  # not last\n    return y  # last\nk()\n",
    "1/0  # top-level comment\n",
    "%colors NoColor\n",
    "n()\n",
]


def test_traceback_comments_read_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_TB_COMMENTS, tracebacks=True)
    assert "----> 2     return 1/0\n" in expected[0]["traceback"], expected[0]
    assert "----> 2     return 1/0  # last line raising\n" in expected[5]["traceback"], expected[5]


# matplotlib_inline.backend_inline is the executor's; it has the real
# module's public names (IPython's deprecated configure_inline_support
# imports one), and one figure per plot stays one.
FRESH_INLINE_MODULE = [
    "import matplotlib_inline.backend_inline as bi\nfrom IPython.core.pylabtools import configure_inline_support\n"
    "configure_inline_support(get_ipython(), 'module://matplotlib_inline.backend_inline')\n",
    "(bi.Figure.__name__, bi.Gcf.__name__, bi.FigureCanvasAgg.__name__, bi.__file__,\n"
    " type(bi.InlineBackend.instance().rc).__name__, bi._enable_matplotlib_integration())\n",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n",
]


def test_inline_backend_module_reads_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_INLINE_MODULE, tracebacks=True)
    assert expected[1]["results"][0]["text"].startswith("('Figure',\n 'Gcf',\n 'FigureCanvasAgg'"), expected[1]
    assert [r["png"] is not None for r in expected[2]["results"]].count(True) == 1, expected[2]


# %prun's error passes through IPython's prun and _run_with_profiler frames
# (a cell magic's body cleaned up as the shell's transform_cell does); %less
# through ipykernel's KernelMagics.less (and for .py IPython's read_py_file
# and tokenize.open).
FRESH_PRUN_LESS = [
    "%prun 1 / 0\n",
    "%%prun -q\nx = 1\n1/0\n",
    "%less missing_file.txt\n",
    "%less missing_file.py\n",
    "open('there.py', 'w').write('x = 1\\n')\n",
    "%less there.py\n",
]


def test_prun_less_errors_read_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_PRUN_LESS, tracebacks=True)
    assert "in ExecutionMagics._run_with_profiler" in expected[0]["traceback"], expected[0]
    assert "File <string>:2" in expected[1]["traceback"], expected[1]
    assert "in KernelMagics.less" in expected[2]["traceback"], expected[2]
    assert "in read_py_file" in expected[3]["traceback"], expected[3]
    assert expected[5]["error"] is None, expected[5]


# The shell's traits and attributes fail where IPython's do: a refused
# interactivity in traitlets' frames, %config of a class it does not list in
# its classnames.index, a deletion with no frame (as Python's own), the
# kernel named as ipykernel's.
FRESH_SHELL_TRAITS = [
    "ip = get_ipython()\nip.ast_node_interactivity = 'sometimes'\n",
    "%config InteractiveShell.ast_node_interactivity\n",
    "del ip.ast_node_interactivity\n",
    "ip.kernel.nosuch\n",
]


def test_shell_traits_fail_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_SHELL_TRAITS, tracebacks=True)
    assert "in Enum.validate" in expected[0]["traceback"], expected[0]
    assert "magics/config.py:164" in expected[1]["traceback"], expected[1]
    assert "File " not in expected[2]["traceback"], expected[2]
    assert expected[3]["error"][1] == "'IPythonKernel' object has no attribute 'nosuch'", expected[3]


# VerboseTB's skip_hidden: frames whose locals set __tracebackhide__
# (numpy.testing's, pytest-style helpers) are one "[... skipping hidden N
# frame]" line, but for the last frame.
FRESH_HIDDEN_FRAMES = [
    "import numpy as np\nnp.testing.assert_allclose([1.0, 2.0], [1.0, 2.1])\n",
    "def inner():\n    __tracebackhide__ = True\n    raise ValueError('v')\n"
    "def middle():\n    __tracebackhide__ = True\n    return inner()\n"
    "def outer():\n    __tracebackhide__ = True\n    return middle()\nouter()\n",
    "def check(x):\n    __tracebackhide__ = True\n    assert x, 'no'\ndef run():\n    check(0)\nrun()\n",
]


def test_hidden_frames_read_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_HIDDEN_FRAMES, tracebacks=True)
    assert "[... skipping hidden 1 frame]" in expected[0]["traceback"], expected[0]
    assert "[... skipping hidden 2 frame]" in expected[1]["traceback"], expected[1]
    assert "in check(x)" in expected[2]["traceback"], expected[2]


# What fails inside IPython's or ipykernel's own code shows their frames:
# input() and getpass in ipykernel's raw_input/getpass (E2B's kernel has no
# stdin), ask_yes_no through IPython's, a background command in system_piped
# and getoutput, %conda, IPython 8.5's %cd --PART and %dhist N on their
# Paths and map, and the debugger (pdb's and %debug's) asking for a command
# through IPython's Pdb.
FRESH_FOREIGN_RAISES = [
    "input('name: ')\n",
    "import getpass\ngetpass.getpass()\n",
    "get_ipython().ask_yes_no('sure?')\n",
    "!sleep 0.1 &\n",
    "x = !echo y &\n",
    "%sx echo w &\n",
    "%conda list\n",
    "%cd --no_such_dir_in_history\n",
    "%dhist 2\n",
    "import pdb\npdb.set_trace()\n'after pdb'\n",
    "import sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    pdb.post_mortem(sys.exc_info()[2])\n",
    "1 / 0\n",
    "%debug\n",
    "get_ipython().set_custom_exc([ValueError], None)\n",
]


def test_foreign_raises_read_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_FOREIGN_RAISES, tracebacks=True)
    assert "ipykernel/kernelbase.py:1174, in Kernel.raw_input" in expected[0]["traceback"], expected[0]
    assert "in ZMQInteractiveShell.system_piped" in expected[3]["traceback"], expected[3]
    assert "in PackagingMagics.conda" in expected[6]["traceback"], expected[6]
    assert "in InterruptiblePdb.cmdloop" in expected[9]["traceback"], expected[9]
    assert "in VerboseTB.debugger" in expected[12]["traceback"], expected[12]


# run_cell(store_history=True) from a cell: an input of its own at the running
# count, which it takes, so the cell's result and the cells after count on
# (In, Out, "Cell In[n]"). A large history cache keeps ipykernel's database
# from writing, whose clash on the shared line prints an error there.
FRESH_STORED_RUN_CELL = [
    "get_ipython().history_manager.db_cache_size = 10 ** 6\n1\n",
    "r = get_ipython().run_cell('2', store_history=True); r.execution_count\n",
    "get_ipython().execution_count, len(In), list(Out.keys())\n",
    "r2 = get_ipython().run_cell('x = 5', store_history=True); r2.execution_count, In[-1]\n",
    "r3 = get_ipython().run_cell('1/0', store_history=True)\n",
    "r4 = get_ipython().run_cell('1 +', store_history=True)\n",
    "r5 = get_ipython().run_cell('6', store_history=True, silent=True)\n",
    "1/0\n",
]


def test_stored_run_cell_counts_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_STORED_RUN_CELL, tracebacks=True)
    assert [r["text"] for r in expected[1]["results"]] == ["2", "2"], expected[1]
    assert "Cell In[" in expected[7]["traceback"], expected[7]


# E2B's PIL hook (startup_scripts/0003_images.py): a failing save shows its
# save() frame at E2B's file and line, and Image.save is that function.
FRESH_E2B_SAVE = [
    "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('nodir/chart.png')\n",
    "from PIL import Image\nImage.new('RGB', (4, 4)).save('nodir/x.png')\n",
    "Image.Image.save\n",
]


def test_e2b_image_save_frames_as_in_e2b(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_E2B_SAVE, tracebacks=True)
    assert "0003_images.py:32, in save(image, fp, format, **options)" in expected[1]["traceback"], expected[1]


# A cell's code counts against the recursion limit as deep as in ipykernel
# (cell_depth.h): a RecursionError skips as many similar frames, in a plain
# cell and in one with a top-level await, however warm the executor's own code
# is (the same cell four times); setrecursionlimit names the same depth.
# sys.last_traceback starts at IPython's run_code, and a cell's lines end in
# a newline, the last one too: traceback.print_last() reads as there, carets
# and all, and so does inspect.getsource.
FRESH_DEPTH_AND_LAST_ERROR = [
    "def rec(n):\n    return rec(n + 1)\nrec(0)",
    "import sys, traceback, asyncio\ndef depth(n=0):\n    try:\n        return depth(n + 1)\n"
    "    except RecursionError:\n        return n\ndepth()",
    "await asyncio.sleep(0)\nrec(0)",
    "await asyncio.sleep(0)\nrec(0)",
    "await asyncio.sleep(0)\nrec(0)",
    "await asyncio.sleep(0)\nrec(0)",
    "await asyncio.sleep(0)\nx = depth()\nx, depth()",
    "try:\n    sys.setrecursionlimit(10)\nexcept RecursionError as e:\n    print(e)",
    "x = undefined_name",
    "traceback.print_last()",
    "print(''.join(traceback.format_exception(sys.last_value)))",
    "await asyncio.sleep(0); 1/0",
    "traceback.print_last()",
    "def g():\n    return 1/0",
    "try:\n    g()\nexcept Exception:\n    traceback.print_exc()",
    "import inspect\nprint(inspect.getsource(g))",
]


def test_depth_and_last_error_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_DEPTH_AND_LAST_ERROR, tracebacks=True)
    assert "rec at line 2 (2971 times)" in expected[0]["traceback"], expected[0]
    assert all("rec at line 2 (2981 times)" in e["traceback"] for e in expected[2:6]), expected[2:6]
    assert "the recursion depth" in expected[7]["stdout"], expected[7]
    assert "in run_code\n    exec(code_obj" in expected[9]["stderr"], expected[9]
    assert "\n        ^^^^" in expected[9]["stderr"], expected[9]
    assert expected[15]["stdout"].endswith("1/0\n\n"), expected[15]


# %matplotlib (and %pylab) with a GUI toolkit or ipympl's widget loads its
# backend as IPython does, which fails in a sandbox: the loading error through
# IPython's enable_matplotlib and activate_matplotlib, the figures closed and
# the backend's name left in rcParams; the first GUI asked for is the one
# later ones get; %matplotlib inline still works after.
FRESH_MPL_GUI = [
    "import matplotlib.pyplot as plt\nplt.plot([1, 2])",
    "%matplotlib widget",
    "import matplotlib\nmatplotlib.get_backend(), matplotlib.is_interactive(), len(plt.get_fignums())",
    "plt.plot([2, 1])",
    "%matplotlib qt",
    "%pylab tk",
    "%matplotlib inline\nplt.plot([1, 3])",
    "matplotlib.get_backend()",
]


def test_gui_backends_fail_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_MPL_GUI, tracebacks=True)
    assert expected[1]["error"][0] == "ModuleNotFoundError", expected[1]
    assert "in activate_matplotlib(backend)" in expected[1]["traceback"], expected[1]
    assert expected[4]["stdout"].startswith("Warning: Cannot change to a different GUI toolkit: qt"), expected[4]
    assert "in InteractiveShell.enable_pylab(" in expected[5]["traceback"], expected[5]
    assert [r["formats"] for r in expected[6]["results"]] == [["text"], ["png", "text"]], expected[6]


# %matplotlib agg switches as IPython does (no figure shown after each cell,
# one shown as a cell's value still is: IPython's formatters are set up then);
# svg, pdf and ps switch too, then fail in ipykernel's enable_gui; a bare
# %matplotlib or %pylab takes the GUI selected before. A Figure made without
# pyplot, or after matplotlib.use('Agg') before pyplot, is text: the inline
# backend that registers the image formatters was never loaded. pyplot's
# post_execute draw of stale figures runs whatever the backend while pyplot
# is interactive (an SVG canvas drawn so takes its fixed dpi).
FRESH_MPL_SWITCH = [
    "from matplotlib.figure import Figure\nfig = Figure()\nfig.add_subplot().plot([1, 2])\nfig",
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",
    "plt.gcf()",
    "%matplotlib agg",
    "matplotlib.get_backend(), matplotlib.is_interactive(), get_ipython().active_eventloop",
    "plt.plot([3, 1])",
    "plt.gcf()",
    "%matplotlib svg",
    "plt.plot([1, 2])\nfig = plt.gcf()",
    "fig.dpi, fig",
    "%matplotlib",
    "%pylab",
    "%matplotlib inline\nplt.plot([1, 3])",
]


def test_backend_switches_as_in_ipykernel(agent):
    expected = same_as_a_fresh_ipykernel(agent, FRESH_MPL_SWITCH, tracebacks=True)
    assert [r["formats"] for r in expected[0]["results"]] == [["text"]], expected[0]
    assert [r["formats"] for r in expected[2]["results"]] == [["text"]], expected[2]
    assert [r["formats"] for r in expected[5]["results"]] == [["text"]], expected[5]
    assert [r["formats"] for r in expected[6]["results"]] == [["png", "text"]], expected[6]
    assert expected[7]["stderr"].startswith("UsageError: Invalid GUI request 'svg'"), expected[7]
    assert expected[9]["results"][0]["text"].startswith("(72,"), expected[9]
    assert expected[10]["stderr"].startswith("UsageError: Invalid GUI request 'svg'"), expected[10]
    assert expected[11]["stderr"].startswith("UsageError: Invalid GUI request 'svg'"), expected[11]
    assert [r["formats"] for r in expected[12]["results"]] == [["text"], ["png", "text"]], expected[12]

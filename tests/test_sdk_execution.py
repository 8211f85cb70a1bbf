"""The SDK's execution API against a real agent: results, formats, streams,
display data, DataFrames, figures, errors, execution counts, big output."""

import base64
import json
import re
import struct
import time

import pytest

from cellvm import (
    Context,
    Execution,
    ExecutionError,
    InvalidArgumentException,
    Logs,
    OutputMessage,
    Result,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_trivial_expression(sbx, ctx):
    ex = sbx.run_code("1 + 1", context=ctx)
    assert isinstance(ex, Execution)
    assert ex.error is None
    assert ex.text == "2"
    assert len(ex.results) == 1
    r = ex.results[0]
    assert r.is_main_result
    assert r.formats() == ["text"]
    assert r["text"] == "2"
    assert repr(r) == "Result(2)" and str(r) == "Result(2)"
    assert ex.logs.stdout == [] and ex.logs.stderr == []
    assert repr(ex) == "Execution(Results: [Result(2)], Logs: Logs(stdout: [], stderr: []), Error: None)"


def test_str_value_loses_quotes_as_in_e2b(sbx, ctx):
    ex = sbx.run_code("'abc'", context=ctx)
    assert ex.text == "abc"
    assert ex.results[0].raw["text/plain"] == "'abc'"
    # Double quotes too (a str holding a '), and a lone quote, as E2B's server
    # (api/models/result.py) strips them.
    assert sbx.run_code('"it\'s"', context=ctx).text == "it's"
    lone = sbx.run_code("class One:\n    def __repr__(self):\n        return \"'\"\nOne()", context=ctx)
    assert lone.results[0].text == "" and lone.results[0].formats() == []


def test_result_fields_are_e2bs(sbx, ctx):
    # vars(result) holds E2B's fields only (`chart` only with a chart), so a
    # generic JSON encoder takes any result, a figure's included.
    ex = sbx.run_code("from PIL import Image\ndisplay(Image.new('RGB', (4, 4)))\n'abc'", context=ctx)
    image, value = ex.results
    assert sorted(vars(image)) == sorted(vars(value)) == [
        "data", "extra", "html", "is_main_result", "javascript", "jpeg", "json", "latex", "markdown", "pdf",
        "png", "svg", "text"]
    assert json.loads(json.dumps(vars(image)))["png"] == image.png
    assert image.png_bytes.startswith(b"\x89PNG") and image.raw["image/png"] == image.png_bytes
    assert value.raw["text/plain"] == "'abc'" and image.chart is None


def test_reprs_match_ipython(sbx, ctx):
    cases = {
        "{'b': 2, 'a': 1}": "{'b': 2, 'a': 1}",
        "list(range(30))": "[0,\n 1,\n 2,\n 3,\n 4,\n 5,\n 6,\n 7,\n 8,\n 9,\n 10,\n 11,\n 12,\n 13,\n 14,\n"
                           " 15,\n 16,\n 17,\n 18,\n 19,\n 20,\n 21,\n 22,\n 23,\n 24,\n 25,\n 26,\n 27,\n 28,\n 29]",
        "(1,)": "(1,)",
        "1.5e300 * 10": "1.5e+301",
        "b'\\x00ab'": "b'\\x00ab'",
    }
    for code, want in cases.items():
        assert sbx.run_code(code, context=ctx).text == want, code


def test_semicolon_suppresses_the_result(sbx, ctx):
    ex = sbx.run_code("1 + 1;", context=ctx)
    assert ex.results == [] and ex.text is None and ex.error is None
    ex = sbx.run_code("x = 5\nx;", context=ctx)
    assert ex.results == []
    # A statement as the last line has no value either.
    assert sbx.run_code("y = 3", context=ctx).results == []
    assert sbx.run_code("None", context=ctx).results == []


def test_print_then_value(sbx, ctx):
    ex = sbx.run_code("print('hello world')\n40 + 2", context=ctx)
    assert "".join(ex.logs.stdout) == "hello world\n"
    assert ex.text == "42"
    assert isinstance(ex.logs, Logs)
    assert json.loads(ex.logs.to_json()) == {"stdout": ex.logs.stdout, "stderr": []}


def test_execution_count_increments_per_cell(sbx, ctx):
    counts = [sbx.run_code(c, context=ctx).execution_count for c in ("1", "2;", "1/0", "x = 1", "x")]
    assert counts == [1, 2, 3, 4, 5]


def test_stdout_stderr_callbacks_get_output_messages(sbx, ctx):
    out, err = [], []
    before = time.time_ns()
    ex = sbx.run_code("import sys\nprint('to out')\nprint('to err', file=sys.stderr)",
                      context=ctx, on_stdout=out.append, on_stderr=err.append)
    after = time.time_ns()
    assert out and all(isinstance(m, OutputMessage) for m in out + err)
    assert "".join(m.line for m in out) == "to out\n"
    assert "".join(str(m) for m in err) == "to err\n"
    assert not any(m.error for m in out) and all(m.error for m in err)
    assert all(before <= m.timestamp <= after for m in out + err)
    assert "".join(ex.logs.stdout) == "to out\n" and "".join(ex.logs.stderr) == "to err\n"


def test_output_streams_while_the_cell_runs(sbx, ctx):
    """The first print reaches the callback long before the cell ends."""
    got = []
    code = ("import sys, time\n"
            "print('first')\n"
            "print('first err', file=sys.stderr)\n"
            "time.sleep(1.5)\n"
            "print('last')")
    ex = sbx.run_code(code, context=ctx,
                      on_stdout=lambda m: got.append(("out", m.line, time.monotonic(), m.timestamp)),
                      on_stderr=lambda m: got.append(("err", m.line, time.monotonic(), m.timestamp)))
    end = time.monotonic()
    assert ex.error is None
    first_out = next(g for g in got if g[0] == "out")
    first_err = next(g for g in got if g[0] == "err")
    last_out = [g for g in got if g[0] == "out"][-1]
    assert first_out[1].startswith("first")
    assert end - first_out[2] > 1.0, "stdout was not streamed while the cell ran"
    assert end - first_err[2] > 1.0, "stderr was not streamed while the cell ran"
    assert last_out[3] - first_out[3] > 1.0e9  # timestamps (ns) show the same gap


def test_display_data_then_result(sbx, ctx):
    code = ("class Rich:\n"
            "    def _repr_html_(self): return '<b>rich</b>'\n"
            "    def _repr_markdown_(self): return '**rich**'\n"
            "    def __repr__(self): return 'Rich()'\n"
            "display(Rich())\n"
            "print('between')\n"
            "display({'k': [1, 2]})\n"
            "7")
    seen = []
    ex = sbx.run_code(code, context=ctx, on_result=seen.append)
    assert ex.error is None, ex.error
    assert [r.is_main_result for r in ex.results] == [False, False, True]
    rich, dct, main = ex.results
    assert rich.text == "Rich()" and rich.html == "<b>rich</b>" and rich.markdown == "**rich**"
    assert rich.formats() == ["text", "html", "markdown"]
    assert dct.text == "{'k': [1, 2]}"
    assert main.text == "7" and ex.text == "7"
    assert seen == ex.results
    assert "".join(ex.logs.stdout) == "between\n"


def test_dataframe_text_html_and_data(sbx, ctx):
    code = ("import pandas as pd\n"
            "df = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z'], 'c': [0.5, 1.5, 2.5]})\n"
            "df")
    ex = sbx.run_code(code, context=ctx)
    assert ex.error is None, ex.error
    r = ex.results[0]
    assert r.is_main_result
    assert r.text == "   a  b    c\n0  1  x  0.5\n1  2  y  1.5\n2  3  z  2.5"
    assert r.html.startswith("<div>") and "<table" in r.html and "<td>y</td>" in r.html
    assert r.data == {"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [0.5, 1.5, 2.5]}
    assert {"text", "html", "data"} <= set(r.formats())


def test_dataframe_timestamps_are_iso_strings(sbx, ctx):
    ex = sbx.run_code("import pandas as pd\npd.DataFrame({'d': pd.to_datetime(['2026-01-02'])})", context=ctx)
    assert ex.results[0].data == {"d": ["2026-01-02T00:00:00"]}


def test_matplotlib_figure_is_a_png(sbx, ctx):
    code = ("import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "x = np.linspace(0, 10, 100)\n"
            "plt.plot(x, np.sin(x))\n"
            "plt.title('sin')\n"
            "plt.show()")
    ex = sbx.run_code(code, context=ctx)
    assert ex.error is None, ex.error
    figs = [r for r in ex.results if r.png]
    assert len(figs) == 1
    fig = figs[0]
    assert not fig.is_main_result
    assert fig.text == "<Figure size 640x480 with 1 Axes>"
    raw = base64.b64decode(fig.png)
    assert raw == fig.png_bytes
    w, h = png_size(raw)
    # 640x480 at 100 dpi, cropped to the drawn area as ipykernel's inline backend does.
    assert 450 <= w <= 640 and 350 <= h <= 480, (w, h)
    assert "png" in fig.formats()
    assert repr(fig) == "Result(<Figure size 640x480 with 1 Axes>)"


def test_figure_left_open_is_shown_at_cell_end(sbx, ctx):
    ex = sbx.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]);", context=ctx)
    assert ex.error is None, ex.error
    assert [r.text for r in ex.results if r.png] == ["<Figure size 640x480 with 1 Axes>"]


def test_error_name_value_traceback(sbx, ctx):
    errors = []
    ex = sbx.run_code("def f(d):\n    return 1 / d\n\nx = 1\nf(0)", context=ctx, on_error=errors.append)
    assert isinstance(ex.error, ExecutionError)
    assert ex.error.name == "ZeroDivisionError"
    assert ex.error.value == "division by zero"
    tb = ANSI.sub("", ex.error.traceback)
    assert "Cell In[1], line 5" in tb
    assert "f(0)" in tb and "return 1 / d" in tb
    assert "ZeroDivisionError: division by zero" in tb
    assert errors == [ex.error]
    assert ex.results == [] and ex.text is None
    assert json.loads(ex.error.to_json())["name"] == "ZeroDivisionError"


def test_error_after_output_keeps_the_output(sbx, ctx):
    ex = sbx.run_code("print('before')\nraise ValueError('bad value')", context=ctx)
    assert "".join(ex.logs.stdout) == "before\n"
    assert (ex.error.name, ex.error.value) == ("ValueError", "bad value")


def test_syntax_and_name_errors(sbx, ctx):
    ex = sbx.run_code("undefined_name", context=ctx)
    assert (ex.error.name, ex.error.value) == ("NameError", "name 'undefined_name' is not defined")
    ex = sbx.run_code("def (:", context=ctx)
    assert ex.error.name == "SyntaxError"
    assert ex.error.value.startswith("invalid syntax")


def test_to_json_round_trips(sbx, ctx):
    ex = sbx.run_code("print('p')\n7", context=ctx)
    data = json.loads(ex.to_json())
    assert data["results"] == [{"text": "7"}]
    logs = json.loads(data["logs"])
    # How output is cut into chunks depends on timing; the text does not.
    assert "".join(logs["stdout"]) == "p\n" and logs["stderr"] == []
    assert data["error"] is None


def test_unknown_mime_type_goes_to_extra(sbx, ctx):
    code = ("class Odd:\n"
            "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
            "        return {'text/plain': 'odd', 'application/x-cellvm-test': 'payload'}\n"
            "Odd()")
    r = sbx.run_code(code, context=ctx).results[0]
    assert r.text == "odd"
    assert r.extra == {"application/x-cellvm-test": "payload"}
    assert r.formats() == ["text", "application/x-cellvm-test"]


def test_five_megabytes_of_output(sbx, ctx):
    n = 5 * 1024 * 1024
    ex = sbx.run_code(f"print('x' * {n})", context=ctx)
    assert ex.error is None
    out = "".join(ex.logs.stdout)
    assert len(out) == n + 1 and out == "x" * n + "\n"
    ex = sbx.run_code(f"s = 'y' * {n}\ns", context=ctx)
    assert ex.text == "y" * n


def test_language_and_context_are_exclusive(sbx, ctx):
    with pytest.raises(InvalidArgumentException):
        sbx.run_code("1", language="python", context=ctx)
    with pytest.raises(InvalidArgumentException):
        sbx.run_code("1", language="r")
    assert sbx.run_code("1", language="python").text == "1"


def test_result_model_without_agent():
    """Conversions that do not depend on the agent's output."""
    r = Result.from_bundle({"text/plain": "x", "image/png": b"\x89PNG", "image/x-odd": b"\x01"}, False)
    assert r.png == base64.b64encode(b"\x89PNG").decode() and r.png_bytes == b"\x89PNG"
    assert r.extra == {"image/x-odd": "AQ=="}
    assert Result(png="AAA=").formats() == ["png"]
    assert repr(Result(png="AAA=")) == "Result(Formats: png)"
    c = Context("id1", "python", "/w")
    assert (c.id, c.language, c.cwd) == ("id1", "python", "/w")
    assert repr(c) == "Context(id='id1', language='python', cwd='/w')"


def test_reset_f_clears_the_namespace_and_output_history_but_not_the_count(sbx, ctx):
    """IPython's %reset -f (not in the notebook corpus: it would wipe the shared
    reference kernel's helpers; tests/test_magics_reset_run_parity.py compares
    it with a fresh ipykernel). `_` is gone with the rest. Without -f IPython
    asks, which fails under ipykernel and counts as yes."""
    sbx.run_code("kept_by_nobody = 41", context=ctx)
    before = sbx.run_code("kept_by_nobody + 1", context=ctx)
    assert before.text == "42"
    sbx.run_code("%reset -f", context=ctx)
    gone = sbx.run_code("_", context=ctx)
    assert gone.error is not None and gone.error.name == "NameError"
    after = sbx.run_code("('kept_by_nobody' in dir(), len(Out), 'In' in dir())", context=ctx)
    assert after.text == "(False, 0, True)"
    assert after.execution_count == before.execution_count + 3
    sbx.run_code("again = 1", context=ctx)
    asked = sbx.run_code("%reset", context=ctx)
    assert asked.error is None and not asked.logs.stdout
    assert sbx.run_code("'again' in dir()", context=ctx).text == "False"

"""Result.chart: the data of a matplotlib figure, as E2B's code interpreter gives it.

Real matplotlib in a real executor, through the SDK. The expected values are
what E2B's extractor (e2b_charts, sent as `e2b/chart`) makes of the same
figure: data points exact, tick positions and labels as matplotlib's
get_xticks()/get_xticklabels() give them (asked in the cell itself), pie
angles and box values rounded as E2B rounds them, and E2B's quirks (bars and
boxes of equal height read as horizontal, only single fliers as outliers,
numpy-integer ticks never categorical).
"""

import json
import logging
import os
import sys

import pytest

from cellvm import Result
from cellvm.charts import (
    BarChart,
    BoxAndWhiskerChart,
    Chart,
    ChartType,
    LineChart,
    PieChart,
    ScaleType,
    ScatterChart,
    SuperChart,
)

EMBED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python-embed")

# Prints what matplotlib itself says of the current axes' ticks (what E2B reads).
TICKS = """
import json as _json
_ax = plt.gca()
print(_json.dumps({"x": [float(t) for t in _ax.get_xticks()], "y": [float(t) for t in _ax.get_yticks()],
                   "xl": [t.get_text() for t in _ax.get_xticklabels()],
                   "yl": [t.get_text() for t in _ax.get_yticklabels()]}))
"""


def run(sbx, ctx, code):
    ex = sbx.run_code(code, context=ctx)
    assert ex.error is None, ex.error.traceback
    assert ex.logs.stderr == []
    return ex


def only_figure(ex):
    figures = [r for r in ex.results if r.png]
    assert len(figures) == 1
    return figures[0]


def matplotlib_ticks(ex):
    return json.loads("".join(ex.logs.stdout).strip().splitlines()[-1])


def test_line_chart(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([0, 1, 2, 3], [1.5, -2.25, 0.1, 3.0], label="measured")
ax.plot([0, 0.5, 3], [3, 2, 0])
ax.axhline(0.5)  # two points on one y: a grid line, left out
ax.set_title("Voltage over time")
ax.set_xlabel("Time (s)")
ax.set_ylabel("Voltage [mV]")
""" + TICKS + "plt.show()")
    result = only_figure(ex)
    chart = result.chart
    assert isinstance(chart, LineChart) and type(chart) is LineChart
    assert chart.type is ChartType.LINE and chart.type == "line"
    assert chart.title == "Voltage over time"
    assert (chart.x_label, chart.y_label) == ("Time (s)", "Voltage [mV]")
    assert (chart.x_unit, chart.y_unit) == ("s", "mV")
    assert chart.x_scale is ScaleType.LINEAR and chart.y_scale is ScaleType.LINEAR

    mpl = matplotlib_ticks(ex)
    assert chart.x_ticks == mpl["x"] and chart.y_ticks == mpl["y"]
    assert chart.x_tick_labels == mpl["xl"] and chart.y_tick_labels == mpl["yl"]
    assert chart.y_tick_labels[0].startswith("\u2212")  # matplotlib's minus sign, as it draws it
    assert all(type(t) is float for t in chart.x_ticks + chart.y_ticks)
    assert all(type(s) is str for s in chart.x_tick_labels + chart.y_tick_labels)

    assert [line.label for line in chart.elements] == ["measured", "Line 1"]
    assert chart.elements[0].points == [(0.0, 1.5), (1.0, -2.25), (2.0, 0.1), (3.0, 3.0)]
    assert chart.elements[1].points == [(0.0, 3.0), (0.5, 2.0), (3.0, 0.0)]
    assert all(type(p) is tuple and type(p[0]) is float and type(p[1]) is float
               for line in chart.elements for p in line.points)


def test_scatter_chart(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
plt.scatter([1, 2.5, 4], [10, 20, 15], label="Dataset 1")
plt.scatter([3], [12])
""" + TICKS + "plt.show()")
    chart = only_figure(ex).chart
    assert isinstance(chart, ScatterChart) and chart.type == ChartType.SCATTER
    assert chart.title is None and chart.x_label is None and chart.x_unit is None
    # E2B keeps matplotlib's name of an unlabelled collection.
    assert [s.label for s in chart.elements] == ["Dataset 1", "_child1"]
    assert chart.elements[0].points == [(1.0, 10.0), (2.5, 20.0), (4.0, 15.0)]
    assert chart.elements[1].points == [(3.0, 12.0)]
    mpl = matplotlib_ticks(ex)
    assert (chart.x_ticks, chart.x_tick_labels) == (mpl["x"], mpl["xl"])
    assert (chart.y_ticks, chart.y_tick_labels) == (mpl["y"], mpl["yl"])


def test_grouped_and_horizontal_bar_charts(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
import numpy as np
x = np.arange(3)
fig, ax = plt.subplots()
ax.bar(x - 0.2, [10, 25, 17.5], 0.4, label="2023")
ax.bar(x + 0.2, [12, 22, 30], 0.4)
ax.set_xticks(x + 0.0, ["North", "South", "East"])
ax.set_xlabel("Region")
ax.set_ylabel("Sales (k$)")
ax.set_title("Sales by region")
plt.show()
fig, ax = plt.subplots()
ax.barh(["a", "b", "c"], [3, 1, 2])
ax.set_xlabel("Count (n)")
plt.show()
""")
    grouped, horizontal = [r.chart for r in ex.results]
    assert isinstance(grouped, BarChart) and grouped.type == ChartType.BAR
    assert grouped.title == "Sales by region"
    assert (grouped.x_label, grouped.y_label, grouped.x_unit, grouped.y_unit) == \
        ("Region", "Sales (k$)", None, "k$")
    assert [(b.label, b.group, b.value) for b in grouped.elements] == [
        ("North", "2023", 10.0), ("South", "2023", 25.0), ("East", "2023", 17.5),
        ("North", "Group 1", 12.0), ("South", "Group 1", 22.0), ("East", "Group 1", 30.0)]
    assert all(type(b.value) is float for b in grouped.elements)
    # Bars of one height are read as horizontal: labels from the y axis, values
    # are widths, and the axis labels swap so that y names the values' axis.
    assert [(b.label, b.group, b.value) for b in horizontal.elements] == [
        ("a", "Group 0", 3.0), ("b", "Group 0", 1.0), ("c", "Group 0", 2.0)]
    assert (horizontal.x_label, horizontal.y_label, horizontal.y_unit) == (None, "Count (n)", "n")


def test_pie_chart(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
plt.pie([90, 10], labels=["No", "No, in blue"], autopct="%1.1f%%", startangle=90)
plt.title("Will I wake up early tomorrow?")
plt.show()
fig, ax = plt.subplots()
ax.pie([1] * 7, labels=list("abcdefg"), radius=0.8)
sweeps = [w.theta2 - w.theta1 for w in ax.patches]
print(sweeps[0])
plt.show()
""")
    first, second = [r.chart for r in ex.results]
    assert isinstance(first, PieChart) and first.type == ChartType.PIE
    assert first.title == "Will I wake up early tomorrow?"
    assert not hasattr(first, "x_label")
    assert [(w.label, w.angle, w.radius) for w in first.elements] == [("No", 324.0, 1.0),
                                                                      ("No, in blue", 36.0, 1.0)]
    # 360/7 as matplotlib computes it, rounded by E2B to 8 - 1 = 7 significant digits.
    raw = float("".join(ex.logs.stdout))
    assert raw != 51.42857
    assert [(w.label, w.angle, w.radius) for w in second.elements] == \
        [(c, 51.42857, 0.8) for c in "abcdefg"]
    assert all(type(w.angle) is float and type(w.radius) is float for w in second.elements)


def test_box_and_whisker_chart(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
data = {"Class A": [85, 90, 78, 92, 88], "Class B": [95, 89, 76, 91, 84, 87, 40],
        "Class C": [75, 82, 88, 79, 86, 10, 150]}
fig, ax = plt.subplots()
ax.boxplot(list(data.values()), patch_artist=True)
ax.set_xticks([1, 2, 3], list(data))
ax.set_title("Exam Scores Distribution")
ax.set_xlabel("Class")
ax.set_ylabel("Score (pts)")
plt.show()
fig, ax = plt.subplots()
ax.boxplot([[1, 2, 3, 4, 5]])  # no patch_artist: only lines
plt.show()
""")
    chart, plain = [r.chart for r in ex.results]
    assert isinstance(chart, BoxAndWhiskerChart) and chart.type == ChartType.BOX_AND_WHISKER
    assert chart.title == "Exam Scores Distribution"
    assert (chart.x_label, chart.y_label, chart.y_unit) == ("Class", "Score (pts)", "pts")
    got = [(b.label, b.min, b.first_quartile, b.median, b.third_quartile, b.max, b.outliers)
           for b in chart.elements]
    # numpy's quartiles; 1.5 IQR whiskers; E2B counts a flier line as outliers
    # only when it holds a single point (Class C has two).
    assert got == [("Class A", 78.0, 85.0, 88.0, 90.0, 92.0, []),
                   ("Class B", 76.0, 80.0, 87.0, 90.0, 95.0, [40.0]),
                   ("Class C", 75.0, 77.0, 82.0, 87.0, 88.0, [])]
    assert all(type(v) is float for b in chart.elements
               for v in (b.min, b.first_quartile, b.median, b.third_quartile, b.max))
    # As in E2B, a box plot drawn with lines only is a line chart.
    assert isinstance(plain, LineChart)


def test_superchart(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
import numpy as np
fig, axs = plt.subplots(1, 2, figsize=(10, 4))
fig.suptitle("Multiple Charts Example")
axs[0].plot(np.linspace(0, 10, 100), np.sin(np.linspace(0, 10, 100)), "r")
axs[0].set_title("Sine Wave")
axs[0].grid(True)
axs[1].scatter([0.5, 0.25], [0.75, 1.0], label="Dataset 1")
axs[1].set_xlabel("X")
axs[1].set_title("Scatter Plot")
plt.show()
fig, axs = plt.subplots(2)
axs[0].bar(["x", "y"], [1, 2])
plt.show()
""")
    chart, untitled = [r.chart for r in ex.results]
    assert isinstance(chart, SuperChart) and chart.type == ChartType.SUPERCHART
    assert chart.title == "Multiple Charts Example"
    line, scatter = chart.elements
    assert isinstance(line, LineChart) and line.title == "Sine Wave" and line.x_label is None
    assert len(line.elements) == 1 and len(line.elements[0].points) == 100
    assert isinstance(scatter, ScatterChart) and scatter.title == "Scatter Plot"
    assert scatter.x_label == "X" and scatter.elements[0].points == [(0.5, 0.75), (0.25, 1.0)]
    # No suptitle: "" (E2B takes it as matplotlib gives it). An empty axes has
    # only lines (none), so it is an empty line chart.
    assert untitled.title == ""
    assert [type(c) for c in untitled.elements] == [BarChart, LineChart]
    assert untitled.elements[1].elements == []
    assert chart.to_dict()["elements"][0]["type"] == "line"


def test_dates_categories_and_scales(sbx, ctx):
    ex = run(sbx, ctx, """
import datetime
import matplotlib.pyplot as plt
import numpy as np
days = [datetime.date(2023, 9, 1) + datetime.timedelta(days=i) for i in range(3)]
plt.plot(days, [1, 4, 2], label="visits")
""" + TICKS + """plt.show()
plt.plot(np.array(["2023-09-01T06:30", "2023-09-02T00:00"], dtype="datetime64[m]"), [1, 2])
plt.show()
plt.plot([1, 2, 3], ["low", "mid", "high"])
plt.show()
plt.semilogy([1, 2, 3], [1, 10, 100])
plt.show()
fig, ax = plt.subplots()
ax.plot([0, 1, 2, 3], [1, 2, 3, 4])
ax.set_xticks([0, 1, 2, 3], ["q1", "q2", "q3", "q4"])
plt.show()
fig, ax = plt.subplots()
ax.plot([0, 1, 2, 3], [1, 2, 3, 4])
ax.set_xticks([0.0, 1.0, 2.0, 3.0], ["q1", "q2", "q3", "q4"])
plt.show()
""")
    dated, dt64, categorical, log, int_ticks, float_ticks = [r.chart for r in ex.results]
    mpl = matplotlib_ticks(ex)
    assert dated.x_scale is ScaleType.DATETIME and dated.y_scale is ScaleType.LINEAR
    assert dated.elements[0].points == [("2023-09-01", 1.0), ("2023-09-02", 4.0), ("2023-09-03", 2.0)]
    assert dated.x_tick_labels == mpl["xl"]
    # Date ticks: matplotlib's dates (UTC) in ISO form.
    import datetime
    import matplotlib.dates
    assert dated.x_ticks == [matplotlib.dates.num2date(t).isoformat() for t in mpl["x"]]
    assert dated.x_ticks[0].endswith("+00:00")
    assert datetime.datetime.fromisoformat(dated.x_ticks[0]).tzinfo is not None

    assert dt64.x_scale is ScaleType.DATETIME
    assert dt64.elements[0].points == [("2023-09-01T06:30:00", 1.0), ("2023-09-02T00:00:00", 2.0)]

    assert categorical.y_scale is ScaleType.CATEGORICAL and categorical.x_scale is ScaleType.LINEAR
    assert categorical.y_ticks == [0.0, 1.0, 2.0]
    assert categorical.y_tick_labels == ["low", "mid", "high"]
    assert categorical.elements[0].points == [(1.0, "low"), (2.0, "mid"), (3.0, "high")]

    assert log.y_scale is ScaleType.LOG and log.x_scale is ScaleType.LINEAR

    # Ticks set from numpy integers are sent as integers and never make a
    # categorical axis; Python floats with other labels do.
    assert int_ticks.x_ticks == [0, 1, 2, 3] and all(type(t) is int for t in int_ticks.x_ticks)
    assert int_ticks.x_scale is ScaleType.LINEAR
    assert float_ticks.x_ticks == [0.0, 1.0, 2.0, 3.0] and float_ticks.x_scale is ScaleType.CATEGORICAL
    assert float_ticks.x_tick_labels == ["q1", "q2", "q3", "q4"]


def test_figures_without_a_chart_keep_their_png(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
import numpy as np
fig, ax = plt.subplots()        # axes without data
plt.show()
fig, ax = plt.subplots()
ax.text(0.5, 0.5, "only text")
plt.show()
fig, ax = plt.subplots()
ax.plot([1, 2, 3])
ax.set_xticks([])               # E2B's extractor fails on an axis without ticks
plt.show()
print("cell went on")
""")
    assert len(ex.results) == 3
    for r in ex.results:
        assert r.png and r.chart is None and "chart" not in r.formats()
        assert "e2b/chart" not in r.raw and r.extra == {}
    assert "".join(ex.logs.stdout) == "cell went on\n"


def test_a_chart_too_large_for_the_wire_is_left_out(sbx, ctx):
    """4M points make a chart over the 64 MiB a message may hold: the figure
    still arrives, without it (it used to fail the display, and the cell)."""
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
import numpy as np
plt.plot(np.arange(4_000_000) % 7)
plt.show()
plt.plot([1, 2])
plt.show()
""")
    big, small = ex.results
    assert big.png and big.chart is None and "e2b/chart" not in big.raw
    assert isinstance(small.chart, LineChart)


def test_unsupported_content_is_an_unknown_chart(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
import numpy as np
fig, ax = plt.subplots()
ax.imshow(np.eye(4))
ax.set_title("identity")
plt.show()
""")
    r = only_figure(ex)
    # E2B sends {"type": "unknown", "title": ..., "elements": []} for axes it
    # cannot read (its own test: two circles); the PNG is there as usual.
    assert type(r.chart) is Chart
    assert r.chart.type is ChartType.UNKNOWN and r.chart.title == "identity"
    assert r.chart.elements == []
    assert r.chart.to_dict() == {"type": "unknown", "title": "identity", "elements": []}
    assert r.formats() == ["text", "png", "chart"]


def test_display_result_and_serialization(sbx, ctx):
    ex = run(sbx, ctx, """
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2], [3, float("nan")], label="gap")
display(fig)
plt.close(fig)
""")
    r = only_figure(ex)
    assert r.formats() == ["text", "png", "chart"]
    assert repr(r) == "Result(<Figure size 640x480 with 1 Axes>)"
    # NaN has no JSON form: None, as in e2b/data.
    assert r.chart.elements[0].points == [(1.0, 3.0), (2.0, None)]
    raw = r.chart.to_dict()
    assert raw == r.raw["e2b/chart"]
    assert list(raw) == ["type", "title", "elements", "x_label", "y_label", "x_unit", "y_unit",
                         "x_ticks", "x_tick_labels", "x_scale", "y_ticks", "y_tick_labels", "y_scale"]
    assert raw["elements"][0] == {"label": "gap", "points": [[1.0, 3.0], [2.0, None]]}
    assert json.loads(ex.to_json())["results"][0]["chart"] == raw

    # A Figure as the cell's value carries its chart too (E2B's formatter runs for any display).
    ex = run(sbx, ctx, "fig, ax = plt.subplots()\nax.scatter([1], [2])\nplt.close(fig)\nfig")
    assert ex.results[0].is_main_result and isinstance(ex.results[0].chart, ScatterChart)


# --- the SDK alone -----------------------------------------------------------

LINE = {"type": "line", "title": None, "elements": [{"label": "a", "points": [[1.0, 2.0]]}],
        "x_label": None, "y_label": None, "x_unit": None, "y_unit": None,
        "x_ticks": [1.0], "x_tick_labels": ["1"], "x_scale": "linear",
        "y_ticks": [2.0], "y_tick_labels": ["2"], "y_scale": "no-such-scale"}


def test_sdk_reads_charts_as_e2b_does(caplog):
    r = Result.from_bundle({"text/plain": "<Figure>", "e2b/chart": LINE}, is_main_result=False)
    assert isinstance(r.chart, LineChart) and r.chart.elements[0].points == [(1.0, 2.0)]
    assert r.chart.y_scale is ScaleType.UNKNOWN and r.extra == {}
    # An empty chart is no chart; a superchart drops its empty elements.
    assert Result(chart={}).chart is None and "chart" not in Result(chart={}).formats()
    sup = Result(chart={"type": "superchart", "title": "", "elements": [LINE, {}]}).chart
    assert [type(c) for c in sup.elements] == [LineChart]
    # A chart type this SDK does not know is logged, not raised (E2B's behaviour).
    with caplog.at_level(logging.ERROR, logger="cellvm.models"):
        assert Result(chart={"type": "radar", "title": None, "elements": []}).chart is None
    assert "cannot read the chart" in caplog.text
    assert ChartType("superchart") is ChartType.SUPERCHART and ChartType.BOX_AND_WHISKER == "box_and_whisker"
    assert [s.value for s in ScaleType] == ["linear", "datetime", "categorical", "log", "symlog", "logit",
                                            "function", "functionlog", "asinh", "unknown"]


# --- the extractor in this process (python-embed/cellvm_charts.py) ------------

@pytest.fixture(scope="module")
def charts():
    sys.path.insert(0, EMBED)
    try:
        import matplotlib
        matplotlib.use("agg")
        import cellvm_charts
        yield cellvm_charts
    finally:
        sys.path.remove(EMBED)


def _figures():
    """Figures of every kind the extractor reads, and tick formatters of several kinds."""
    import datetime
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np
    fig, axs = plt.subplots(3, 3)
    axs[0, 0].plot([0, 1e6], [-3, 3])
    axs[0, 1].semilogy([1, 2, 3], [1, 10, 1000])
    axs[0, 2].plot([datetime.datetime(2024, 1, 1), datetime.datetime(2024, 3, 1)], [1, 2])
    axs[1, 0].bar(["a", "b", "c"], [1, 2, 3])
    axs[1, 1].plot([1, 2], [3, 4])
    axs[1, 1].tick_params(labeltop=True, labelright=True)
    axs[1, 2].scatter(np.arange(3), np.arange(3))
    axs[1, 2].set_xticks(np.arange(3), ["zero", "one", "two"])
    axs[1, 2].yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, pos: pos))
    axs[2, 0].boxplot([[1, 2, 3, 9], [2, 3, 4]])  # a FixedFormatter holding the positions (numbers)
    axs[2, 1].pie([1, 2])
    axs[2, 2].boxplot([[1, 2, 3, 4, 5, 40], [2, 3, 4]], patch_artist=True)
    fig.canvas.draw()
    return fig, axs


def test_tick_labels_shortcut_matches_matplotlib(charts):
    """The extractor formats tick labels itself rather than through
    get_ticklabels() (a third of the cost); the texts must be the same."""
    import matplotlib.pyplot as plt
    fig, axs = _figures()
    try:
        for ax in axs.flat:
            for axis in (ax.xaxis, ax.yaxis):
                want = [t.get_text() for t in axis.get_ticklabels()]
                assert charts._labels(axis) == want
    finally:
        plt.close(fig)


def test_chart_holds_only_wire_types(charts):
    """The chart goes into the display bundle as it is: a numpy value in it
    would fail the cell's display."""
    import matplotlib.pyplot as plt
    fig, axs = _figures()
    try:
        chart = charts.figure_chart(fig)
        assert [c["type"] for c in chart["elements"]] == [
            "line", "line", "line", "bar", "line", "scatter", "line", "pie", "box_and_whisker"]
        leaves = []

        def walk(v):
            if isinstance(v, dict):
                assert all(type(k) is str for k in v)
                for x in v.values():
                    walk(x)
            elif type(v) in (list, tuple):
                for x in v:
                    walk(x)
            else:
                leaves.append(v)
        walk(chart)
        assert {type(v) for v in leaves} == {str, float, int, type(None)}
    finally:
        plt.close(fig)


def test_round8_is_e2b_dynamic_round(charts):
    """8 significant digits less the leading digit's exponent, half to even."""
    from decimal import Decimal
    cases = {123.456789: "123.457", 0.0012345678912345: "0.0012345678912", 85.0: "85.0",
             51.42857372760773: "51.42857", 1234567.5: "1.2E+6", 2.5e-9: "2.5E-9",
             99999.95: "1.000E+5", 0.0: "0.0", -7.123456789: "-7.1234568"}
    for value, want in cases.items():
        assert charts._round8(value) == Decimal(want), value
    assert charts._round8(Decimal("12.345665")) == Decimal("12.34566")  # a tie: to even


def test_extraction_of_a_1000_point_line(charts):
    """Every point is read; what it costs is bench/executor_costs.py's."""
    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots()
    x = np.linspace(0, 1, 1000)
    ax.plot(x, np.random.rand(1000))
    fig.canvas.draw()
    try:
        points = charts.figure_chart(fig)["elements"][0]["points"]
    finally:
        plt.close(fig)
    assert len(points) == 1000
    assert [p[0] for p in points] == sorted(p[0] for p in points)

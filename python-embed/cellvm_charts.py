"""Chart data of a matplotlib figure, as E2B's code interpreter sends it.

E2B's kernel adds an `e2b/chart` entry to the display data of every
matplotlib Figure it shows; its SDK turns that into `Result.chart`. This
module computes the same value from the Figure, for the executor to put in
the figure's bundle under the same key (docs/PROTOCOL.md section 4, EXECUTE).

What is extracted, and how, follows E2B's extractor (the `e2b_charts`
package of e2b-dev/code-interpreter), quirks included, so a program gets
the chart from cellvm that it gets from E2B:

- the kind of each Axes comes from its artists (texts aside): only lines is
  a line chart; only patches and lines a box plot (checked before grid lines
  are dropped, so a boxplot without patch_artist is a line chart); then,
  without grid lines (two points sharing an x or a y), only path
  collections is a scatter, only wedges a pie, only rectangles a bar chart;
  anything else is "unknown" (title only);
- several Axes make a "superchart" whose title is the figure's suptitle
  ("" when there is none); a figure without data has an empty chart ({});
- bar labels and box labels are the tick labels; bars of equal heights are
  taken as horizontal; pie angles and box values are rounded to 8 significant
  digits less the magnitude (E2B's dynamic_round); points and ticks are
  exact floats (ticks from numpy integers stay integers), dates ISO text.

Any error gives an empty chart ({}), as E2B's: its server sends it, its JS
SDK keeps it (`result.chart` is {}), its Python SDK (and cellvm's) reads it
as None. A chart too large for a message is dropped (kernel._send). One difference: NaN and infinities are sent as None; through
ipykernel's JSON they reach E2B's clients as the text "nan"/"inf".

Importing this module must stay cheap: numpy, matplotlib and decimal are
imported only when a figure is converted (they are loaded by then).
"""

import datetime
import re

__all__ = ["figure_chart"]

# A unit in an axis label: "Time (s)" or "Speed [m/s]".
_UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")


def figure_chart(fig):
    """The e2b/chart dict of a matplotlib Figure; {} when it has no data or
    extraction fails, as E2B's chart_figure_to_dict and its formatter's bare
    except (e2b_charts/main.py; the template's IPython startup script)."""
    try:
        return _figure(fig) or {}
    except Exception:
        return {}


def _figure(fig):
    axes = fig.get_axes()
    if not any(ax.has_data() for ax in axes):
        return None
    if len(axes) == 1:
        return _axes_chart(axes[0])
    get_suptitle = getattr(fig, "get_suptitle", None)  # matplotlib >= 3.8
    if get_suptitle is not None:
        title = get_suptitle()
    else:
        title = fig._suptitle.get_text() if fig._suptitle is not None else ""
    return {"type": "superchart", "title": title, "elements": [_axes_chart(ax) for ax in axes]}


def _axes_chart(ax):
    kind = _kind(ax)
    if kind == "line":
        return _line(ax)
    if kind == "scatter":
        return _scatter(ax)
    if kind == "bar":
        return _bar(ax)
    if kind == "pie":
        return _pie(ax)
    if kind == "box_and_whisker":
        return _box(ax)
    return _chart(ax, kind)


def _kind(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text

    artists = [a for a in ax._children if not isinstance(a, Text)]
    if all(isinstance(a, Line2D) for a in artists):
        return "line"
    if all(isinstance(a, (PathPatch, Line2D)) for a in artists):
        return "box_and_whisker"
    artists = [a for a in artists if not (isinstance(a, Line2D) and _is_grid_line(a))]
    for cls, kind in ((PathCollection, "scatter"), (Wedge, "pie"), (Rectangle, "bar")):
        if all(isinstance(a, cls) for a in artists):
            return kind
    return "unknown"


def _is_grid_line(line):
    """E2B's test for a grid line: two points, vertical or horizontal."""
    x = line.get_xdata()
    if len(x) != 2:
        return False
    y = line.get_ydata()
    if len(y) != 2:
        return False
    return bool(x[0] == x[1] or y[0] == y[1])


# ---------------------------------------------------------------- chart skeletons


def _chart(ax, kind):
    return {"type": kind, "title": ax.get_title() or None, "elements": []}


def _unit(label):
    if not label:
        return None
    m = _UNIT.search(label)
    return (m.group(1) or m.group(2)) if m else None


def _chart2d(ax, kind):
    chart = _chart(ax, kind)
    x_label = ax.get_xlabel() or None
    y_label = ax.get_ylabel() or None
    chart.update(x_label=x_label, y_label=y_label, x_unit=_unit(x_label), y_unit=_unit(y_label))
    return chart


def _swap_axes(chart):
    """Horizontal bars and boxes: the value axis is y, as for vertical ones."""
    chart["x_label"], chart["y_label"] = chart["y_label"], chart["x_label"]
    chart["x_unit"], chart["y_unit"] = chart["y_unit"], chart["x_unit"]


def _point_chart(ax, kind):
    chart = _chart2d(ax, kind)
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        ticks, labels, scale = _axis(axis)
        chart[name + "_ticks"] = ticks
        chart[name + "_tick_labels"] = labels
        chart[name + "_scale"] = scale
    return chart


def _is_date_axis(axis):
    from matplotlib import dates
    get = getattr(axis, "get_converter", None)  # matplotlib >= 3.10
    converter = get() if get is not None else axis.converter
    cls = getattr(dates, "_SwitchableDateConverter", None)
    return cls is not None and isinstance(converter, cls)


def _tick_labels(axis, locs):
    """What axis.get_ticklabels() returns the texts of, without its cost (it
    runs the major and minor locators again and updates every tick): the
    formatter's texts for the major ticks, those whose label1 (bottom/left)
    shows, then those whose label2 (top/right) shows."""
    # As Text.set_text stores them (a FixedFormatter may hold numbers).
    texts = ["" if s is None else str(s) for s in axis.major.formatter.format_ticks(locs)]
    ticks = axis.get_major_ticks(len(locs))
    return ([s for tick, s in zip(ticks, texts) if tick.label1.get_visible()]
            + [s for tick, s in zip(ticks, texts) if tick.label2.get_visible()])


def _labels(axis):
    """ax.get_xticklabels() (or y) as texts."""
    return _tick_labels(axis, axis.get_majorticklocs())


def _axis(axis):
    """(ticks, tick labels, scale) of an x or y axis."""
    locs = axis.get_majorticklocs()  # ax.get_xticks()
    labels = _tick_labels(axis, locs)
    if _is_date_axis(axis):
        from matplotlib.dates import num2date
        return [num2date(t).isoformat() for t in locs], labels, "datetime"
    # E2B looks at the first tick (an axis without ticks has no chart): Python
    # numbers become floats; others (numpy integers from set_xticks([0, 1]))
    # are sent as they are, so an integer stays one through JSON.
    numeric = isinstance(locs[0], (int, float))
    ticks = [_num(t) for t in locs] if numeric else [_json_number(t) for t in locs]
    scale = str(axis.get_scale())
    if scale != "linear":
        return ticks, labels, scale
    # Categorical: ticks 0..n-1 (Python numbers) whose labels are not those numbers.
    for i, (tick, label) in enumerate(zip(ticks if numeric else list(locs), labels)):
        if not (isinstance(tick, (int, float)) and tick == i and str(i) != label):
            return ticks, labels, "linear"
    return ticks, labels, "categorical"


# ---------------------------------------------------------------- values


def _num(value):
    """A number as a float; NaN and infinities as None."""
    f = float(value)
    return f if f - f == 0 else None


def _json_number(value):
    """A value as JSON carries it out of ipykernel: an integer as int, a number as float."""
    import numbers
    if isinstance(value, numbers.Integral):
        return int(value)
    return _num(value)


def _floats(arr):
    """A 1-D numeric array as a list of floats (None for NaN, inf, masked)."""
    import numpy as np
    if isinstance(arr, np.ma.MaskedArray):
        arr = np.ma.filled(arr.astype(float), np.nan)
    out = arr.astype(float, copy=False)
    if np.isfinite(out).all():
        return out.tolist()
    return [v if v - v == 0 else None for v in out.tolist()]


def _coord(value):
    """One x or y of a line: dates as ISO text, text as is, else a number."""
    import numpy as np
    if isinstance(value, str):
        return str(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return str(value.astype("datetime64[s]"))
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return _num(value)


def _coords(data):
    import numpy as np
    if isinstance(data, np.ndarray) and data.ndim == 1:
        kind = data.dtype.kind
        if kind in "biuf":
            return _floats(data)
        if kind == "M" and not isinstance(data, np.ma.MaskedArray):
            return data.astype("datetime64[s]").astype(str).tolist()
    return [_coord(v) for v in data]


def _label(artist):
    label = artist.get_label()
    if not isinstance(label, str):
        raise TypeError("label is not text")
    return label


# ---------------------------------------------------------------- chart kinds


def _line(ax):
    chart = _point_chart(ax, "line")
    for line in ax.get_lines():
        if _is_grid_line(line):
            continue
        label = _label(line)
        if label.startswith("_child"):  # matplotlib's name for an unlabelled artist
            label = f"Line {int(label[6:])}"
        points = list(zip(_coords(line.get_xdata()), _coords(line.get_ydata())))
        chart["elements"].append({"label": label, "points": points})
    return chart


def _scatter(ax):
    import numpy as np
    chart = _point_chart(ax, "scatter")
    for collection in ax.collections:
        offsets = collection.get_offsets()
        if isinstance(offsets, np.ma.MaskedArray):
            offsets = np.ma.filled(offsets.astype(float), np.nan)
        offsets = np.asarray(offsets)
        points = list(zip(_floats(offsets[:, 0]), _floats(offsets[:, 1]))) if len(offsets) else []
        chart["elements"].append({"label": _label(collection), "points": points})
    return chart


def _bar(ax):
    chart = _chart2d(ax, "bar")
    for container in ax.containers:
        group = _label(container)
        if group.startswith("_container"):
            group = f"Group {int(group[10:])}"
        heights = [rect.get_height() for rect in container]
        if all(h == heights[0] for h in heights):
            _swap_axes(chart)
            labels = _labels(ax.yaxis)
            values = [rect.get_width() for rect in container]
        else:
            labels = _labels(ax.xaxis)
            values = heights
        for label, value in zip(labels, values):
            chart["elements"].append({"label": label, "group": group, "value": _num(value)})
    return chart


# E2B's decimal arithmetic runs in Python's default context: 28 digits, half-even.
_ctx = None


def _context():
    global _ctx
    if _ctx is None:
        import decimal
        _ctx = decimal.Context(prec=28, rounding=decimal.ROUND_HALF_EVEN)
    return _ctx


def _round8(value):
    """E2B's dynamic_round: keep 8 - (the exponent of the leading digit)
    significant digits, at least one, rounding half to even. Returns a Decimal."""
    import decimal
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(repr(float(value)))
    digits = max(1, 8 - d.adjusted())
    return decimal.Context(prec=digits, rounding=decimal.ROUND_HALF_EVEN).plus(d)


def _pie(ax):
    import decimal
    ctx = _context()
    chart = _chart(ax, "pie")
    for wedge in ax.patches:
        sweep = ctx.subtract(decimal.Decimal(float(wedge.theta2)), decimal.Decimal(float(wedge.theta1)))
        chart["elements"].append({
            "label": _label(wedge),
            "angle": _num(ctx.abs(_round8(sweep))),
            "radius": _num(wedge.r),
        })
    return chart


def _box(ax):
    ctx = _context()
    chart = _chart2d(ax, "box_and_whisker")
    boxes = []
    for label, patch in zip(_labels(ax.xaxis), ax.patches):
        vertices = patch.get_path().vertices
        xs = [_round8(v) for v in vertices[:, 0]]
        ys = [_round8(v) for v in vertices[:, 1]]
        x, y = min(xs), min(ys)
        boxes.append({"x": x, "y": y, "w": ctx.subtract(max(xs), x), "h": ctx.subtract(max(ys), y),
                      "label": label, "outliers": []})
    # Boxes of one height are horizontal boxes: turn them upright.
    flip = all(b["h"] == boxes[0]["h"] for b in boxes)
    if flip:
        _swap_axes(chart)
        for b in boxes:
            b["x"], b["y"], b["w"], b["h"] = b["y"], b["x"], b["h"], b["w"]

    def box_at(x0, x1):
        for b in boxes:
            if b["x"] <= x0 <= x1 <= ctx.add(b["x"], b["w"]):
                return b
        return None

    for line in ax.lines:
        xs = [_round8(v) for v in line.get_xdata()]
        ys = [_round8(v) for v in line.get_ydata()]
        if flip:
            xs, ys = ys, xs
        if len(xs) == 1:  # a single flier
            b = box_at(xs[0], xs[0])
            if b is None:
                continue
            b["outliers"].append(ys[0])
        if len(ys) != 2:
            continue
        b = box_at(xs[0], xs[1])
        if b is None:
            continue
        top = ctx.add(b["y"], b["h"])
        if ys[0] == ys[1] and b["y"] <= ys[0] <= top:
            b["median"] = ys[0]
            continue
        low, high = min(ys), max(ys)
        if high == b["y"]:
            b["min"] = low
        elif low == top:
            b["max"] = high
    for b in boxes:
        chart["elements"].append({
            "label": b["label"],
            "min": _num(b["min"]),
            "first_quartile": _num(b["y"]),
            "median": _num(b["median"]),
            "third_quartile": _num(ctx.add(b["y"], b["h"])),
            "max": _num(b["max"]),
            "outliers": [_num(v) for v in b["outliers"]],
        })
    return chart

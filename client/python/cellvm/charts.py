"""Chart data of a matplotlib figure: `Result.chart`, as in e2b_code_interpreter.charts.

The executor sends a figure's chart under the `e2b/chart` key of its display
data (docs/PROTOCOL.md, EXECUTE); Result turns that dict into one of these
classes, as E2B's SDK does: the same class names, attributes and enum values,
`to_dict()` returning the dict as received. Import them from `cellvm.charts`
(E2B's package does not export them at its top level either).

    chart = sbx.run_code(code).results[0].chart
    if isinstance(chart, LineChart):
        for line in chart.elements:
            print(line.label, line.points[:3])
"""

import enum
from typing import Any, List, Optional, Tuple, Union


class ChartType(str, enum.Enum):
    """Chart types."""

    LINE = "line"
    SCATTER = "scatter"
    BAR = "bar"
    PIE = "pie"
    BOX_AND_WHISKER = "box_and_whisker"
    SUPERCHART = "superchart"
    UNKNOWN = "unknown"


class ScaleType(str, enum.Enum):
    """Scale of an axis: matplotlib's scale name, or datetime / categorical."""

    LINEAR = "linear"
    DATETIME = "datetime"
    CATEGORICAL = "categorical"
    LOG = "log"
    SYMLOG = "symlog"
    LOGIT = "logit"
    FUNCTION = "function"
    FUNCTIONLOG = "functionlog"
    ASINH = "asinh"
    UNKNOWN = "unknown"


def _scale(value) -> ScaleType:
    try:
        return ScaleType(value)
    except ValueError:
        return ScaleType.UNKNOWN


class Chart:
    """Data extracted from a chart, for interactive charts or custom visualizations."""

    type: ChartType
    title: str
    elements: List[Any]

    def __init__(self, **kwargs):
        self._raw_data = kwargs
        self.type = ChartType(kwargs["type"] or ChartType.UNKNOWN)
        self.title = kwargs["title"]
        self.elements = kwargs["elements"]

    def to_dict(self) -> dict:
        """The chart as it came over the wire."""
        return self._raw_data


class Chart2D(Chart):
    """A chart with x and y axes; units are taken from labels like "Time (s)" or "Speed [m/s]"."""

    x_label: Optional[str]
    y_label: Optional[str]
    x_unit: Optional[str]
    y_unit: Optional[str]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.x_label = kwargs["x_label"]
        self.y_label = kwargs["y_label"]
        self.x_unit = kwargs["x_unit"]
        self.y_unit = kwargs["y_unit"]


class PointData:
    """One line or one scatter series: its label and (x, y) points."""

    label: str
    points: List[Tuple[Union[str, float], Union[str, float]]]

    def __init__(self, **kwargs):
        self.label = kwargs["label"]
        self.points = [(x, y) for x, y in kwargs["points"]]


class PointChart(Chart2D):
    """A line or scatter chart: axes with ticks, tick labels and scales."""

    x_ticks: List[Union[str, float]]
    x_tick_labels: List[str]
    x_scale: ScaleType

    y_ticks: List[Union[str, float]]
    y_tick_labels: List[str]
    y_scale: ScaleType

    elements: List[PointData]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for axis in ("x", "y"):
            setattr(self, axis + "_scale", _scale(kwargs.get(axis + "_scale")))
            setattr(self, axis + "_ticks", kwargs[axis + "_ticks"])
            setattr(self, axis + "_tick_labels", kwargs[axis + "_tick_labels"])
        self.elements = [PointData(**e) for e in kwargs["elements"]]


class LineChart(PointChart):
    type = ChartType.LINE


class ScatterChart(PointChart):
    type = ChartType.SCATTER


class BarData:
    """One bar: its tick label, its group (the bars' label, or "Group N") and value."""

    label: str
    group: str
    value: str

    def __init__(self, **kwargs):
        self.label = kwargs["label"]
        self.value = kwargs["value"]
        self.group = kwargs["group"]


class BarChart(Chart2D):
    type = ChartType.BAR

    elements: List[BarData]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.elements = [BarData(**e) for e in kwargs["elements"]]


class PieData:
    """One wedge: its label, angle in degrees and radius."""

    label: str
    angle: float
    radius: float

    def __init__(self, **kwargs):
        self.label = kwargs["label"]
        self.angle = kwargs["angle"]
        self.radius = kwargs["radius"]


class PieChart(Chart):
    type = ChartType.PIE

    elements: List[PieData]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.elements = [PieData(**e) for e in kwargs["elements"]]


class BoxAndWhiskerData:
    """One box: whisker ends (min, max), quartiles, median and the outliers."""

    label: str
    min: float
    first_quartile: float
    median: float
    third_quartile: float
    max: float
    outliers: List[float]

    def __init__(self, **kwargs):
        self.label = kwargs["label"]
        self.min = kwargs["min"]
        self.first_quartile = kwargs["first_quartile"]
        self.median = kwargs["median"]
        self.third_quartile = kwargs["third_quartile"]
        self.max = kwargs["max"]
        self.outliers = kwargs.get("outliers") or []


class BoxAndWhiskerChart(Chart2D):
    type = ChartType.BOX_AND_WHISKER

    elements: List[BoxAndWhiskerData]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.elements = [BoxAndWhiskerData(**e) for e in kwargs["elements"]]


class SuperChart(Chart):
    """A figure of several axes: its suptitle, and one chart per axes."""

    type = ChartType.SUPERCHART

    elements: List[Chart]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        charts = (_deserialize_chart(e) for e in kwargs["elements"])
        self.elements = [c for c in charts if c is not None]


ChartTypes = Union[Chart, LineChart, ScatterChart, BarChart, PieChart, BoxAndWhiskerChart, SuperChart]

_CLASSES = {
    ChartType.LINE: LineChart,
    ChartType.SCATTER: ScatterChart,
    ChartType.BAR: BarChart,
    ChartType.PIE: PieChart,
    ChartType.BOX_AND_WHISKER: BoxAndWhiskerChart,
    ChartType.SUPERCHART: SuperChart,
}


def _deserialize_chart(data: Optional[dict]) -> Optional[ChartTypes]:
    """The chart object for a wire dict; None for an empty one (no chart)."""
    if not data:
        return None
    return _CLASSES.get(data["type"], Chart)(**data)

"""cellvm_pretty.pretty must equal IPython 8.5's text/plain, byte for byte.

The oracle is IPython.core.formatters.PlainTextFormatter (what ipykernel uses
for execute results), fed the very same object instances so that addresses in
`<... at 0x...>` agree.  Other widths and sequence limits are checked against
IPython.lib.pretty.pretty.
"""

import array
import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import os
import pathlib
import random
import re
import subprocess
import sys
import types
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMBED = os.path.join(ROOT, "python-embed")
sys.path.insert(0, EMBED)

import cellvm_pretty  # noqa: E402

try:
    from IPython.core.formatters import PlainTextFormatter
    from IPython.lib import pretty as ipy_pretty
except ImportError:  # pragma: no cover - IPython is a Debian package here
    PlainTextFormatter = None
    ipy_pretty = None

try:
    import numpy as np
    import pandas as pd
except ImportError:  # pragma: no cover
    np = pd = None

needs_ipython = pytest.mark.skipif(PlainTextFormatter is None, reason="IPython (the oracle) is not importable")
needs_numpy = pytest.mark.skipif(np is None, reason="numpy/pandas not importable")

# One formatter for the whole module, as a kernel keeps one for its lifetime.
FORMATTER = PlainTextFormatter() if PlainTextFormatter is not None else None


def oracle(obj):
    return FORMATTER(obj)


def check(obj):
    expected = oracle(obj)
    assert expected is not None, "IPython failed to format the case itself"
    assert cellvm_pretty.pretty(obj) == expected


# ---------------------------------------------------------------------------
# Objects used by the cases


def plain_function(x, y=2, *args, z, **kwargs):
    return x


def annotated(a: int, b: "list[str]" = None) -> dict:
    return {}


def outer():
    def inner(q):
        return q

    return inner


class Plain:
    pass


class WithRepr:
    def __repr__(self):
        return "WithRepr<1>"


class MultiLineRepr:
    def __init__(self, lines):
        self.lines = lines

    def __repr__(self):
        return "\n".join("row %d: %s" % (i, "x" * n) for i, n in enumerate(self.lines))


class EmptyRepr:
    def __repr__(self):
        return ""


class TrailingNewlineRepr:
    def __repr__(self):
        return "first\nsecond\n"


class Point:
    """Third-party style _repr_pretty_ using groups and breakables."""

    def __init__(self, *coords):
        self.coords = coords

    def _repr_pretty_(self, p, cycle):
        if cycle:
            p.text("Point(...)")
            return
        with p.group(6, "Point(", ")"):
            for i, c in enumerate(self.coords):
                if i:
                    p.text(",")
                    p.breakable()
                p.pretty(c)


class Tree:
    """_repr_pretty_ exercising indent(), break_(), begin/end_group and sep."""

    def __init__(self, name, children=()):
        self.name = name
        self.children = list(children)

    def _repr_pretty_(self, p, cycle):
        p.text("Tree " + self.name)
        if cycle:
            p.text(" <cycle>")
            return
        with p.indent(4):
            for child in self.children:
                p.break_()
                p.pretty(child)
        p.begin_group(2, "[")
        for i in range(3):
            if i:
                p.breakable(sep=" | ")
            p.text("leaf%d-%s" % (i, self.name * 3))
        p.end_group(2, "]")


class EnumeratingList:
    """Uses p._enumerate, which some libraries call, to honour the limit."""

    def __init__(self, items):
        self.items = items

    def _repr_pretty_(self, p, cycle):
        with p.group(4, "EL<", ">"):
            for i, x in p._enumerate(self.items):
                if i:
                    p.text(";")
                    p.breakable()
                p.pretty(x)


class FlushingPretty:
    """Calls p.flush() itself, after which IPython miscounts the column."""

    def _repr_pretty_(self, p, cycle):
        with p.group(1, "<", ">"):
            p.text("head")
            p.breakable()
            p.text("x" * 10)
            p.flush()
            p.text(",")
            p.breakable()
            with p.group(1, "[", "]"):
                for i in range(8):
                    if i:
                        p.text(",")
                        p.breakable()
                    p.text("item%d" % i)


class PrettyBase:
    def _repr_pretty_(self, p, cycle):
        p.text("PrettyBase!")


class PrettyChildWithRepr(PrettyBase):
    def __repr__(self):
        return "child repr wins"


class PrettyChild(PrettyBase):
    pass


class PrettyList(list):
    def _repr_pretty_(self, p, cycle):
        p.text("PrettyList of %d" % len(self))


class PosingAsInt:
    """__class__ claims int: IPython dispatches on what __class__ says."""

    __class__ = property(lambda self: int)


class RaisingClassAttr:
    @property
    def __class__(self):
        raise RuntimeError("no class for you")


class NotCallablePretty:
    _repr_pretty_ = "not a method"


class GetattrEverything:
    """__getattr__ answers anything; IPython only trusts the class __dict__."""

    def __getattr__(self, name):
        return lambda *a, **k: None


class Meta(type):
    def __repr__(cls):
        return "<Meta class %s>" % cls.__name__


class WithMeta(metaclass=Meta):
    pass


class PlainMeta(type):
    pass


class WithPlainMeta(metaclass=PlainMeta):
    pass


class Color(enum.Enum):
    RED = 1
    GREEN = "g"


class Perm(enum.IntFlag):
    R = 4
    W = 2
    X = 1


class Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass
class Record:
    name: str
    values: list
    nested: object = None


@dataclasses.dataclass(repr=False)
class NoReprRecord:
    x: int = 0


PointNT = collections.namedtuple("PointNT", "x y")


class MyList(list):
    pass


class MyTuple(tuple):
    pass


class MyDict(dict):
    pass


class MySet(set):
    pass


class MyFrozen(frozenset):
    pass


class MyStr(str):
    pass


class MyInt(int):
    def __repr__(self):
        return "MyInt(%d)" % self


class MyFloat(float):
    pass


class MyCounter(collections.Counter):
    pass


class MyOrdered(collections.OrderedDict):
    pass


class MyDeque(collections.deque):
    pass


class MyDefault(collections.defaultdict):
    pass


class MyError(Exception):
    pass


class ReprError(Exception):
    def __repr__(self):
        return "ReprError!"


class Base:
    def who(self):
        return super()


class Derived(Base):
    def who(self):
        return super()


class Unorderable:
    def __init__(self, n):
        self.n = n

    def __repr__(self):
        return "U%d" % self.n

    def __hash__(self):
        return self.n


def cyclic_list():
    a = [1, 2]
    a.append(a)
    return a


def cyclic_dict():
    d = {"k": 1}
    d["self"] = d
    d["list"] = [d, {"inner": d}]
    return d


def cyclic_mixed():
    a = []
    t = (a, "x")
    a.append(t)
    a.append(a)
    return t


def cyclic_collections():
    dd = collections.defaultdict(list)
    dd["me"] = dd
    od = collections.OrderedDict()
    od["me"] = od
    dq = collections.deque([1])
    dq.append(dq)
    c = collections.Counter()
    c["x"] = 1
    ul = collections.UserList([1])
    ul.append(ul)
    ns = types.SimpleNamespace(a=1)
    ns.me = ns
    return [dd, od, dq, ul, ns, c]


def cyclic_pretty():
    p = Point(1)
    p.coords = (p, 2)
    t = Tree("r")
    t.children.append(t)
    return [p, t]


def generator():
    yield 1


LONG = "a long string with spaces, 'quotes' and \"double quotes\" " * 3

SCALARS = [
    0,
    -1,
    2**64,
    -(10**80),
    True,
    False,
    None,
    Ellipsis,
    NotImplemented,
    0.1,
    -0.0,
    1e300,
    1e-300,
    float("inf"),
    float("nan"),
    3.141592653589793,
    1 + 2j,
    "",
    "plain",
    "it's",
    'say "hi"',
    "both ' and \"",
    "tab\tnew\nline\r\x00\x7f",
    "unicode: é ß 你好 🙂 \u200b \u2028 \x85",
    "back\\slash",
    LONG,
    b"",
    b"bytes \x00\xff 'q' \"d\"",
    bytearray(b"ba"),
    memoryview(b"mv"),
    MyStr("sub"),
    MyInt(5),
    MyFloat(2.5),
    decimal.Decimal("1.10"),
    fractions.Fraction(1, 3),
    range(10),
    range(0, 100, 7),
    slice(1, None, 2),
    datetime.datetime(2024, 2, 29, 12, 30, 1, 5),
    datetime.date(2024, 1, 1),
    datetime.time(1, 2),
    datetime.timedelta(days=1, seconds=5),
    datetime.timezone.utc,
    pathlib.PurePosixPath("/tmp/x"),
    uuid.UUID(int=42),
    array.array("i", [1, 2]),
]

CALLABLES = [
    plain_function,
    annotated,
    outer(),
    outer,
    lambda: None,
    lambda a, *b, **c: a,
    len,
    print,
    getattr,
    sorted,
    [].append,
    {}.get,
    "x".join,
    str.join,
    dict.fromkeys,
    object.__init__,
    Plain().__init__,
    Base().who,
    Base.who,
    functools.partial(plain_function, 1),
    staticmethod(len),
    classmethod(len),
    property(lambda s: 1),
    generator,
    generator(),
    functools.reduce,
    os.getcwd,
    re.compile,
]

TYPES = [
    int,
    type,
    object,
    type(None),
    Plain,
    Point,
    Tree.__init__,
    WithMeta,
    WithPlainMeta,
    Meta,
    Color,
    Perm,
    collections.OrderedDict,
    collections.abc.Mapping,
    datetime.datetime,
    ValueError,
    MyError,
    enum.Enum,
    types.SimpleNamespace,
    re.Pattern,
]

INSTANCES = [
    Plain(),
    WithRepr(),
    MultiLineRepr([3, 5, 2]),
    EmptyRepr(),
    TrailingNewlineRepr(),
    Point(1, 2.5, "three"),
    Point(*range(40)),
    Tree("root", [Tree("a", [Tree("aa")]), Tree("b")]),
    EnumeratingList(list(range(5))),
    FlushingPretty(),
    PrettyChildWithRepr(),
    PrettyChild(),
    PrettyList([1, 2]),
    [PosingAsInt(), RaisingClassAttr()],
    [FlushingPretty(), 1],
    NotCallablePretty(),
    GetattrEverything(),
    Color.RED,
    Color.GREEN,
    Perm.R | Perm.W,
    Perm(0),
    Level.LOW,
    Record("r", [1, 2, 3], nested=Record("inner", list(range(30)))),
    NoReprRecord(),
    PointNT(1, 2),
    MyList([1, 2]),
    MyList(),
    MyTuple((1,)),
    MyDict(a=1),
    MySet({3, 1}),
    MySet(),
    MyFrozen(),
    MyFrozen({"b", "a"}),
    MyCounter("abca"),
    MyOrdered(x=1),
    MyDeque([1, 2], 5),
    MyDefault(int, {"a": 1}),
    Derived().who(),
    Base().who(),
    super(Derived, Derived),
    ValueError("bad value"),
    ValueError(),
    KeyError("key"),
    OSError(2, "No such file"),
    MyError("custom", 1, [2]),
    ReprError("x"),
    StopIteration(5),
    SyntaxError("invalid", ("f.py", 1, 2, "x y")),
    KeyboardInterrupt(),
    ValueError("long " * 30, list(range(20))),
    re.compile(""),
    re.compile(r"\d+\s*(?P<name>x)"),
    re.compile(b"bytes\\d", re.I),
    re.compile("a|b", re.I | re.M | re.S | re.X),
    re.compile("a", re.A),
    re.match("a", "a"),
    types.SimpleNamespace(),
    types.SimpleNamespace(a=1, b=[1, 2], c=types.SimpleNamespace(d="e")),
    types.SimpleNamespace(**{"k%d" % i: i * 1000 for i in range(20)}),
    collections.deque(),
    collections.deque(range(30)),
    collections.deque([1], maxlen=10),
    collections.Counter(),
    collections.Counter("mississippi"),
    collections.OrderedDict(),
    collections.OrderedDict((str(i), i) for i in range(25)),
    collections.defaultdict(list),
    collections.defaultdict(None, {"x": 1}),
    collections.defaultdict(lambda: 0, {"x": 1}),
    collections.UserList(),
    collections.UserList(range(50)),
    collections.UserDict(a=1),
    collections.UserString("us"),
    collections.ChainMap({"a": 1}, {"b": 2}),
    {}.keys(),
    {"a": 1}.values(),
    {"a": 1}.items(),
    types.MappingProxyType({"a": 1, "b": list(range(40))}),
    Plain.__dict__,
    os.environ,
    os,
    sys,
    re,
    iter([1]),
    zip([1], [2]),
    map(str, [1]),
    enumerate("ab"),
    reversed([1]),
    object(),
    NotImplementedError,
    cyclic_list(),
    cyclic_dict(),
    cyclic_mixed(),
    cyclic_collections(),
    cyclic_pretty(),
    set(),
    frozenset(),
    {3, 1, 2},
    {"b", "a", "c"},
    {1, "a", (2,), None},
    {Unorderable(3), Unorderable(1)},
    frozenset({2.5, 1}),
    frozenset(range(30)),
    set(range(999)),
    set(range(1000)),
    set(range(1001)),
    (),
    (1,),
    ((),),
    ([],),
    ("x" * 90,),
    [],
    [[]],
    [LONG, LONG],
    list(range(999)),
    list(range(1000)),
    list(range(1001)),
    tuple(range(1001)),
    {i: i for i in range(1001)},
    {"z": 1, "a": 2, 3: "m"},
    {(1, 2): frozenset({1}), None: [], "k" * 70: "v" * 70},
    {"key%02d" % i: ["value"] * (i % 7) for i in range(30)},
    [{"id": i, "name": "item %d" % i, "tags": ["t"] * (i % 4)} for i in range(12)],
    [[[[[[[[[[["deep"] * 3] * 2]]]]]]]]],
    [[i] * 30 for i in range(5)],
    [("a" * i, "b" * (60 - i)) for i in range(0, 60, 7)],
    [MultiLineRepr([2, 90, 1]), MultiLineRepr([1])],
    {"multi": MultiLineRepr([4, 4]), "plain": Plain()},
    [Plain(), Plain(), WithRepr(), Point(1), Tree("t")] * 3,
    [len, plain_function, Plain, int, Color.RED, re.compile("x")] * 2,
    [ValueError("e%d" % i) for i in range(10)],
    [collections.Counter("ab"), collections.deque([1]), collections.OrderedDict(a=1)] * 4,
    [1.5, 2.25, float("nan"), MyFloat(1)] * 15,
    [datetime.datetime(2020, 1, i) for i in range(1, 8)],
    [b"x" * 20] * 6,
    # A key and its value are sibling groups with no separator between them:
    # IPython's group queue then drops the value's group and never breaks it.
    {("a" * 20, "b" * 20): ("c" * 50, "d" * 30, "e" * 30)},
    {("k" * 30, 1): [["v" * 30, 2], ["w" * 40, 3]]},
    [{(i, "k" * 35): ("x" * 35, i)} for i in range(3)],
    {("k" * 30,): {("x" * 30, "y" * 30): ("z" * 40, 1)}},
]

ALL_CASES = SCALARS + CALLABLES + TYPES + INSTANCES


def case_id(obj):
    text = repr(type(obj).__name__)
    return text[:40]


@needs_ipython
@pytest.mark.parametrize("obj", ALL_CASES, ids=[case_id(o) for o in ALL_CASES])
def test_matches_ipython(obj):
    check(obj)


@needs_ipython
@needs_numpy
def test_numpy_and_pandas_match_ipython():
    cases = [
        np.arange(5),
        np.arange(2000).reshape(40, 50),
        np.zeros((3, 4, 2)),
        np.array(["a", "bc"]),
        np.array([1.5, np.nan]),
        np.float64(1.25),
        np.float32(0.1),
        np.int64(7),
        np.bool_(True),
        np.dtype("float32"),
        np.dtype([("a", "i4"), ("b", "f8")]),
        np.ma.masked_array([1, 2], mask=[0, 1]),
        pd.DataFrame({"a": range(5), "b": list("abcde")}),
        pd.DataFrame(np.arange(600).reshape(100, 6)),
        pd.Series([1.5, 2.5], name="s"),
        pd.Series(range(200)),
        pd.Index([1, 2]),
        pd.Timestamp("2024-01-01"),
        pd.Timedelta("1d"),
        pd.NaT,
        pd.Categorical(["a", "b"]),
        [np.arange(3), np.float64(2.0), np.int32(1)],
        {"frame": pd.DataFrame({"x": [1]}), "arr": np.eye(3)},
        [np.float64(i / 7) for i in range(20)],
    ]
    for obj in cases:
        check(obj)


def random_leaf(rng):
    kind = rng.randrange(12)
    if kind == 0:
        return rng.randrange(-(10 ** rng.randrange(1, 25)), 10 ** rng.randrange(1, 25))
    if kind == 1:
        return rng.random() * 10 ** rng.randrange(-5, 12)
    if kind == 2:
        alphabet = "abc xyz'\"\\\n\té🙂你"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 30)))
    if kind == 4:
        return rng.choice([None, True, False, Ellipsis])
    if kind == 5:
        return rng.choice([Plain(), WithRepr(), Color.RED, len, plain_function, Plain, int])
    if kind == 6:
        return MultiLineRepr([rng.randrange(1, 50) for _ in range(rng.randrange(1, 4))])
    return "w" * rng.randrange(0, 30)


def random_value(rng, depth):
    if depth <= 0 or rng.random() < 0.25:
        return random_leaf(rng)
    # Wide nodes only near the leaves, to keep the trees (and the test) small.
    width = rng.choice([0, 1, 2, 3, 5, 8] + ([13, 30] if depth <= 2 else []))
    items = [random_value(rng, depth - 1) for _ in range(width)]
    kind = rng.randrange(13)
    if kind in (0, 1, 2):
        return items
    if kind in (3, 4):
        return tuple(items)
    if kind in (5, 6):
        keys = [random_leaf(rng) for _ in items]
        keys = [k if k.__hash__ is not None else str(k) for k in keys]
        return dict(zip(keys, items))
    if kind == 7:
        hashable = [x for x in items if isinstance(x, (int, float, str, bytes, tuple, type(None)))]
        try:
            return set(hashable)
        except TypeError:
            return frozenset(map(repr, hashable))
    if kind == 8:
        return collections.deque(items, maxlen=rng.choice([None, 40]))
    if kind == 9:
        return collections.OrderedDict((str(i), x) for i, x in enumerate(items))
    if kind == 10:
        return Point(*items)
    if kind == 11:
        return types.SimpleNamespace(**{"f%d" % i: x for i, x in enumerate(items)})
    return collections.defaultdict(list, {i: x for i, x in enumerate(items)})


RANDOM_VALUES = [random_value(random.Random(seed), depth=1 + seed % 5) for seed in range(400)]


@needs_ipython
@pytest.mark.parametrize("seed", range(len(RANDOM_VALUES)))
def test_random_nested_structures_match_ipython(seed):
    check(RANDOM_VALUES[seed])


@needs_ipython
@pytest.mark.parametrize("width", [0, 1, 10, 30, 50, 100, 200])
def test_other_widths_match_ipython(width):
    for obj in RANDOM_VALUES[::7] + INSTANCES[::3]:
        expected = ipy_pretty.pretty(obj, max_width=width)
        assert cellvm_pretty.pretty(obj, max_width=width) == expected


@needs_ipython
@pytest.mark.parametrize("limit", [0, 1, 2, 5])
def test_sequence_limits_match_ipython(limit):
    cases = [
        list(range(10)),
        tuple(range(10)),
        {i: str(i) for i in range(10)},
        set(range(3, 13)),
        collections.deque(range(10)),
        EnumeratingList(list(range(10))),
        [list(range(8))] * 8,
    ]
    for obj in cases + RANDOM_VALUES[::11]:
        expected = ipy_pretty.pretty(obj, max_seq_length=limit)
        assert cellvm_pretty.pretty(obj, max_seq_length=limit) == expected


@needs_ipython
def test_verbose_default_printer_matches_ipython():
    obj = Plain()
    obj.alpha = list(range(40))
    obj.beta = "b"
    obj._hidden = 1
    assert cellvm_pretty.pretty(obj, verbose=True) == ipy_pretty.pretty(obj, verbose=True)


@needs_ipython
def test_failing_repr_raises_like_ipython():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no repr")

    for obj in (Broken(), [1, Broken()], {"k": Broken()}):
        with pytest.raises(RuntimeError, match="no repr"):
            ipy_pretty.pretty(obj)
        with pytest.raises(RuntimeError, match="no repr"):
            cellvm_pretty.pretty(obj)
    # Beyond sys.get_int_max_str_digits() repr itself refuses.
    huge = 10**5000
    with pytest.raises(ValueError):
        ipy_pretty.pretty(huge)
    with pytest.raises(ValueError):
        cellvm_pretty.pretty(huge)


def test_expected_text_for_common_values():
    """Spot checks that hold without IPython, so the module is pinned down
    even where the oracle is missing."""
    assert cellvm_pretty.pretty(2) == "2"
    assert cellvm_pretty.pretty((1,)) == "(1,)"
    assert cellvm_pretty.pretty({3, 1, 2}) == "{1, 2, 3}"
    assert cellvm_pretty.pretty({"b": 1, "a": 2}) == "{'b': 1, 'a': 2}"
    assert cellvm_pretty.pretty(len) == "<function len(obj, /)>"
    assert cellvm_pretty.pretty(ValueError("x")) == "ValueError('x')"
    assert cellvm_pretty.pretty(cyclic_list()) == "[1, 2, [...]]"
    assert cellvm_pretty.pretty(collections.Counter()) == "Counter()"
    obj = Plain()
    assert cellvm_pretty.pretty(obj) == "<%s.Plain at 0x%x>" % (__name__, id(obj))
    assert cellvm_pretty.pretty(list(range(1001))).endswith(" 999,\n ...]")
    broken = cellvm_pretty.pretty(list(range(40)))
    assert broken.startswith("[0,\n 1,\n")
    assert all(len(line) <= 79 for line in cellvm_pretty.pretty([list(range(30))] * 5).split("\n"))


def run_isolated(code):
    """Run code in a fresh interpreter that cannot import IPython."""
    prelude = "import sys; sys.modules['IPython'] = None; sys.path.insert(0, %r)\n" % EMBED
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=60, check=True
    ).stdout


def test_works_without_ipython():
    out = run_isolated(
        "import cellvm_pretty, collections\n"
        "print(cellvm_pretty.pretty([collections.OrderedDict(a=1), {2, 1}, list(range(30)), print]))\n"
    )
    assert out == (
        "[OrderedDict([('a', 1)]),\n {1, 2},\n"
        " [0,\n  1,\n  2,\n  3,\n  4,\n  5,\n  6,\n  7,\n  8,\n  9,\n  10,\n"
        "  11,\n  12,\n  13,\n  14,\n  15,\n  16,\n  17,\n  18,\n  19,\n  20,\n"
        "  21,\n  22,\n  23,\n  24,\n  25,\n  26,\n  27,\n  28,\n  29],\n"
        " <function print(*args, sep=' ', end='\\n', file=None, flush=False)>]\n"
    )


def test_import_loads_nothing_else(tmp_path):
    """Imported from bytecode, as in the guest image, it loads no other module
    (what it costs is bench/executor_costs.py's)."""
    import importlib.util
    import py_compile
    import shutil

    module = tmp_path / "cellvm_pretty.py"
    shutil.copy(os.path.join(EMBED, "cellvm_pretty.py"), module)
    py_compile.compile(str(module), cfile=importlib.util.cache_from_source(str(module)), doraise=True)
    code = (
        "import sys; sys.modules['IPython'] = None; sys.path.insert(0, %r)\n"
        "before = set(sys.modules)\n"
        "import cellvm_pretty\n"
        "print(cellvm_pretty.__cached__ if cellvm_pretty.__spec__.cached else '')\n"
        "print(cellvm_pretty.__file__)\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    ) % str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    cached, path, new_modules = out.split("\n")[:3]
    assert path == str(module) and cached == importlib.util.cache_from_source(str(module))
    assert new_modules.split() == ["cellvm_pretty"]

"""What E2B's code-interpreter template adds to the kernel (its
startup_scripts/000{1,2,3}_*.py): application/json for lists and dicts, PIL
images displayed by Image.show() and Image.save(path), and the library names
they leave in the namespace."""

import io

import pytest

from PIL import Image

from test_executor_harness import DISPLAY, Zygote, ex, zygote  # noqa: F401


def test_lists_and_dicts_carry_expanded_json(ex):
    r = ex.ok("[1, 'two', 3.0]")
    assert r.result["data"] == {"text/plain": "[1, 'two', 3.0]", "application/json": [1, "two", 3.0]}
    assert r.result["metadata"] == {"application/json": {"expanded": True}}
    assert ex.ok("{1: 'a', 'k': {'n': None}}").result["data"]["application/json"] == \
        {"1": "a", "k": {"n": None}}
    # numpy values go through .tolist(), as E2B's `default=`
    assert ex.ok("import numpy as np\n[np.arange(3), np.float64(1.5)]").result["data"][
        "application/json"] == [[0, 1, 2], 1.5]


def test_no_json_for_other_values_or_unserialisable_lists(ex):
    assert "application/json" not in ex.ok("(1, 2)").result["data"]
    assert "application/json" not in ex.ok("{1, 2}").result["data"]
    r = ex.ok("[object()]")
    assert list(r.result["data"]) == ["text/plain"] and "metadata" not in r.result
    assert ex.ok("l = [1]; l.append(l); l").result["data"] == {"text/plain": "[1, [...]]"}


def test_display_of_a_list_carries_json_too(ex):
    r = ex.ok("display([1, 2])")
    assert r.displays == [{"data": {"text/plain": "[1, 2]", "application/json": [1, 2]},
                           "metadata": {"application/json": {"expanded": True}}}]


# orjson.loads(orjson.dumps(v, option=OPT_SERIALIZE_NUMPY | OPT_NON_STR_KEYS)),
# which E2B's JSON formatter sends for lists and dicts, as orjson's README
# documents its types; None where orjson raises (no application/json then).
ORJSON_CASES = [
    ("[1, 2.5, 'a', None, True]", [1, 2.5, "a", None, True]),
    ("[float('nan'), float('inf'), -float('inf')]", [None, None, None]),
    ("{1: 'a', None: 'b', 2.5: 'c', False: 'd'}", {"1": "a", "null": "b", "2.5": "c", "false": "d"}),
    ("import datetime; [datetime.datetime(2024, 1, 2, 3, 4, 5), datetime.date(2024, 1, 2), "
     "datetime.time(3, 4)]", ["2024-01-02T03:04:05", "2024-01-02", "03:04:00"]),
    ("import enum\nclass Color(enum.Enum):\n    RED = 'red'\n[Color.RED]", ["red"]),
    ("import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int\n    y: list\n[P(1, [2])]",
     [{"x": 1, "y": [2]}]),
    ("import numpy as np; {'a': np.array([1.5, np.nan]), 'b': np.int64(3), 'c': (1, 2)}",
     {"a": [1.5, None], "b": 3, "c": [1, 2]}),
    ("[2 ** 64]", None),
    ("import collections; [collections.namedtuple('T', 'a')(1)]", None),
    ("import decimal; [decimal.Decimal('1.5')]", None),
    ("import pandas as pd; [pd.Timestamp('2024-01-02')]", None),
    ("[{1, 2}]", None),
]


@pytest.mark.parametrize("code,expected", ORJSON_CASES, ids=[str(i) for i in range(len(ORJSON_CASES))])
def test_lists_and_dicts_carry_json_as_orjson_writes_it(ex, code, expected):
    r = ex.ok(code)
    assert r.result["data"].get("application/json") == expected, r.result


def test_display_json_keeps_jupyter_clients_nan_text(ex):
    """Other JSON values (a _repr_json_, display(JSON(...))) reach E2B through
    jupyter_client's packer, which writes NaN and infinities as text."""
    r = ex.ok("from IPython.display import JSON, display\n"
              "display(JSON({'v': float('nan'), 'w': [float('inf'), 1.0]}))")
    assert r.displays[0]["data"]["application/json"] == {"v": "nan", "w": ["inf", 1.0]}


def test_pil_show_and_save_to_path_display_the_image(ex, tmp_path):
    path = str(tmp_path / "red.png")
    r = ex.ok("from PIL import Image\nimg = Image.new('RGB', (4, 3), 'red')\nimg.show()\n"
              f"img.save({path!r})\nimport io; img.save(io.BytesIO(), 'PNG')")
    assert len(r.displays) == 2
    for d in r.displays:
        assert d["data"]["text/plain"].startswith("<PIL.Image.Image image mode=RGB size=4x3")
        shown = Image.open(io.BytesIO(d["data"]["image/png"]))
        assert shown.size == (4, 3) and shown.getpixel((0, 0))[:3] == (255, 0, 0)
    assert Image.open(path).size == (4, 3)  # and it was saved


def test_savefig_to_a_path_displays_the_saved_image_as_e2b_does(ex, tmp_path):
    """matplotlib writes PNG and JPEG through PIL's Image.save(path): E2B's
    hook displays that image, the figure itself still shows at the end."""
    r = ex.ok("import matplotlib.pyplot as plt, io\nfig, ax = plt.subplots(figsize=(2, 1))\n"
              f"ax.plot([1, 2])\nfig.savefig({str(tmp_path / 'a.png')!r})\n"
              f"plt.savefig({str(tmp_path / 'b.jpg')!r})\nfig.savefig({str(tmp_path / 'c.svg')!r})\n"
              "fig.savefig(io.BytesIO(), format='png')")
    texts = [d["data"]["text/plain"] for d in r.displays]
    assert texts == ["<PIL.Image.Image image mode=RGBA size=200x100>",
                     "<PIL.Image.Image image mode=RGB size=200x100>",
                     "<Figure size 200x100 with 1 Axes>"], texts
    assert Image.open(io.BytesIO(r.displays[0]["data"]["image/png"])).size == (200, 100)
    assert Image.open(tmp_path / "a.png").size == (200, 100)


def test_pil_is_not_imported_by_the_kernel():
    z = Zygote(preload="")
    try:
        e = z.spawn()
        assert e.ok("import sys; 'PIL' in sys.modules").text == "False"
        r = e.ok("from PIL import Image\nImage.new('L', (2, 2)).show()")
        assert len(r.displays) == 1 and "image/png" in r.displays[0]["data"]
        e.close()
    finally:
        z.close()


def test_e2b_startup_names_work_as_builtins(ex):
    # E2B's startup files import these into every namespace (0001_envs.py:
    # os, ip; 0002_data.py: pandas, Figure; 0003_images.py: Any, Image), so
    # a cell that forgets its imports works there.
    assert ex.ok("os.path.basename('/a/b'), pandas.__name__, ip is get_ipython()").text == \
        "('b', 'pandas', True)"
    assert ex.ok("import sys\nFigure is sys.modules['matplotlib.figure'].Figure, "
                 "Any is sys.modules['typing'].Any, Image is sys.modules['PIL.Image'].Image").text == \
        "(True, True, True)"
    assert ex.ok("def f(x: Any) -> Any:\n    return x\nf.__annotations__['x'] is Any").text == "True"
    # Not in the namespace: what a cell lists of it stays ipykernel's.
    listed = "sorted(k for k in vars() if not k.startswith('_'))"
    assert ex.ok(listed).text == "['In', 'Out', 'exit', 'f', 'get_ipython', 'quit', 'sys']"
    assert ex.ok("import os\n%who").stdout == "f\t os\t sys\t \n"
    # %reset takes them away, as it empties E2B's namespace.
    ex.ok("%reset -f")
    err = ex.run("pandas").error
    assert (err["name"], err["value"]) == ("NameError", "name 'pandas' is not defined")
    assert ex.run("ip").error["value"] == "name 'ip' is not defined"
    assert ex.ok("display").text.startswith("<function IPython.core.display_functions.display(")


def test_e2b_startup_names_never_import():
    # Without preloads a context pays no import for them: only those whose
    # library is loaded are there.
    z = Zygote(preload="")
    try:
        e = z.spawn()
        assert e.ok("os.sep, ip is get_ipython(), Any").text == "('/', True, typing.Any)"
        err = e.run("pandas").error
        assert (err["name"], err["value"]) == ("NameError", "name 'pandas' is not defined")
        assert e.ok("import sys; [m in sys.modules for m in ('pandas', 'matplotlib', 'PIL')]").text == \
            "[False, False, False]"
        e.close()
    finally:
        z.close()

"""display() and the execute result follow IPython's rich display rules."""

from test_executor_harness import ex, zygote  # noqa: F401

CLASSES = '''
class Rich:
    def _repr_html_(self): return "<b>h</b>"
    def _repr_markdown_(self): return "**m**"
    def _repr_svg_(self): return "<svg/>"
    def _repr_png_(self): return b"\\x89PNG fake"
    def _repr_jpeg_(self): return b"\\xff\\xd8 fake"
    def _repr_latex_(self): return "$x$"
    def _repr_json_(self): return {"k": [1, 2]}
    def _repr_javascript_(self): return "alert(1)"
    def __repr__(self): return "Rich()"
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": "<i>b</i>", "application/x-custom": "c"}, {"text/html": {"isolated": True}}
    def _repr_html_(self): return "<i>ignored</i>"
class WithMeta:
    def _repr_png_(self): return (b"png", {"width": 10})
class Proxy:
    def __getattr__(self, name): return lambda *a, **k: "junk"
    def __repr__(self): return "Proxy()"
class BadHtml:
    def _repr_html_(self): return 5
'''


def test_every_repr_method(ex):
    ex.ok(CLASSES)
    d = ex.ok("display(Rich())").displays[0]
    assert d["data"] == {"text/plain": "Rich()", "text/html": "<b>h</b>", "text/markdown": "**m**",
                         "image/svg+xml": "<svg/>", "image/png": b"\x89PNG fake",
                         "image/jpeg": b"\xff\xd8 fake", "text/latex": "$x$",
                         "application/json": {"k": [1, 2]}, "application/javascript": "alert(1)"}
    r = ex.ok("Rich()").result
    assert r["data"] == d["data"]


def test_mimebundle_metadata_and_tuples(ex):
    ex.ok(CLASSES)
    d = ex.ok("display(Bundle())").displays[0]
    assert d["data"]["text/html"] == "<i>b</i>"
    assert d["data"]["application/x-custom"] == "c"
    assert d["data"]["text/plain"].startswith("<__main__.Bundle at 0x")
    assert d["metadata"] == {"text/html": {"isolated": True}}
    d = ex.ok("display(WithMeta(), metadata={'extra': 1})").displays[0]
    assert d["data"]["image/png"] == b"png"
    assert d["metadata"] == {"image/png": {"width": 10}, "extra": 1}


def test_proxy_classes_include_exclude_bad_types(ex):
    ex.ok(CLASSES)
    assert ex.ok("display(Proxy())").displays[0]["data"] == {"text/plain": "Proxy()"}
    assert ex.ok("display(Rich)").displays[0]["data"] == {"text/plain": "__main__.Rich"}
    d = ex.ok("display(Rich(), include=['text/plain', 'text/html'])").displays[0]
    assert set(d["data"]) == {"text/plain", "text/html"}
    d = ex.ok("display(Rich(), exclude=['text/html'])").displays[0]
    assert "text/html" not in d["data"] and "text/markdown" in d["data"]
    r = ex.ok("display(BadHtml())")
    assert "text/html" not in r.displays[0]["data"]
    assert "FormatterWarning" in r.stderr


def test_raw_bundles_and_multiple_objects(ex):
    r = ex.ok("display({'text/plain': 'p', 'text/html': '<p>'}, raw=True)\ndisplay(1, 'two')")
    assert [d["data"] for d in r.displays] == [{"text/plain": "p", "text/html": "<p>"},
                                               {"text/plain": "1"}, {"text/plain": "'two'"}]


def test_ipython_display_routes_to_ours(ex):
    r = ex.ok("from IPython.display import display as d2, HTML, Markdown\n"
              "d2(HTML('<b>x</b>'))\nMarkdown('*m*')")
    assert r.displays[0]["data"]["text/html"] == "<b>x</b>"
    assert r.result["data"]["text/markdown"] == "*m*"


def test_dataframe_plain_html_and_e2b_data(ex):
    r = ex.ok("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [0.5, None], "
              "'c': ['x', 'y'], 'd': [float('inf'), -float('inf')]})\ndf")
    data = r.result["data"]
    assert data["text/plain"] == ex.ok("print(repr(df), end='')").stdout
    assert data["text/html"] == ex.ok("print(df._repr_html_(), end='')").stdout
    # NaN and infinities as E2B receives them: jupyter_client's packer cleans
    # them to their reprs when JSON refuses them.
    assert data["e2b/data"] == {"a": [1, 2], "b": [0.5, "nan"], "c": ["x", "y"], "d": ["inf", "-inf"]}


def test_json_nested_deeper_than_the_wire_allows_keeps_its_text(ex):
    # The wire carries 48 levels (pycbor): a deeper list goes without its
    # application/json (E2B's json formatter), its text/plain as IPython's.
    r = ex.ok("deep = []\nfor _ in range(60):\n    deep = [deep]\ndisplay(deep)\ndeep")
    text = "[" * 61 + "]" * 61
    assert r.displays[0]["data"] == {"text/plain": text}
    assert r.result["data"] == {"text/plain": text}
    assert "metadata" not in r.result and not r.stderr
    shallow = ex.ok("[[[1]]]").result
    assert shallow["data"]["application/json"] == [[[1]]]
    assert shallow["metadata"] == {"application/json": {"expanded": True}}

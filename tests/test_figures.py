"""matplotlib figures: PNG from _cellvm.png_encode, pixel-identical to savefig, shown once."""

import io

import numpy as np
from PIL import Image

from test_executor_harness import ex, zygote  # noqa: F401

PLOT = ("import matplotlib.pyplot as plt, numpy as np\n"
        "fig, ax = plt.subplots()\nax.plot(np.sin(np.linspace(0, 6, 50)))\nax.set_title('t')\n")


def test_figure_pixels_match_savefig(ex):
    r = ex.ok(PLOT + "import io; buf = io.BytesIO()\n"
              "fig.savefig(buf, format='png', bbox_inches='tight')\nref = buf.getvalue();")
    assert len(r.displays) == 1
    d = r.displays[0]
    assert d["data"]["text/plain"] == "<Figure size 640x480 with 1 Axes>"
    ours = np.asarray(Image.open(io.BytesIO(d["data"]["image/png"])))
    ref_bytes = ex.ok("import sys; sys.stdout.write(ref.hex())").stdout
    ref = np.asarray(Image.open(io.BytesIO(bytes.fromhex(ref_bytes))))
    assert ours.shape == ref.shape and ours.shape[2] == 4
    assert np.array_equal(ours, ref)
    assert Image.open(io.BytesIO(d["data"]["image/png"])).info["dpi"][0] == \
        Image.open(io.BytesIO(bytes.fromhex(ref_bytes))).info["dpi"][0]


def test_shown_once_then_closed(ex):
    r = ex.ok(PLOT + "plt.show()\nprint('after')")
    assert len(r.displays) == 1
    assert r.stdout == "after\n"
    assert ex.ok("len(plt.get_fignums())").text == "0"
    assert ex.ok("1").displays == []


def test_closed_figures_not_sent_and_two_figures(ex):
    assert ex.ok(PLOT + "plt.close(fig)").displays == []
    r = ex.ok("plt.figure(); plt.plot([1]); plt.figure(); plt.plot([2]);")
    assert len(r.displays) == 2


def test_result_then_figure_and_figures_of_failing_cells(ex):
    r = ex.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])")
    assert r.text.startswith("[<matplotlib.lines.Line2D at 0x")
    assert [t for t, _ in r.events[1:]] == [0x8013, 0x8012]
    r = ex.run(PLOT + "1/0")
    assert len(r.displays) == 1 and r.error["name"] == "ZeroDivisionError"
    # As in ipykernel: the cell's error, then its figures (post_execute's flush).
    assert [t for t, _ in r.events[1:]] == [0x8014, 0x8012]


def test_empty_figure_has_no_png(ex):
    d = ex.ok("import matplotlib.pyplot as plt\nplt.figure();").displays[0]
    # E2B's chart formatter gives {} for a figure without data, which IPython keeps.
    assert d["data"] == {"text/plain": "<Figure size 640x480 with 0 Axes>", "e2b/chart": {}}

"""IPython.core.pylabtools' counterpart: how a figure becomes image data
(print_figure, retina_figure, select_figure_formats, with matplotlib_inline's
InlineBackend traits that choose them) and %run's mpl_execfile."""

import io
import sys

from .foreign_frames import as_if_in_ipython


PNG_FORMAT = "cellvmpng"  # savefig format served by our canvas: PNG via _cellvm.png_encode


def _run_file_with_matplotlib(run):
        """IPython's mpl_execfile around %run: pyplot not interactive while the
        file runs, then a draw if pyplot was asked to, and stale figures redrawn."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
                return run()
        import matplotlib
        interactive = matplotlib.rcParams["interactive"]
        matplotlib.interactive(False)
        try:
                return run()
        finally:
                matplotlib.interactive(interactive)
                if getattr(plt.draw_if_interactive, "called", False):
                        plt.draw()
                        plt.draw_if_interactive.called = False
                draw_all = getattr(plt, "draw_all", None)
                if draw_all is not None:
                        draw_all()


class _InlineBackend:
        """matplotlib_inline's InlineBackend traits, as %config InlineBackend.x
        and set_matplotlib_formats/set_matplotlib_close change them."""

        figure_formats = {"png"}
        figure_format = ""
        print_figure_kwargs = {"bbox_inches": "tight"}
        close_figures = True
        rc = {}
        # What the figure formatters make and pass to print_figure: the
        # formats and print_figure_kwargs, or set_matplotlib_formats' own
        # (IPython's select_figure_formats binds them into the formatters,
        # leaving the traits as they are).
        selected = {"png"}
        kwargs = {"bbox_inches": "tight"}
        # Figures have image formatters once the inline backend is loaded (or
        # %matplotlib configured another): before that they are text.
        formats_on = False


_inline = _InlineBackend()


def _print_figure(fig, fmt, bbox_inches="tight", **kwargs):
        """IPython's print_figure; PNG encoded by _cellvm."""
        if not fig.axes and not fig.lines:
                return None
        dpi = fig.dpi
        if fmt == "retina":
                dpi, fmt = dpi * 2, PNG_FORMAT
        if fig.canvas is None:
                from matplotlib.backend_bases import FigureCanvasBase
                FigureCanvasBase(fig)
        kw = {"format": fmt, "facecolor": fig.get_facecolor(), "edgecolor": fig.get_edgecolor(),
              "dpi": dpi, "bbox_inches": bbox_inches}
        kw.update(kwargs)
        buf = io.BytesIO()
        _call_print_figure(fig, fmt, bbox_inches, False, bytes_io=buf, kw=kw)
        return buf.getvalue()


def _call_print_figure(fig, fmt, bbox_inches, base64, **kwargs):
        fig.canvas.print_figure(kwargs["bytes_io"], **kwargs["kw"])


# A warning matplotlib gives while the figure is drawn names the first frame
# outside matplotlib: in ipykernel, IPython's print_figure, its line 151
# (`fig.canvas.print_figure(bytes_io, **kw)`). The call above is made to be
# that frame, with its arguments' names (a failed draw's traceback shows them).
_call_print_figure = as_if_in_ipython(_call_print_figure, "core/pylabtools.py", 151, qualname="print_figure")


def _figure_png(fig):
        return _print_figure(fig, PNG_FORMAT, **_inline.kwargs)


def _figure_retina(fig):
        """IPython's retina_figure: PNG at twice the dpi, shown at half its pixel size."""
        data = _print_figure(fig, "retina", **_inline.kwargs)
        if data is None:
                return None
        import struct
        w, h = struct.unpack(">II", data[16:24])
        return data, {"width": w // 2, "height": h // 2}


def _figure_svg(fig):
        data = _print_figure(fig, "svg", **_inline.kwargs)
        return None if data is None else data.decode("utf-8")


def _figure_formatters():
        """IPython's select_figure_formats: what a figure is shown as."""
        f = _inline.selected
        out = {}
        if "png" in f:
                out["image/png"] = _figure_png
        if "retina" in f or "png2x" in f:
                out["image/png"] = _figure_retina
        if "jpg" in f or "jpeg" in f:
                out["image/jpeg"] = lambda fig: _print_figure(fig, "jpeg", **_inline.kwargs)
        if "svg" in f:
                out["image/svg+xml"] = _figure_svg
        if "pdf" in f:
                out["application/pdf"] = lambda fig: _print_figure(fig, "pdf", **_inline.kwargs)
        return out


_FIGURE_FORMATS_KNOWN = {"png", "png2x", "retina", "jpg", "jpeg", "svg", "pdf"}


def _set_figure_formats(value, **kwargs):
        """IPython's select_figure_formats(shell, value, **kwargs)."""
        formats = {value} if isinstance(value, str) else set(value)
        bad = formats - _FIGURE_FORMATS_KNOWN
        if bad:
                _inline.selected = set()  # IPython drops the figure formatters, then checks
                # IPython's words, in its sets' order (which varies by process).
                raise ValueError("supported formats are: %s not %s" % (
                    ",".join(repr(f) for f in _FIGURE_FORMATS_KNOWN), ",".join(repr(f) for f in bad)))
        _inline.selected = formats
        _inline.kwargs = kwargs


def inline_trait_value(name, value):
        """`value` as InlineBackend's trait `name` takes it (traitlets' casts),
        or traitlets' TraitError, which names the class as there."""
        try:
                import traitlets
        except ImportError:
                return value
        global _InlineBackendTraits
        if _InlineBackendTraits is None:
                _InlineBackendTraits = type("InlineBackend", (traitlets.HasTraits,), {
                    "figure_formats": traitlets.Set(), "figure_format": traitlets.Unicode(),
                    "print_figure_kwargs": traitlets.Dict(), "close_figures": traitlets.Bool(),
                    "rc": traitlets.Dict()})
        checked = _InlineBackendTraits()
        setattr(checked, name, value)
        return getattr(checked, name)


_InlineBackendTraits = None


def _set_inline_trait(name, value):
        """%config InlineBackend.<name> = value, with InlineBackend's observers."""
        # traitlets' observers run only when a value changes.
        if name == "figure_format":
                old, _inline.figure_format = _inline.figure_format, value
                if value and value != old:
                        _set_inline_trait("figure_formats", {value})
        elif name == "figure_formats":
                value = {value} if isinstance(value, str) else set(value)
                if value != _inline.figure_formats:
                        # traitlets: the trait changes, then its observer may fail.
                        _inline.figure_formats = value
                        _set_figure_formats(value, **_inline.print_figure_kwargs)
        elif name == "print_figure_kwargs":
                if value != _inline.print_figure_kwargs:
                        _inline.print_figure_kwargs = dict(value)
                        _set_figure_formats(_inline.figure_formats, **_inline.print_figure_kwargs)
        elif name == "close_figures":
                _inline.close_figures = bool(value)
        elif name == "rc":
                _inline.rc = dict(value)

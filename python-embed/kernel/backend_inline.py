"""matplotlib_inline.backend_inline's counterpart: the inline backend (Agg
with PNG encoded by _cellvm), show(), and the post-execute flush that shows
a cell's figures once; and IPython's activate_matplotlib, as importing
ipykernel's backend does it."""

import importlib
import os
import sys
import types

import _cellvm

from .display import display
from .foreign_frames import as_if_in, as_if_in_ipython, frames_from
from .getipython import _shell_config, _shell_events
from .pylabtools import PNG_FORMAT, _inline, _set_figure_formats, _set_inline_trait, inline_trait_value
from .session import _state


# The name ipykernel's inline backend has: matplotlib.get_backend() and the
# messages that quote it read as there. The module is ours (sys.modules).
MPL_BACKEND = "module://matplotlib_inline.backend_inline"


def _on_matplotlib_import(matplotlib):
        if "MPLBACKEND" not in os.environ:
                matplotlib.rcParams["backend"] = MPL_BACKEND


_mpl_activated = False  # in this context (the zygote never activates)


def _activate_matplotlib():
        """ipykernel makes pyplot interactive (IPython's activate_matplotlib) when
        its backend module is first imported: at a kernel's first figure or
        show(), not when matplotlib is imported. A plt.ioff() before that is
        undone then, as there."""
        global _mpl_activated
        if not _mpl_activated:
                # ipykernel makes its InlineBackend here, the shell its parent: what
                # a notebook put in get_ipython().config.InlineBackend before
                # (Kaggle's learntools sets figure_format so, %config does) is its
                # config. A value its trait refuses fails the figure's cell, and
                # each one after, as the backend is not made.
                config = _shell_config()
                section = config.get("InlineBackend") if config is not None else None
                traits = [(name, inline_trait_value(name, value)) for name, value in dict(section or {}).items()
                          if name in ("figure_format", "figure_formats", "print_figure_kwargs",
                                      "close_figures", "rc")]
                _mpl_activated = True
                _inline.formats_on = True
                import matplotlib
                matplotlib.interactive(True)
                events = _shell_events()
                if events is not None:  # configure_inline_support registers it
                        events.register("post_execute", _flush_figures_callback)
                for name, value in traits:
                        _set_inline_trait(name, value)
                matplotlib.rcParams.update(_inline.rc)  # configure_inline_support loads InlineBackend.rc


def _configure_inline_support(inline):
        """matplotlib_inline's configure_inline_support, as %matplotlib calls it:
        the figure flush after each cell registered for the inline backend,
        taken out for another; a figure is shown in the formats selected from
        then on (its images, where before only text)."""
        _inline.formats_on = True
        events = _shell_events()
        if events is None:
                return  # the flush runs at each cell's end without it (interactiveshell)
        callbacks = events.callbacks["post_execute"]
        if inline and _flush_figures_callback not in callbacks:
                events.register("post_execute", _flush_figures_callback)
        elif not inline and _flush_figures_callback in callbacks:
                callbacks.remove(_flush_figures_callback)


def _on_pyplot_import(plt):
        """IPython's activate_matplotlib wraps pyplot.draw_if_interactive so that
        it records being called (IPython's flag_calls); %run redraws then."""
        inner = plt.draw_if_interactive
        if hasattr(inner, "called"):
                return

        def draw_if_interactive(*args, **kwargs):
                draw_if_interactive.called = False
                out = inner(*args, **kwargs)
                draw_if_interactive.called = True
                return out

        draw_if_interactive.called = False
        draw_if_interactive.__doc__ = inner.__doc__
        plt.draw_if_interactive = draw_if_interactive
        uninstall = plt.uninstall_repl_displayhook

        def uninstall_repl_displayhook():
                # plt.ioff() unregisters pyplot's post_execute draw; ion() puts it
                # back after the inline backend's flush, where it finds no figure.
                global _draw_all_first
                if _mpl_activated:
                        _draw_all_first = False
                out = uninstall()
                events = _shell_events()
                if events is not None:
                        draw = getattr(plt, "_draw_all_if_interactive", None)
                        if draw in events.callbacks["post_execute"]:
                                events.callbacks["post_execute"].remove(draw)
                return out

        uninstall_repl_displayhook.__doc__ = uninstall.__doc__
        plt.uninstall_repl_displayhook = uninstall_repl_displayhook


def _print_cellvmpng(self, filename_or_obj, *args, **kwargs):
        """FigureCanvasCellvm.print_cellvmpng's code (globals of its own, below)."""
        globals()["FigureCanvasAgg"].draw(self)  # its globals: see FigureCanvasCellvm
        buf = self.buffer_rgba()
        h, w = buf.shape[0], buf.shape[1]
        data = _cellvm.png_encode(buf, w, h, self.figure.dpi)
        if hasattr(filename_or_obj, "write"):
                filename_or_obj.write(data)
        else:
                with open(filename_or_obj, "wb") as f:
                        f.write(data)


class _MplBackend(types.ModuleType):
        """matplotlib_inline.backend_inline's stand-in (sys.modules["_cellvm_mpl"]
        too): Agg with ipykernel's inline show() behaviour."""


def _make_mpl_backend():
        mod = _MplBackend("matplotlib_inline.backend_inline")
        mod.set_matplotlib_formats = set_matplotlib_formats
        mod.set_matplotlib_close = set_matplotlib_close
        mod.flush_figures = _flush_figures

        def load():
                import matplotlib
                from matplotlib.backends.backend_agg import FigureCanvasAgg
                from matplotlib.figure import Figure

                class FigureCanvasCellvm(FigureCanvasAgg):
                        # Same render as print_png; only the PNG encoder differs. It
                        # runs as matplotlib's own code: a warning of the draw
                        # (a glyph missing from the font) names the caller of
                        # print_figure, as print_png's does, not this frame.
                        print_cellvmpng = as_if_in(_print_cellvmpng, "matplotlib.backends.backend_agg",
                                                   FigureCanvasAgg=FigureCanvasAgg, _cellvm=_cellvm)

                # pyplot's figures get this canvas, so their PNG is printed by the
                # canvas that drew them, with its renderer and the text sizes it
                # measured (a missing font warns as often as in ipykernel, whose
                # inline figures print PNG with their Agg canvas). It reads as Agg's.
                FigureCanvasCellvm.__name__ = FigureCanvasCellvm.__qualname__ = "FigureCanvasAgg"
                FigureCanvasCellvm.__module__ = "matplotlib.backends.backend_agg"

                # Our canvas serves PNG_FORMAT to any figure (print_figure looks the
                # format up in _default_backends), but it is not a file type a user
                # can choose: register_backend would also list it in
                # get_supported_filetypes() and savefig's errors.
                from matplotlib import backend_bases
                backend_bases._default_backends[PNG_FORMAT] = "_cellvm_mpl"

                def new_figure_manager(num, *args, FigureClass=Figure, **kwargs):
                        _activate_matplotlib()
                        return new_figure_manager_given_figure(num, FigureClass(*args, **kwargs))

                def new_figure_manager_given_figure(num, figure):
                        manager = FigureCanvasCellvm.new_manager(figure, num)
                        if not hasattr(figure, "show"):
                                figure.show = lambda *a: display(
                                    figure, metadata=_figure_metadata(figure))
                        if not matplotlib.is_interactive():
                                return manager
                        if figure in show._to_draw:
                                show._to_draw.remove(figure)
                        show._to_draw.append(figure)
                        show._draw_called = True
                        return manager

                def show(close=None, block=None):
                        from matplotlib._pylab_helpers import Gcf
                        _activate_matplotlib()
                        if close is None:
                                close = _inline.close_figures
                        try:
                                for fm in Gcf.get_all_fig_managers():
                                        fig = fm.canvas.figure
                                        display(fig, metadata=_figure_metadata(fig))
                        finally:
                                show._to_draw = []
                                if close and Gcf.get_all_fig_managers():
                                        matplotlib.pyplot.close("all")

                show._draw_called = False
                show._to_draw = []
                mod.FigureCanvas = FigureCanvasCellvm
                mod.FigureCanvasCellvm = FigureCanvasCellvm
                mod.new_figure_manager = new_figure_manager
                mod.new_figure_manager_given_figure = new_figure_manager_given_figure
                mod.show = show

        def __getattr__(name):
                if "FigureCanvas" not in mod.__dict__:
                        load()
                        return getattr(mod, name)
                imported = _BACKEND_IMPORTS.get(name)
                if imported is not None:
                        module, attr = imported
                        value = getattr(importlib.import_module(module), attr) if attr else importlib.import_module(module)
                        setattr(mod, name, value)
                        return value
                raise AttributeError(name)

        # The real module's file and the rest of its public names (what it
        # imports, read when first asked for).
        mod.__file__ = "/usr/lib/python3/dist-packages/matplotlib_inline/backend_inline.py"  # Debian's
        mod.configure_inline_support = configure_inline_support
        mod._enable_matplotlib_integration = _enable_matplotlib_integration

        mod.__getattr__ = __getattr__
        return mod


# Names matplotlib_inline.backend_inline imports: (module, attribute or None).
_BACKEND_IMPORTS = {
    "matplotlib": ("matplotlib", None),
    "colors": ("matplotlib.colors", None),
    "backend_agg": ("matplotlib.backends.backend_agg", None),
    "FigureCanvasAgg": ("matplotlib.backends.backend_agg", "FigureCanvasAgg"),
    "Gcf": ("matplotlib._pylab_helpers", "Gcf"),
    "Figure": ("matplotlib.figure", "Figure"),
    "InlineBackend": ("matplotlib_inline.config", "InlineBackend"),
}


def configure_inline_support(shell, backend):
        """matplotlib_inline's configure_inline_support: in this kernel the inline
        backend's figure flush and formats are always set up, so there is
        nothing to register (IPython's %matplotlib calls it for the same)."""


def _enable_matplotlib_integration():
        """matplotlib_inline's: pyplot is made interactive at the first figure
        (_activate_matplotlib), as ipykernel's import of the backend does."""


def _figure_metadata(fig):
        """matplotlib_inline's _fetch_figure_metadata: background hint for transparent figures."""
        from matplotlib import colors
        if colors.to_rgba(fig.get_facecolor())[3] < 0.5:
                labels = [label.get_color() for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                          for label in axis.get_ticklabels()]
                if labels:
                        rgba = colors.to_rgba_array(labels)
                        light = rgba[:, :3].dot((.299, .587, .114)) > .5
                        if (light == light[0]).all():
                                return {"needs_background": "dark" if light[0] else "light"}
        return None


def set_matplotlib_formats(*formats, **kwargs):
        """matplotlib_inline.backend_inline.set_matplotlib_formats (IPython.display's
        calls it too): the formats, print_figure_kwargs updated by kwargs."""
        _activate_matplotlib()  # importing matplotlib_inline.backend_inline did
        _set_figure_formats(formats, **dict(_inline.print_figure_kwargs, **kwargs))


def set_matplotlib_close(close=True):
        _activate_matplotlib()
        _inline.close_figures = close


def _figures_pending():
        """Whether the cell's end has figures to draw or show (_flush_figures)."""
        mpl = sys.modules.get("_cellvm_mpl")
        if mpl is not None and "show" in mpl.__dict__ and mpl.show._draw_called:
                return True
        return _stale_to_draw()


def _stale_to_draw():
        """pyplot's post_execute draw has a stale figure to draw."""
        plt = sys.modules.get("matplotlib.pyplot")
        if not _draw_all_first or plt is None or not sys.modules["matplotlib"].is_interactive():
                return False
        from matplotlib._pylab_helpers import Gcf
        return any(m.canvas.figure.stale for m in Gcf.get_all_fig_managers())


def _flush_figures():
        """What runs after each cell for figures: pyplot's post_execute draw of
        the stale ones while pyplot is interactive (whatever its backend, as
        pyplot registers it at each switch_backend), then ipykernel's
        flush_figures of what the inline backend was asked to show."""
        mpl = sys.modules.get("_cellvm_mpl")
        if _stale_to_draw():
                draw = getattr(sys.modules["matplotlib.pyplot"], "_draw_all_if_interactive", None)
                if draw is not None:
                        _trigger_post_execute(draw)
        if mpl is None or "show" not in mpl.__dict__ or not mpl.show._draw_called:
                return
        try:
                if _inline.close_figures:
                        mpl.show(True)
                        return
                from matplotlib._pylab_helpers import Gcf
                active = {fm.canvas.figure for fm in Gcf.get_all_fig_managers()}
                for fig in [fig for fig in mpl.show._to_draw if fig in active]:
                        display(fig, metadata=_figure_metadata(fig))
        finally:
                mpl.show._to_draw = []
                mpl.show._draw_called = False


# In ipykernel pyplot's own post_execute callback draws the stale figures
# before they are shown (until a plt.ioff()): so does cellvm. That draw lays
# the figure out (figure.autolayout), and what it warns names IPython's
# events.trigger line, as there. A figure that fails to draw is reported as
# that trigger reports it: the cell's error, from pyplot's frames.
_draw_all_first = True


def _trigger(func):
        func()


_trigger = as_if_in_ipython(_trigger, "core/events.py", 89)


def _trigger_post_execute(func):
        """IPython's EventManager.trigger for one post_execute callback: an error
        is printed and shown (showtraceback), and the cell goes on; its
        traceback starts below the trigger's frame (IPython's tb_offset)."""
        try:
                _trigger(func)
        except Exception as e:  # noqa: BLE001 - as IPython's trigger
                print("Error in callback {} (for {}):".format(func, "post_execute"))
                tb = frames_from(e.__traceback__, _trigger.__code__)
                if tb is not None:
                        e.__traceback__ = tb.tb_next
                if _state.kernel is not None:
                        _state.kernel.report_error(e)


def _flush_figures_callback():
        """ipykernel's post_execute flush_figures, as events lists it once the
        inline backend is active."""
        _flush_figures()


_flush_figures_callback.__name__ = _flush_figures_callback.__qualname__ = "flush_figures"
_flush_figures_callback.__module__ = "matplotlib_inline.backend_inline"

"""The notebook kernel of cellvm-executor (docs/PROTOCOL.md section 8).

Embedded into the executor binary and run as module `_cellvm_kernel`. The C
side calls zygote_preload() once in the zygote, then executor_main() in each
forked executor. Semantics follow ipykernel 6 / IPython 8.5: persistent
namespace, __future__ flags carried across cells, the trailing expression as the
execute result, In/Out/_/_N/_iN, rich display, !shell lines and a few line
magics, matplotlib figures shown once per cell.
"""

import ast
import builtins
import codeop
import errno
import functools
import gc
import importlib.abc
import importlib.util
import io
import linecache
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
import types
import warnings

import _cellvm
import _signal

_SIGINT = int(signal.SIGINT)
_SIG_IGN = int(signal.SIG_IGN)

KERNEL_FILE = "<cellvm kernel>"
# Our own source lines in tracebacks of kernel bugs.
linecache.cache[KERNEL_FILE] = (0, None, _cellvm.sources.get("_cellvm_kernel", "").splitlines(True),
                                KERNEL_FILE)

# Internal message types (docs/PROTOCOL.md section 8) and client types.
Z_READY = 0x4001
X_READY = 0x4010
X_EXECUTE = 0x4011
X_END = 0x4012
EXEC_INPUT = 0x8010
DISPLAY = 0x8012
RESULT = 0x8013
EXEC_ERROR = 0x8014

# The name ipykernel's inline backend has: matplotlib.get_backend() and the
# messages that quote it read as there. The module is ours (sys.modules).
MPL_BACKEND = "module://matplotlib_inline.backend_inline"
PNG_FORMAT = "cellvmpng"  # savefig format served by our canvas: PNG via _cellvm.png_encode

# The flags IPython's CachingCompiler (a codeop.Compile) parses cells with.
PARSE_FLAGS = codeop.PyCF_DONT_IMPLY_DEDENT | codeop.PyCF_ALLOW_INCOMPLETE_INPUT

# Bits of compile() flags that come from `from __future__ import ...`.
import __future__  # noqa: E402

FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
        FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag
del _name


# ---------------------------------------------------------------- cell output streams

# Output buffered in the executor before it reaches the fd 1/2 pipes. Flushed
# when full, before every message (ordering, PROTOCOL.md section 8), before a
# child process is started, and every OUTPUT_FLUSH_INTERVAL while a cell runs.
OUTPUT_BUFFER_SIZE = 64 * 1024
OUTPUT_FLUSH_INTERVAL = 0.03


class _BinaryOut:
        """sys.stdout.buffer: the BufferedWriter under the text layer, except that
        a write first pushes out the text still pending above it, so
        print('a'); sys.stdout.buffer.write(b'b') keeps its order."""

        def __init__(self, text, binary):
                self._text = text
                self._binary = binary

        def write(self, data):
                self._text.flush()
                return self._binary.write(data)

        def writelines(self, lines):
                self._text.flush()
                return self._binary.writelines(lines)

        def __getattr__(self, name):
                return getattr(self._binary, name)

        def __enter__(self):
                return self

        def __exit__(self, *exc):
                self._binary.__exit__(*exc)


class _OutStream(_cellvm.OutStream, io.TextIOBase):
        """sys.stdout/sys.stderr of a cell: text buffered in C (_cellvm.OutStream,
        out_stream.c) over a BufferedWriter on fd 1 or 2. Like ipykernel's
        OutStream it is an io.TextIOBase and reports encoding 'UTF-8', errors
        None, isatty() False, name 'stdout'/'stderr'; fileno() is the real fd,
        so child processes writing to it land in the same stream."""

        encoding = "UTF-8"

        def __init__(self, fd, name):
                raw = io.FileIO(fd, "w", closefd=False)
                binary = io.BufferedWriter(raw, OUTPUT_BUFFER_SIZE)
                super().__init__(binary, OUTPUT_BUFFER_SIZE)
                self._cellvm_name = name
                self._cellvm_binary = _BinaryOut(self, binary)

        @property
        def name(self):
                return self._cellvm_name

        @property
        def buffer(self):
                return self._cellvm_binary

        def fileno(self):
                return self._cellvm_binary.fileno()

        def isatty(self):
                return False

        def writable(self):
                return True


# The name errors show, as ipykernel's ("'OutStream' object has no attribute ...").
_OutStream.__name__ = _OutStream.__qualname__ = "OutStream"


class _StreamFlusher:
        """What the output flusher thread (output_flusher.c) calls every interval
        while a cell runs, so `print('a'); time.sleep(5)` shows 'a' at once.
        BufferedWriter's own lock orders these flushes against the cell's
        writes; `lock` keeps fork() from copying a flush in progress."""

        def __init__(self, streams):
                self.streams = streams
                self.lock = threading.Lock()

        def __call__(self):
                with self.lock:
                        self._flush()

        def _flush(self):
                for stream in self.streams:
                        try:
                                stream.flush()
                        except Exception:  # closed or broken pipe: nothing to deliver to
                                pass

        def before_fork(self):
                self.lock.acquire()
                self._flush()  # or the child would write the pending output a second time

        def after_fork(self):
                self.lock.release()


_out_streams = ()
_flusher = None


def _flush_std():
        for stream in (sys.stdout, sys.stderr) + _out_streams:
                try:
                        stream.flush()
                except Exception:  # a user-replaced stream may be broken; never fail the kernel
                        pass


def _flushing_first(fn):
        """fn, but with the cell's buffered output flushed first: it starts a child
        process that writes to the same fds, and what was printed before must
        come out before the child's output."""

        def wrapper(*args, **kwargs):
                _flush_std()
                return fn(*args, **kwargs)

        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__qualname__ = getattr(fn, "__qualname__", wrapper.__name__)
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        wrapper.__wrapped__ = fn
        return wrapper


def _install_output_streams():
        global _out_streams, _flusher
        sys.stdout = _OutStream(1, "stdout")
        sys.stderr = _OutStream(2, "stderr")
        _out_streams = (sys.stdout, sys.stderr)
        _flusher = _StreamFlusher(_out_streams)
        _cellvm.flusher_start(_flusher, OUTPUT_FLUSH_INTERVAL)
        os.register_at_fork(before=_flusher.before_fork, after_in_parent=_flusher.after_fork,
                            after_in_child=_flusher.after_fork)
        # Child processes that do not go through fork(): subprocess (fork_exec or
        # posix_spawn), os.system and os.posix_spawn*.
        if getattr(subprocess, "_fork_exec", None) is not None:
                subprocess._fork_exec = _flushing_first(subprocess._fork_exec)
        for name in ("system", "posix_spawn", "posix_spawnp"):
                if hasattr(os, name):
                        setattr(os, name, _flushing_first(getattr(os, name)))


# ---------------------------------------------------------------- post-import hooks


class _PostImportFinder(importlib.abc.MetaPathFinder):
        """Runs a callback right after selected modules finish importing.

        Used to select our matplotlib backend as soon as matplotlib is imported
        (preloaded or not) and to route IPython.display.display to ours.
        """

        def __init__(self):
                self.hooks = {}
                self._busy = set()

        def find_spec(self, fullname, path=None, target=None):
                if fullname not in self.hooks or fullname in self._busy:
                        return None
                self._busy.add(fullname)
                try:
                        spec = importlib.util.find_spec(fullname)
                finally:
                        self._busy.discard(fullname)
                if spec is None or spec.loader is None:
                        return spec
                loader = spec.loader
                hook = self.hooks[fullname]
                real_exec = loader.exec_module

                def exec_module(module):
                        real_exec(module)
                        try:
                                hook(module)
                        except Exception as e:  # a hook must not break the user's import
                                print(f"cellvm: import hook for {fullname} failed: {e!r}",
                                      file=sys.stderr)

                spec.loader = types.SimpleNamespace(
                    create_module=loader.create_module, exec_module=exec_module)
                return spec

        def add(self, modname, hook):
                if modname in sys.modules:
                        hook(sys.modules[modname])
                else:
                        self.hooks[modname] = hook


class _EmbeddedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        """Serves Python modules compiled into the executor (cellvm_pretty)."""

        def find_spec(self, fullname, path=None, target=None):
                if path is None and fullname in _cellvm.sources and _cellvm.sources[fullname]:
                        return importlib.util.spec_from_loader(fullname, self, origin=f"<cellvm {fullname}>")
                return None

        def create_module(self, spec):
                return None

        def exec_module(self, module):
                src = _cellvm.sources[module.__name__]
                exec(compile(src, f"<cellvm {module.__name__}>", "exec"), module.__dict__)


_post_import = _PostImportFinder()


def _install_finders():
        if _post_import not in sys.meta_path:
                sys.meta_path.insert(0, _post_import)
                sys.meta_path.append(_EmbeddedFinder())
        _post_import.add("matplotlib", _on_matplotlib_import)
        _post_import.add("matplotlib.pyplot", _on_pyplot_import)
        _post_import.add("IPython.core.display_functions", _on_ipython_display_import)
        _post_import.add("IPython.core.getipython", _on_ipython_getipython_import)
        _post_import.add("IPython.core.interactiveshell", _on_ipython_shell_import)
        _post_import.add("PIL.Image", _on_pil_image_import)
        _post_import.add("asyncio", _on_asyncio_import)
        _post_import.add("pandas.io.formats.printing", _on_pandas_printing_import)


# ---------------------------------------------------------------- matplotlib


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
                _mpl_activated = True
                import matplotlib
                matplotlib.interactive(True)
                events = _shell_events()
                if events is not None:  # configure_inline_support registers it
                        events.register("post_execute", _flush_figures_callback)


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
                from matplotlib.backends import backend_agg
                from matplotlib.backends.backend_agg import FigureCanvasAgg
                from matplotlib.figure import Figure

                class FigureCanvasCellvm(FigureCanvasAgg):
                        def print_cellvmpng(self, filename_or_obj, *args, **kwargs):
                                # Same render as print_png; only the PNG encoder differs.
                                FigureCanvasAgg.draw(self)
                                buf = self.buffer_rgba()
                                h, w = buf.shape[0], buf.shape[1]
                                data = _cellvm.png_encode(buf, w, h, self.figure.dpi)
                                if hasattr(filename_or_obj, "write"):
                                        filename_or_obj.write(data)
                                else:
                                        with open(filename_or_obj, "wb") as f:
                                                f.write(data)

                from matplotlib import backend_bases
                backend_bases.register_backend(PNG_FORMAT, "_cellvm_mpl")

                def new_figure_manager(num, *args, FigureClass=Figure, **kwargs):
                        _activate_matplotlib()
                        return new_figure_manager_given_figure(num, FigureClass(*args, **kwargs))

                def new_figure_manager_given_figure(num, figure):
                        manager = backend_agg.new_figure_manager_given_figure(num, figure)
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
                raise AttributeError(name)

        mod.__getattr__ = __getattr__
        return mod


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


class _InlineBackend:
        """matplotlib_inline's InlineBackend traits, as %config InlineBackend.x
        and set_matplotlib_formats/set_matplotlib_close change them."""

        figure_formats = {"png"}
        figure_format = ""
        print_figure_kwargs = {"bbox_inches": "tight"}
        close_figures = True
        rc = {}
        # What the figure formatters pass to print_figure: print_figure_kwargs,
        # or set_matplotlib_formats' own kwargs over them (IPython's
        # select_figure_formats binds them into the formatters).
        kwargs = {"bbox_inches": "tight"}


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
        fig.canvas.print_figure(buf, **kw)
        return buf.getvalue()


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
        f = _inline.figure_formats
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
                raise ValueError(f"supported formats are: {sorted(_FIGURE_FORMATS_KNOWN)!s} not {bad!s}")
        _inline.figure_formats = formats
        _inline.kwargs = kwargs


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
                        _set_figure_formats(value, **_inline.print_figure_kwargs)
        elif name == "print_figure_kwargs":
                if value != _inline.print_figure_kwargs:
                        _inline.print_figure_kwargs = dict(value)
                        _set_figure_formats(_inline.figure_formats, **_inline.print_figure_kwargs)
        elif name == "close_figures":
                _inline.close_figures = bool(value)
        elif name == "rc":
                _inline.rc = dict(value)


def set_matplotlib_formats(*formats, **kwargs):
        """matplotlib_inline.backend_inline.set_matplotlib_formats (IPython.display's
        calls it too): the formats, print_figure_kwargs updated by kwargs."""
        _activate_matplotlib()  # importing matplotlib_inline.backend_inline did
        _set_figure_formats(formats, **dict(_inline.print_figure_kwargs, **kwargs))


def set_matplotlib_close(close=True):
        _activate_matplotlib()
        _inline.close_figures = close


def _figures_pending():
        mpl = sys.modules.get("_cellvm_mpl")
        return mpl is not None and "show" in mpl.__dict__ and mpl.show._draw_called


def _flush_figures():
        """ipykernel's post-execute flush_figures."""
        global _draw_callback
        mpl = sys.modules.get("_cellvm_mpl")
        if mpl is None or "show" not in mpl.__dict__ or not mpl.show._draw_called:
                return
        import matplotlib
        if _draw_all_first and matplotlib.is_interactive():
                _draw_callback = getattr(sys.modules["matplotlib.pyplot"], "_draw_all_if_interactive", None)
        try:
                if _inline.close_figures:
                        mpl.show(True)
                        return
                from matplotlib._pylab_helpers import Gcf
                active = {fm.canvas.figure for fm in Gcf.get_all_fig_managers()}
                for fig in [fig for fig in mpl.show._to_draw if fig in active]:
                        display(fig, metadata=_figure_metadata(fig))
        finally:
                _draw_callback = None
                mpl.show._to_draw = []
                mpl.show._draw_called = False


# In ipykernel pyplot's own post_execute callback draws the figures before
# they are shown (until a plt.ioff()). cellvm skips that render (a figure is
# drawn when it is shown), so a figure that fails to draw says what IPython's
# events.trigger would have said for it.
_draw_all_first = True
_draw_callback = None


# ---------------------------------------------------------------- rich display

# IPython's DisplayFormatter order.
_REPR_METHODS = [
    ("text/plain", None),
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("application/pdf", "_repr_pdf_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
]
# E2B's kernel adds its own formatters after IPython's (template/startup_scripts/0002_data.py).
_FORMAT_ORDER = _REPR_METHODS + [("e2b/data", None), ("e2b/chart", None)]
_TEXT_MIMES = {"text/plain", "text/html", "text/markdown", "image/svg+xml", "text/latex",
               "application/javascript"}
_BINARY_MIMES = {"image/png", "image/jpeg", "application/pdf"}
_REPR_METHODS_DICT = dict(_REPR_METHODS)
_FORMAT_KEYS = frozenset(dict(_FORMAT_ORDER))

_pretty = None


def pretty_text(obj):
        """text/plain as IPython's pretty printer makes it (cellvm_pretty), else repr()."""
        global _pretty
        if _pretty is None:
                try:
                        import cellvm_pretty
                        _pretty = cellvm_pretty.pretty
                except Exception:
                        _pretty = repr
        return _pretty(obj)


def _real_method(obj, name):
        """IPython's get_real_method: skip classes and proxies that claim every attribute."""
        try:
                if getattr(obj, "_ipython_canary_method_should_not_exist_", None) is not None:
                        return None
                m = getattr(obj, name, None)
        except Exception:
                return None
        if isinstance(obj, type) and not isinstance(m, types.MethodType):
                return None
        return m if callable(m) else None


# IPython's formatters' _return_type, as its FormatterWarning names it.
_EXPECTED_TYPE = {"application/json": "(<class 'list'>, <class 'dict'>)",
                  "image/png": "(<class 'bytes'>, <class 'str'>)",
                  "image/jpeg": "(<class 'bytes'>, <class 'str'>)",
                  "application/pdf": "(<class 'bytes'>, <class 'str'>)"}


def _formatter_warning(mime, obj, exc=None, value=None):
        global _draw_callback
        kernel = _state.kernel
        if exc is not None and kernel is not None:
                if _draw_callback is not None and mime in _figure_formatters():
                        print(f"Error in callback {_draw_callback} (for post_execute):")
                        _draw_callback = None
                # IPython's catch_format_error: showtraceback(), an error of the cell.
                kernel.report_error(exc)
                return
        if exc is not None:
                import traceback
                text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        else:
                text = (f"FormatterWarning: {mime} formatter returned invalid type "
                        f"{type(value)} (expected {_EXPECTED_TYPE.get(mime, str(str))}) for object: "
                        f"{pretty_text(obj)}\n")
        sys.stderr.write(text)


def _check_value(mime, value):
        """Normalise a formatter's value to what the wire carries, or None if invalid."""
        if mime in _BINARY_MIMES:
                if isinstance(value, str):
                        import base64
                        return base64.b64decode(value)
                return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None
        if mime == "application/json":
                # A str only comes from a _repr_mimebundle_, which IPython sends unchecked.
                return value if isinstance(value, (dict, list, str)) else None
        if mime in _TEXT_MIMES:
                return value if isinstance(value, str) else None
        return value


def _e2b_data(df):
        """E2B code-interpreter's `_repr_e2b_data_` for a DataFrame: to_dict(orient='list'), JSON-safe."""
        import math
        out = {}
        for key, column in df.to_dict(orient="list").items():
                vals = []
                for v in column:
                        if hasattr(v, "item") and not isinstance(v, (str, bytes)):
                                try:
                                        v = v.item()
                                except Exception:
                                        pass
                        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
                                # What E2B gets: jupyter_client's packer cleans the
                                # message ('nan', 'inf', '-inf') when JSON refuses it.
                                v = repr(v)
                        elif v is not None and not isinstance(v, (str, int, float, bool)):
                                v = v.isoformat() if hasattr(v, "isoformat") else str(v)
                        vals.append(v)
                out[str(key)] = vals
        return out


def _e2b_json(obj):
        """E2B's application/json formatter for lists and dicts: a JSON round trip
        (numpy values through .tolist()), shown expanded; None (the regular
        _repr_json_ lookup) when the value is not JSON."""
        import json
        try:
                value = json.loads(json.dumps(obj, default=lambda o: o.tolist(), allow_nan=False))
        except ValueError:
                # NaN or an infinity (or a cycle: no JSON, checked below). The
                # warning jupyter_client's packer prints then, with a path into
                # E2B's installation, is not copied (docs/SDK.md).
                try:
                        value = _json_clean(json.loads(json.dumps(obj, default=lambda o: o.tolist())))
                except (TypeError, AttributeError, ValueError, RecursionError):
                        return None
        except (TypeError, AttributeError, RecursionError):
                return None
        return value, {"expanded": True}


def _json_clean(v):
        """jupyter_client's json_clean as its packer applies it when JSON refuses
        a message: NaN and infinities become their repr."""
        if isinstance(v, float):
                return repr(v) if v != v or v in (float("inf"), float("-inf")) else v
        if isinstance(v, list):
                return [_json_clean(x) for x in v]
        if isinstance(v, dict):
                return {k: _json_clean(x) for k, x in v.items()}
        return v


def _figure_chart(fig):
        """E2B's e2b/chart of a figure (cellvm_charts); None, so no entry, when the
        figure has no chart or extraction failed: it never fails the display."""
        try:
                import cellvm_charts
        except Exception:
                return None
        return cellvm_charts.figure_chart(fig)


def _type_formatters(obj):
        """Formatters IPython registers by type: matplotlib figures (PNG, e2b/chart),
        DataFrames (e2b/data)."""
        fig_mod = sys.modules.get("matplotlib.figure")
        if fig_mod is not None and isinstance(obj, fig_mod.Figure):
                formatters = _figure_formatters()
                formatters["e2b/chart"] = _figure_chart
                return formatters
        if isinstance(obj, (list, dict)):
                return {"application/json": _e2b_json}
        pd = sys.modules.get("pandas")
        if pd is not None and isinstance(obj, pd.DataFrame):
                return {"e2b/data": _e2b_data}
        return {}


# Builtin types whose text/plain is repr() in IPython (pretty's _repr_pprint on a
# one-line repr, float_format '%r'), and builtins with no _repr_*_ methods at all.
_REPR_IS_TEXT_TYPES = frozenset({int, float, str, bool, complex, bytes})
_float_format = "%r"  # %precision changes it (and cellvm_pretty's, for floats inside containers)
_NO_REPR_METHODS_TYPES = _REPR_IS_TEXT_TYPES | {list, tuple, dict, set, frozenset, range}


def _excluded(mime, include, exclude):
        """Left out of a bundle by display()'s include/exclude."""
        return bool(include and mime not in include or exclude and mime in exclude)


def format_bundle(obj, include=None, exclude=None):
        """IPython's DisplayFormatter.format: (data, metadata), ({}, {}) if handled elsewhere."""
        t = type(obj)
        if t in _REPR_IS_TEXT_TYPES and not include and not exclude and _display_formatter is None:
                try:
                        return {"text/plain": repr(obj) if t is not float else _float_format % obj}, {}
                except Exception:  # an int over the str-digits limit: the full path reports it
                        pass
        builtin = t in _NO_REPR_METHODS_TYPES
        m = None if builtin else _real_method(obj, "_ipython_display_")
        if m is not None:
                m()
                return {}, {}
        data, md = {}, {}
        m = None if builtin else _real_method(obj, "_repr_mimebundle_")
        if m is not None:
                try:
                        r = m(include=include, exclude=exclude)
                except Exception as e:
                        _formatter_warning("mimebundle", obj, exc=e)
                        r = None
                if isinstance(r, tuple):
                        r, rmd = r
                        md.update({k: v for k, v in (rmd or {}).items() if not _excluded(k, include, exclude)})
                if r:
                        for k, v in dict(r).items():
                                # IPython filters the bundle too: the method may ignore include/exclude.
                                if _excluded(k, include, exclude):
                                        continue
                                v = _check_value(k, v)
                                if v is not None:
                                        data[k] = v
        by_type = _type_formatters(obj)
        for mime, meth in _FORMAT_ORDER:
                if _excluded(mime, include, exclude) or mime in data:
                        continue
                try:
                        value = None
                        found = False
                        if _display_formatter is not None:
                                found, value = _user_formatter(mime, obj)
                        if found:
                                meth = None
                        elif mime == "text/plain":
                                value = pretty_text(obj)
                        elif mime in by_type:
                                value = by_type[mime](obj)
                        if value is None and meth is not None and not builtin:
                                f = _real_method(obj, meth)
                                if f is None:
                                        continue
                                value = f()
                except Exception as e:
                        _formatter_warning(mime, obj, exc=e)
                        continue
                if value is None:
                        continue
                if isinstance(value, tuple) and len(value) == 2:
                        value, vmd = value
                        if vmd:
                                md[mime] = vmd
                if mime == "application/json" and isinstance(value, str):
                        # IPython 8's JSONFormatter._check_return, outside catch_format_error: the display fails.
                        raise AssertionError("JSON-as-string has been deprecated since IPython < 3")
                checked = _check_value(mime, value)
                if checked is None:
                        _formatter_warning(mime, obj, value=value)
                        continue
                data[mime] = checked
        if _display_formatter is not None:
                # Formatters added for other types (IPython calls them all, in order).
                for mime, f in list(_display_formatter.formatters.items()):
                        if mime in _FORMAT_KEYS or _excluded(mime, include, exclude) or mime in data:
                                continue
                        try:
                                value = f(obj)
                        except Exception as e:
                                _formatter_warning(mime, obj, exc=e)
                                continue
                        if value is not None:
                                data[mime] = value
        return data, md


# Longest wait for the agent to read output written before a message.
OUTPUT_DRAIN_TIMEOUT = 0.05


def _send(mtype, body, defer=False):
        """Sends one message after all output written before it (defer: in one
        write with the next message; only when no output can come in between,
        so the next message's flush and drain cover this one's too)."""
        if not defer:
                _flush_std()
                _cellvm.wait_output_drained(OUTPUT_DRAIN_TIMEOUT)
        try:
                _cellvm.send(_state.fd, mtype, _state.req_id, body, defer)
        except (OSError, ValueError) as e:
                # A figure's chart (every point of every line) can make the message
                # larger than the wire allows: the figure then goes without it, as
                # when extraction fails. JSON nested deeper than the wire allows
                # (a list in a list ... 50 deep) goes without its application/json:
                # its text/plain still shows. Nothing was written (encoding failed first).
                drop = "application/json" if isinstance(e, ValueError) else "e2b/chart"
                data = body.get("data")
                if (isinstance(e, OSError) and e.errno != errno.EMSGSIZE) or \
                                not isinstance(data, dict) or drop not in data:
                        raise
                body = dict(body, data={k: v for k, v in data.items() if k != drop})
                md = body.pop("metadata", None)
                if isinstance(md, dict):
                        md = {k: v for k, v in md.items() if k != drop}
                if md:
                        body["metadata"] = md
                _cellvm.send(_state.fd, mtype, _state.req_id, body, defer)


_capturing = []  # the output lists of running %%capture cells, innermost last


def publish_display_data(data, metadata=None, **_ignored):
        body = {"data": dict(data)}
        if metadata:
                body["metadata"] = dict(metadata)
        if _capturing:
                _capturing[-1].append(body)
                return
        _send(DISPLAY, body)


class CapturedIO:
        """IPython.utils.capture.CapturedIO: what a %%capture cell printed and
        displayed; show() (or calling it) outputs it again."""

        __module__ = "IPython.utils.capture"

        def __init__(self, stdout, stderr, outputs=None):
                self._stdout = stdout
                self._stderr = stderr
                self._outputs = outputs or []

        def __str__(self):
                return self.stdout

        @property
        def stdout(self):
                return self._stdout.getvalue() if self._stdout else ""

        @property
        def stderr(self):
                return self._stderr.getvalue() if self._stderr else ""

        @property
        def outputs(self):
                return [_RichOutput(o["data"], o.get("metadata")) for o in self._outputs]

        def show(self):
                if self.stdout:
                        sys.stdout.write(self.stdout)
                if self.stderr:
                        sys.stderr.write(self.stderr)
                for o in self._outputs:
                        publish_display_data(o["data"], o.get("metadata"))

        __call__ = show


class _RichOutput:
        """IPython.utils.capture.RichOutput: one captured display."""

        __module__ = "IPython.utils.capture"

        def __init__(self, data, metadata=None):
                self.data = data
                self.metadata = metadata or {}

        def display(self):
                publish_display_data(self.data, self.metadata)

        def _repr_mime_(self, mime):
                return self.data.get(mime)

        def _repr_html_(self):
                return self._repr_mime_("text/html")

        def _repr_markdown_(self):
                return self._repr_mime_("text/markdown")

        def _repr_svg_(self):
                return self._repr_mime_("image/svg+xml")

        def _repr_png_(self):
                return self._repr_mime_("image/png")

        def _repr_jpeg_(self):
                return self._repr_mime_("image/jpeg")

        def _repr_latex_(self):
                return self._repr_mime_("text/latex")

        def _repr_json_(self):
                return self._repr_mime_("application/json")

        def _repr_javascript_(self):
                return self._repr_mime_("application/javascript")


def display(*objs, include=None, exclude=None, metadata=None, transient=None, display_id=None,
            raw=False, clear=False, **kwargs):
        """IPython.display.display, publishing DISPLAY messages."""
        if not objs and display_id is None:
                return None
        if display_id is True:
                import uuid
                display_id = uuid.uuid4().hex
        if kwargs.get("update"):
                # update_display_data: E2B's server drops it and the protocol has no
                # such message, so an update shows nothing.
                return None
        for obj in objs:
                if raw:
                        publish_display_data(obj, metadata=metadata)
                        continue
                data, md = format_bundle(obj, include=include, exclude=exclude)
                if not data:
                        continue
                if metadata:
                        md.update(metadata)
                publish_display_data(data, md)
        return DisplayHandle(display_id) if display_id else None


class DisplayHandle:
        """IPython's DisplayHandle, returned by display(..., display_id=...)."""

        def __init__(self, display_id=None):
                if display_id is None:
                        import uuid
                        display_id = uuid.uuid4().hex
                self.display_id = display_id

        def __repr__(self):
                return f"<{type(self).__name__} display_id={self.display_id}>"

        def display(self, obj, **kwargs):
                display(obj, display_id=self.display_id, **kwargs)

        def update(self, obj, **kwargs):
                display(obj, display_id=self.display_id, update=True, **kwargs)


def _enable_data_resource_formatter(enable):
        """pandas' enable_data_resource_formatter (display.html.table_schema) on
        the kernel's formatters, where IPython may be absent or not imported."""
        if _state.kernel is None:
                return  # as pandas outside IPython
        formatters = _state.kernel.shell.display_formatter.formatters
        mime = "application/vnd.dataresource+json"
        if enable:
                if mime not in formatters:
                        cls = type("TableSchemaFormatter", (_Formatter,), {"__module__": "pandas.io.formats.printing"})
                        formatters[mime] = cls(mime, "_repr_data_resource_")
                formatters[mime].enabled = True
        elif mime in formatters:
                formatters[mime].enabled = False


def _on_pandas_printing_import(printing):
        printing.enable_data_resource_formatter = _enable_data_resource_formatter


def _on_pil_image_import(pil_image):
        """E2B's template (startup_scripts/0003_images.py): Image.show() displays
        the image instead of starting a viewer, and Image.save() to a path given
        as a str also displays it (before saving, as E2B does)."""
        cls = pil_image.Image
        if getattr(cls.save, "_cellvm_displays", False):
                return  # already patched (zygote, then again in the executor)
        real_save = cls.save

        def save(self, fp, format=None, **params):
                # matplotlib's savefig('x.png') saves through PIL: not an image the user made.
                if isinstance(fp, str) and sys._getframe(1).f_globals.get("__name__") != "matplotlib.image":
                        display(self)
                return real_save(self, fp, format, **params)

        def show(self, title=None):
                display(self)

        for new, old in ((save, real_save), (show, cls.show)):
                new.__name__, new.__qualname__, new.__doc__ = old.__name__, old.__qualname__, old.__doc__
                new.__wrapped__ = old
                new._cellvm_displays = True
        cls.save = save
        cls.show = show


class _ExitAutocall:
        """exit/quit as in ipykernel (ZMQExitAutocall): the cell ends quietly, no
        SystemExit. ipykernel then stops the kernel process; a cellvm context
        stays usable (its owner removes or restarts it)."""

        def __call__(self, keep_kernel=False):
                return None

        def __repr__(self):
                return "<IPython.core.autocall.ZMQExitAutocall object>"


class StdinNotImplementedError(NotImplementedError):
        """IPython.core.error.StdinNotImplementedError: the frontend takes no input."""


def _stdin_error_class():
        try:
                from IPython.core.error import StdinNotImplementedError as cls
                return cls
        except Exception:  # IPython is not in every guest image
                return StdinNotImplementedError


def _no_input(prompt=""):
        raise _stdin_error_class()("raw_input was called, but this frontend does not support input requests.")


def _no_getpass(prompt="Password: ", stream=None):
        raise _stdin_error_class()("getpass was called, but this frontend does not support input requests.")


def _running():
        return True


def _on_asyncio_import(asyncio):
        # A cell that imports asyncio sees the kernel's loop running from then on.
        kernel = _state.kernel
        if kernel is not None and kernel.cell_running:
                kernel.loop_enter()


def clear_output(wait=False):
        """IPython.display.clear_output: ipykernel flushes the streams and sends
        clear_output, which E2B's server drops (the protocol has no such
        message). IPython's own, outside a kernel, would print escape codes."""
        _flush_std()


def _ipython_get_ipython():
        """IPython.get_ipython (and IPython.core.getipython's): the kernel's shell."""
        kernel = _state.kernel
        return None if kernel is None else kernel.shell


_ipython_get_ipython.__name__ = _ipython_get_ipython.__qualname__ = "get_ipython"
_ipython_get_ipython.__module__ = "IPython.core.getipython"


def _on_ipython_getipython_import(mod):
        # IPython's own modules copy the name right after this one is imported.
        _ipython_get_ipython.__doc__ = mod.get_ipython.__doc__
        mod.get_ipython = _ipython_get_ipython


def _on_ipython_shell_import(mod):
        # As ipykernel registers its ZMQInteractiveShell: isinstance() checks and
        # traits typed InteractiveShellABC (Magics.shell) accept the shell.
        mod.InteractiveShellABC.register(Shell)


def _on_ipython_display_import(mod):
        # Route IPython.display.display & co. to our DISPLAY messages.
        mod.display = display
        mod.publish_display_data = publish_display_data
        mod.clear_output = clear_output


# ---------------------------------------------------------------- shell commands and magics


class SList(list):
        """IPython's SList, the result of `x = !cmd`: a list of lines with
        .s/.n/.l/.p and awk-like grep(), fields(), sort()."""

        l = list = property(lambda self: self)  # noqa: E741 - IPython's names
        s = spstr = property(lambda self: " ".join(self))
        n = nlstr = property(lambda self: "\n".join(self))

        @property
        def p(self):
                from pathlib import Path
                return [Path(x) for x in self if os.path.exists(x)]

        paths = p

        def grep(self, pattern, prune=False, field=None):
                """The lines matching pattern (a regex, case-insensitive, or a
                callable), or not matching with prune; in one field if given."""
                def target(line):
                        if field is None:
                                return line
                        parts = line.split()
                        return parts[field] if -len(parts) <= field < len(parts) else ""

                pred = (lambda x: re.search(pattern, x, re.IGNORECASE)) if isinstance(pattern, str) else pattern
                return SList([el for el in self if bool(pred(target(el))) != bool(prune)])

        def fields(self, *fields):
                """Whitespace-separated fields joined by a space (IndexErrors ignored);
                without arguments, each line split."""
                if not fields:
                        return [el.split() for el in self]
                res = SList()
                for parts in [f.split() for f in self]:
                        picked = []
                        for fd in fields:
                                try:
                                        picked.append(parts[fd])
                                except IndexError:
                                        pass
                        if picked:
                                res.append(" ".join(picked))
                return res

        def sort(self, field=None, nums=False):
                """A new SList sorted by a field (numerically with nums)."""
                dsu = [[SList([line]).fields(field) if field is not None else line, line] for line in self]
                if nums:
                        for item in dsu:
                                try:
                                        item[0] = int("".join(ch for ch in item[0] if ch.isdigit()))
                                except ValueError:
                                        item[0] = 0
                dsu.sort()
                return SList([t[1] for t in dsu])


# What IPython 8.5's %matplotlib --list shows (pylabtools.backends).
_MPL_GUIS = ["tk", "gtk", "gtk3", "gtk4", "wx", "qt4", "qt5", "qt6", "qt", "osx", "nbagg",
             "notebook", "agg", "svg", "pdf", "ps", "inline", "ipympl", "widget"]


class UsageError(Exception):
        """IPython's UsageError: a magic was misused or does not exist."""

        __module__ = "IPython.core.error"  # as sys.last_type shows it


# IPython's default aliases (IPython.core.alias.default_aliases on Linux):
# %ls & co. run through the shell as !ls would.
_ALIASES = {"mkdir": "mkdir", "rmdir": "rmdir", "mv": "mv", "rm": "rm", "cp": "cp", "cat": "cat",
            "ls": "ls -F --color", "ll": "ls -F -o --color",
            "lf": "ls -F -o --color %l | grep ^-", "lk": "ls -F -o --color %l | grep ^l",
            "ldir": "ls -F -o --color %l | grep /$", "lx": "ls -F -o --color %l | grep ^-..x"}
# IPython's other line magics in ipykernel (its lsmagic, aliases aside): the
# names automagic turns into magics, implemented here or not.
_IPYTHON_LINE_MAGICS = frozenset("""
alias alias_magic autoawait autocall automagic autosave bookmark cd clear colors conda config
connect_info debug dhist dirs doctest_mode ed edit env gui hist history killbgscripts less load
load_ext loadpy logoff logon logstart logstate logstop lsmagic macro magic man matplotlib more
notebook page pastebin pdb pdef pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch
psource pushd pwd pycat pylab qtconsole quickref recall rehashx reload_ext rep rerun reset
reset_selective run save sc set_env store sx system tb time timeit unalias unload_ext who who_ls
whos xdel xmode""".split())
_AUTOMAGIC_RE = re.compile(r"([\w.*]*)(.*)", re.S)
# Magics IPython marks @no_var_expand: their line is code, not $name/{expr} text.
_NO_VAR_EXPAND = frozenset({"time", "timeit", "prun", "debug"})


class _Autoreload:
        """IPython's autoreload extension (%load_ext autoreload) on IPython's
        own ModuleReloader: %autoreload [0-3], %aimport, and a check for
        changed modules before each cell."""

        def __init__(self, shell):
                from IPython.extensions.autoreload import ModuleReloader
                self.shell = shell
                self.reloader = ModuleReloader(shell)
                self.reloader.check_all = False
                self.reloader.autoload_obj = False
                self.loaded_modules = set(sys.modules)

        def autoreload(self, line):
                r = self.reloader
                if line == "":
                        r.check(True)
                elif line == "0":
                        r.enabled = False
                elif line in ("1", "2", "3"):
                        r.check_all = line != "1"
                        r.autoload_obj = line == "3"
                        r.enabled = True

        def aimport(self, line):
                r = self.reloader
                if not line:
                        print("Modules to reload:\n" + ("all-except-skipped" if r.check_all
                                                         else " ".join(sorted(r.modules))))
                        print("\nModules to skip:\n" + " ".join(sorted(r.skip_modules)))
                elif line.startswith("-"):
                        r.mark_module_skipped(line[1:])
                else:
                        for name in [n.strip() for n in line.split(",")]:
                                top_module, top_name = r.aimport_module(name)
                                self.shell.user_ns[top_name] = top_module

        def pre_run_cell(self):
                if self.reloader.enabled:
                        try:
                                self.reloader.check()
                        except Exception:  # as IPython: a failed check never stops the cell
                                pass

        def post_execute(self):
                """Modules imported by the cell: their times now, so they count as fresh."""
                new = set(sys.modules) - self.loaded_modules
                for name in new:
                        _, mtime = self.reloader.filename_and_mtime(sys.modules[name])
                        if mtime is not None:
                                self.reloader.modules_mtimes[name] = mtime
                self.loaded_modules.update(new)


def _format_time(seconds, precision=3):
        """IPython's _format_time."""
        if seconds >= 60:
                minutes, s = divmod(seconds, 60)
                h, m = divmod(minutes, 60)
                parts = []
                for n, suffix in ((h, "h"), (m, "min"), (s, "s")):
                        if n:
                                parts.append(f"{n:.0f}{suffix}")
                return " ".join(parts)
        units = ["s", "ms", "\xb5s", "ns"]
        scaling = [1, 1e3, 1e6, 1e9]
        order = min(-int(__import__("math").floor(__import__("math").log10(seconds)) // 3), 3) \
            if seconds > 0.0 else 3
        return "%.*g %s" % (precision, seconds * scaling[order], units[order])


class _TimeitResult:
        """IPython's TimeitResult: what %timeit prints (and returns with -o)."""

        def __init__(self, loops, repeat, all_runs, precision=3):
                self.loops, self.repeat, self.timings = loops, repeat, all_runs
                self._precision = precision
                self.all_runs = [t * loops for t in all_runs]
                self.best, self.worst = min(all_runs), max(all_runs)
                self.average = sum(all_runs) / len(all_runs)
                self.stdev = (sum((t - self.average) ** 2 for t in all_runs) / len(all_runs)) ** 0.5

        def __str__(self):
                return ("{mean} \xb1 {std} per loop (mean \xb1 std. dev. of {runs} run{rp}, "
                        "{loops:,} loop{lp} each)").format(
                            mean=_format_time(self.average, self._precision),
                            std=_format_time(self.stdev, self._precision),
                            runs=self.repeat, loops=self.loops, rp="" if self.repeat == 1 else "s",
                            lp="" if self.loops == 1 else "s")

        def __repr__(self):
                return f"<TimeitResult : {self}>"


_NOT_HIDDEN = object()


# ---------------------------------------------------------------- IPython's shell API


class ExecutionInfo:
        """IPython's ExecutionInfo: what pre_run_cell callbacks get."""

        __module__ = "IPython.core.interactiveshell"
        raw_cell = None
        store_history = False
        silent = False
        shell_futures = True
        cell_id = None

        def __init__(self, raw_cell, store_history, silent, shell_futures, cell_id):
                self.raw_cell = raw_cell
                self.store_history = store_history
                self.silent = silent
                self.shell_futures = shell_futures
                self.cell_id = cell_id

        def __repr__(self):
                raw_cell = (self.raw_cell[:50] + "..") if len(self.raw_cell) > 50 else self.raw_cell
                return ('<%s object at %x, raw_cell="%s" store_history=%s silent=%s shell_futures=%s '
                        'cell_id=%s>' % (type(self).__qualname__, id(self), raw_cell, self.store_history,
                                         self.silent, self.shell_futures, self.cell_id))


class ExecutionResult:
        """IPython's ExecutionResult: what post_run_cell callbacks get."""

        __module__ = "IPython.core.interactiveshell"
        execution_count = None
        error_before_exec = None
        error_in_exec = None
        info = None
        result = None

        def __init__(self, info):
                self.info = info

        @property
        def success(self):
                return (self.error_before_exec is None) and (self.error_in_exec is None)

        def raise_error(self):
                if self.error_before_exec is not None:
                        raise self.error_before_exec
                if self.error_in_exec is not None:
                        raise self.error_in_exec

        def __repr__(self):
                return ('<%s object at %x, execution_count=%s error_before_exec=%s error_in_exec=%s '
                        'info=%s result=%s>' % (type(self).__qualname__, id(self), self.execution_count,
                                                self.error_before_exec, self.error_in_exec,
                                                repr(self.info), repr(self.result)))


def _flush_figures_callback():
        """ipykernel's post_execute flush_figures, as events lists it once the
        inline backend is active."""
        _flush_figures()


_flush_figures_callback.__name__ = _flush_figures_callback.__qualname__ = "flush_figures"
_flush_figures_callback.__module__ = "matplotlib_inline.backend_inline"


def _is_pyplot_draw(func):
        """pyplot's post_execute callback (install_repl_displayhook): cellvm
        emulates it (_draw_all_first) rather than drawing every figure."""
        plt = sys.modules.get("matplotlib.pyplot")
        return plt is not None and func is getattr(plt, "_draw_all_if_interactive", None)


_EVENTS = ("pre_execute", "pre_run_cell", "post_execute", "post_run_cell", "shell_initialized")


class EventManager:
        """IPython's EventManager (shell.events): callbacks around each cell."""

        __module__ = "IPython.core.events"

        def __init__(self, shell):
                self.shell = shell
                self.callbacks = {n: [] for n in _EVENTS}
                # As in ipykernel: pyplot (imported after IPython there) registered
                # its draw, and the inline backend, once active, its flush.
                plt = sys.modules.get("matplotlib.pyplot")
                if plt is not None and _draw_all_first and hasattr(plt, "_draw_all_if_interactive"):
                        self.callbacks["post_execute"].append(plt._draw_all_if_interactive)
                if _mpl_activated:
                        self.callbacks["post_execute"].append(_flush_figures_callback)

        def register(self, event, function):
                if not callable(function):
                        raise TypeError("Need a callable, got %r" % function)
                if event not in _EVENTS:
                        raise KeyError(event)
                if function not in self.callbacks[event]:
                        self.callbacks[event].append(self._adapt(event, function))
                        kernel = self.shell.kernel
                        if event in ("post_execute", "post_run_cell") and function is not _flush_figures_callback \
                                        and not _is_pyplot_draw(function):
                                kernel._events_registered()

        @staticmethod
        def _adapt(event, function):
                """IPython's callback_prototype.adapt: pre/post_run_cell callbacks
                taking no argument are still called."""
                if event not in ("pre_run_cell", "post_run_cell"):
                        return function
                import inspect
                try:
                        inspect.signature(function).bind(None)
                        return function
                except TypeError:
                        pass
                except ValueError:
                        return function

                @functools.wraps(function)
                def adapted(*args, **kwargs):
                        return function()
                return adapted

        def unregister(self, event, function):
                if function in self.callbacks[event]:
                        return self.callbacks[event].remove(function)
                for callback in self.callbacks[event]:
                        try:
                                if callback.__wrapped__ is function:
                                        return self.callbacks[event].remove(callback)
                        except AttributeError:
                                pass
                raise ValueError("Function {!r} is not registered as a {} callback".format(function, event))

        def trigger(self, event, *args, **kwargs):
                for func in self.callbacks[event][:]:
                        if event == "post_execute" and _is_pyplot_draw(func):
                                continue
                        try:
                                func(*args, **kwargs)
                        except (Exception, KeyboardInterrupt) as e:
                                print("Error in callback {} (for {}):".format(func, event))
                                self.shell.showtraceback(e)

        def _user_callbacks(self):
                """Whether a cell must go through the events (anything but the
                figure callbacks that cellvm runs on its own)."""
                for event, funcs in self.callbacks.items():
                        for f in funcs:
                                if f is not _flush_figures_callback and not _is_pyplot_draw(f):
                                        return True
                return False


def _shell_events():
        kernel = _state.kernel
        return None if kernel is None else kernel.shell.__dict__.get("events")


def _type_key(cls):
        """(module, name): how a printer registered by name finds its type."""
        return getattr(cls, "__module__", None), getattr(cls, "__name__", None)


class _Formatter:
        """IPython's BaseFormatter for one MIME type: printers by type (and by
        'module.name'), and enabled. The text/plain one (PlainTextFormatter)
        shares its tables with the pretty printer: printers take (obj, p, cycle)."""

        def __init__(self, mime, print_method, type_printers=None, deferred_printers=None):
                self.format_type = mime
                self.print_method = print_method
                self.enabled = True
                self.type_printers = {} if type_printers is None else type_printers
                self.deferred_printers = {} if deferred_printers is None else deferred_printers
                self.singleton_printers = {}

        def __repr__(self):
                return f"<{self.__module__}.{type(self).__qualname__} object at {id(self):#x}>"

        def __contains__(self, typ):
                try:
                        self.lookup_by_type(typ)
                except KeyError:
                        return False
                return True

        def __call__(self, obj):
                """IPython's BaseFormatter.__call__ (errors propagate to the caller)."""
                if not self.enabled:
                        return None
                if self.format_type == "text/plain":
                        return pretty_text(obj)
                printer = self._printer(obj)
                if printer is not None:
                        return printer(obj)
                method = _real_method(obj, self.print_method) if self.print_method else None
                return method() if method is not None else None

        def _printer(self, obj):
                if not self.type_printers and not self.deferred_printers and not self.singleton_printers:
                        return None
                try:
                        return self.lookup(obj)
                except KeyError:
                        return None

        def lookup(self, obj):
                if id(obj) in self.singleton_printers:
                        return self.singleton_printers[id(obj)]
                return self.lookup_by_type(getattr(obj, "__class__", None) or type(obj))

        def lookup_by_type(self, typ):
                if isinstance(typ, str):
                        key = tuple(typ.rsplit(".", 1))
                        if key in self.deferred_printers:
                                return self.deferred_printers[key]
                        for cls in self.type_printers:
                                if _type_key(cls) == key:
                                        return self.type_printers[cls]
                else:
                        for cls in getattr(typ, "__mro__", (typ,)):
                                if cls in self.type_printers or self._in_deferred_types(cls):
                                        return self.type_printers[cls]
                raise KeyError("No registered printer for {0!r}".format(typ))

        def _in_deferred_types(self, cls):
                key = _type_key(cls)
                printer = None
                if key in self.deferred_printers:
                        printer = self.deferred_printers.pop(key)
                        self.type_printers[cls] = printer
                return printer

        def for_type(self, typ, func=None):
                if isinstance(typ, str):
                        return self.for_type_by_name(*typ.rsplit(".", 1), func)
                try:
                        old = self.lookup_by_type(typ)
                except KeyError:
                        old = None
                if func is not None:
                        self.type_printers[typ] = func
                return old

        def for_type_by_name(self, type_module, type_name, func=None):
                key = (type_module, type_name)
                try:
                        old = self.lookup_by_type("%s.%s" % key)
                except KeyError:
                        old = None
                if func is not None:
                        self.deferred_printers[key] = func
                return old

        def pop(self, typ, default=_NOT_HIDDEN):
                if isinstance(typ, str):
                        key = tuple(typ.rsplit(".", 1))
                        if key not in self.deferred_printers:
                                for cls in self.type_printers:
                                        if _type_key(cls) == key:
                                                typ = cls
                                                break
                        else:
                                return self.deferred_printers.pop(key)
                if typ in self.type_printers:
                        return self.type_printers.pop(typ)
                if self._in_deferred_types(typ):
                        return self.type_printers.pop(typ)
                if default is _NOT_HIDDEN:
                        raise KeyError("No registered value for {0!r}".format(typ))
                return default


_FORMATTER_NAMES = {"text/plain": "PlainTextFormatter", "text/html": "HTMLFormatter",
                    "text/markdown": "MarkdownFormatter", "image/svg+xml": "SVGFormatter",
                    "image/png": "PNGFormatter", "application/pdf": "PDFFormatter",
                    "image/jpeg": "JPEGFormatter", "text/latex": "LatexFormatter",
                    "application/json": "JSONFormatter", "application/javascript": "JavascriptFormatter"}

# Set once a cell reached shell.display_formatter: format_bundle consults it then.
_display_formatter = None


class DisplayFormatter:
        """IPython's DisplayFormatter (shell.display_formatter): .formatters by
        MIME type, which format_bundle consults once this exists."""

        __module__ = "IPython.core.formatters"

        def __init__(self):
                import cellvm_pretty
                self.formatters = {}
                for mime, meth in _REPR_METHODS:
                        cls = type(_FORMATTER_NAMES[mime], (_Formatter,), {"__module__": "IPython.core.formatters"})
                        if mime == "text/plain":
                                f = cls(mime, None, cellvm_pretty._type_printers(), cellvm_pretty._DEFERRED_PRINTERS)
                        else:
                                f = cls(mime, meth)
                        self.formatters[mime] = f
                self.plain_text_only = False

        @property
        def active_types(self):
                return [mime for mime, f in self.formatters.items() if getattr(f, "enabled", True)]

        def format(self, obj, include=None, exclude=None):
                return format_bundle(obj, include, exclude)


def _user_formatter(mime, obj):
        """(found, value) from shell.display_formatter for `mime`: a printer
        registered for the object's type, a disabled formatter (found, None),
        or a formatter object the user put in place."""
        f = _display_formatter.formatters.get(mime)
        if f is None:
                return mime in _REPR_METHODS_DICT, None  # a formatter deleted: that type no more
        if not isinstance(f, _Formatter):
                return True, f(obj)
        if not f.enabled:
                return True, None
        if mime == "text/plain":
                return False, None  # the pretty printer reads the shared tables
        printer = f._printer(obj)
        if printer is None:
                return False, None
        return True, printer(obj)


_INTERACTIVITY = ("all", "last", "last_expr", "none", "last_expr_or_assign")


def _magic_attr(kind, name):
        """The Shell attribute a line or cell magic lives in."""
        return ("magic_" if kind == "line" else "cell_magic_") + name


def _trait_error(message):
        try:
                from traitlets import TraitError
        except ImportError:
                TraitError = ValueError
        return TraitError(message)


def _render_signature(sig, name):
        """IPython's _render_signature: one line, or one parameter a line past 75
        characters."""
        import inspect
        result = []
        pos_only = False
        kw_only = True
        for param in sig.parameters.values():
                if param.kind == inspect.Parameter.POSITIONAL_ONLY:
                        pos_only = True
                elif pos_only:
                        result.append("/")
                        pos_only = False
                if param.kind == inspect.Parameter.VAR_POSITIONAL:
                        kw_only = False
                elif param.kind == inspect.Parameter.KEYWORD_ONLY and kw_only:
                        result.append("*")
                        kw_only = False
                result.append(str(param))
        if pos_only:
                result.append("/")
        if len(name) + sum(len(r) + 2 for r in result) > 75:
                rendered = "{}(\n{})".format(name, "".join("    {},\n".format(r) for r in result))
        else:
                rendered = "{}({})".format(name, ", ".join(result))
        if sig.return_annotation is not inspect.Signature.empty:
                rendered += " -> {}".format(inspect.formatannotation(sig.return_annotation))
        return rendered


class Shell:
        """What `get_ipython()` returns: enough of InteractiveShell for transformed cells.
        Named as ipykernel's (below): libraries tell a notebook by the class
        (pandas' in_ipython_frontend, tqdm, plotly)."""

        def __init__(self, kernel):
                self.kernel = kernel
                self.user_ns = kernel.ns
                self.extensions = set()  # loaded by %load_ext (autoreload aside)
                self.aliases = dict(_ALIASES)
                self.dir_stack = []  # %pushd/%popd
                self._interactivity = None  # the trait's value (set on the shell, or %config)
                self._plain_interactivity = None  # set on the shell once the trait is hidden

        @staticmethod
        def _class_interactivity():
                """What a notebook set on IPython's InteractiveShell class (a common
                idiom): that string hides the trait for every shell, or None."""
                m = sys.modules.get("IPython.core.interactiveshell")
                value = getattr(getattr(m, "InteractiveShell", None), "ast_node_interactivity", None)
                return value if isinstance(value, str) else None

        @property
        def ast_node_interactivity(self):
                """InteractiveShell.ast_node_interactivity, as IPython resolves it."""
                hidden_by = self._class_interactivity()
                if hidden_by is not None:
                        return self._plain_interactivity if self._plain_interactivity is not None else hidden_by
                return self._interactivity if self._interactivity is not None else "last_expr"

        @ast_node_interactivity.setter
        def ast_node_interactivity(self, value):
                if self._class_interactivity() is not None:
                        self._plain_interactivity = value  # a plain attribute: no validation
                        return
                if value not in _INTERACTIVITY:
                        raise _trait_error(f"The 'ast_node_interactivity' trait of a ZMQInteractiveShell "
                                           f"instance expected any of {list(_INTERACTIVITY)}, not the "
                                           f"{type(value).__name__} {value!r}.")
                self._interactivity = value

        @ast_node_interactivity.deleter
        def ast_node_interactivity(self):
                if self._class_interactivity() is None:
                        raise AttributeError("__delete__")  # a trait cannot be deleted
                if self._plain_interactivity is None:
                        raise AttributeError("'ZMQInteractiveShell' object has no attribute 'ast_node_interactivity'")
                self._plain_interactivity = None

        def var_expand(self, cmd):
                """$name and {expr} expansion as IPython does for ! lines (best effort)."""
                ns = self.user_ns

                def brace(m):
                        try:
                                return str(eval(m.group(1), ns))
                        except Exception:
                                return m.group(0)

                cmd = re.sub(r"(?<!\{)\{([^{}]+)\}(?!\})", brace, cmd)
                cmd = re.sub(r"(?<!\$)\$([A-Za-z_]\w*)",
                             lambda m: str(ns[m.group(1)]) if m.group(1) in ns else m.group(0), cmd)
                return cmd.replace("$$", "$")

        def system(self, cmd):
                """`!cmd` as ipykernel runs it (IPython's pexpect-based system):
                /bin/sh on a pseudo-terminal of 24x80, stderr merged into stdout,
                so programs see a tty (ls in columns, CRLF line ends) and the
                output streams as it comes."""
                import codecs
                import fcntl
                import pty
                import struct
                import termios

                _flush_std()
                master, slave = pty.openpty()
                try:
                        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
                        p = subprocess.Popen(["/bin/sh", "-c", self.var_expand(cmd)], stdin=slave,
                                             stdout=slave, stderr=slave, start_new_session=True)
                finally:
                        os.close(slave)
                decoder = codecs.getincrementaldecoder("utf-8")("replace")
                try:
                        while True:
                                try:
                                        chunk = os.read(master, 65536)
                                except OSError:  # EIO: every holder of the slave is gone
                                        chunk = b""
                                if not chunk:
                                        break
                                sys.stdout.write(decoder.decode(chunk))
                                sys.stdout.flush()
                except KeyboardInterrupt:
                        os.write(master, b"\x03")  # ^C as a terminal sends it
                        try:
                                p.wait(timeout=1)
                        except subprocess.TimeoutExpired:
                                p.kill()
                        raise
                finally:
                        sys.stdout.write(decoder.decode(b"", final=True))
                        os.close(master)
                        if p.poll() is None:
                                p.kill()
                        rc = p.wait()
                self.user_ns["_exit_code"] = rc

        def getoutput(self, cmd, split=True):
                _flush_std()
                p = subprocess.run(["/bin/sh", "-c", self.var_expand(cmd)], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
                text = p.stdout.decode(errors="replace")
                return SList(text.splitlines()) if split else text

        def run_line_magic(self, name, line):
                fn = getattr(self, "magic_" + name, None)
                if fn is None and name in ("autoreload", "aimport") and self.kernel.autoreload is not None:
                        fn = getattr(self.kernel.autoreload, name)
                if fn is None and name in self.aliases:
                        fn = functools.partial(self._alias, name)
                if fn is None:
                        raise UsageError(f"Line magic function `%{name}` not found.")
                if name not in _NO_VAR_EXPAND:
                        line = self.var_expand(line)
                return fn(line.strip())

        def run_cell_magic(self, name, line, cell):
                fn = getattr(self, "cell_magic_" + name, None)
                if fn is None:
                        raise UsageError(f"Cell magic `%%{name}` not found.")
                if name not in _NO_VAR_EXPAND:
                        line = self.var_expand(line)
                return fn(line.strip(), cell)

        def _alias(self, name, rest):
                """IPython's Alias.__call__: %l is the whole line, each %s one word."""
                cmd = self.aliases[name]
                if "%l" in cmd:
                        cmd, rest = cmd.replace("%l", rest), ""
                nargs = cmd.count("%s") - cmd.count("%%s")
                if nargs == 0:
                        if cmd.find("%%s") >= 1:
                                cmd = cmd.replace("%%s", "%s")
                        cmd = f"{cmd} {rest}"
                else:
                        args = rest.split(None, nargs)
                        if len(args) < nargs:
                                raise UsageError(f"Alias <{name}> requires {nargs} arguments, {len(args)} given.")
                        cmd = "%s %s" % (cmd % tuple(args[:nargs]), " ".join(args[nargs:]))
                self.system(cmd)

        def magic_alias(self, line):
                """IPython's %alias NAME CMD; without arguments, the aliases."""
                if not line:
                        print("Total number of aliases:", len(self.aliases))
                        sys.stdout.flush()
                        return sorted(self.aliases.items())
                name, cmd = line.split(None, 1)  # one word: IPython's ValueError too
                if name in ("cd", "popd", "pushd", "dhist", "alias", "unalias"):
                        print(f"The name {name} can't be aliased because it is a keyword or builtin.")
                elif name in _IPYTHON_LINE_MAGICS or hasattr(self, "magic_" + name):
                        print(f"The name {name} can't be aliased because it is another magic command.")
                elif cmd.count("%s") - cmd.count("%%s") > 0 and "%l" in cmd:
                        print("The %s and %l specifiers are mutually exclusive in alias definitions.")
                else:
                        self.aliases[name] = cmd

        def magic_sx(self, line):
                """IPython's %sx / %system: the command's output lines (an SList)."""
                return self.getoutput(line)

        magic_system = magic_sx

        def magic_unalias(self, line):
                """IPython's %unalias NAME."""
                name = line.strip()
                if name not in self.aliases:
                        print(f"{name} is not an alias")  # IPython's ValueError, printed
                        return
                del self.aliases[name]

        def magic_reset_selective(self, line):
                """IPython's %reset_selective [-f] REGEX: the user's names matching it
                go; without -f it asks (input(), which fails here)."""
                args = line.split()
                force = "-f" in args
                args = [a for a in args if a != "-f"]
                if not force and input("Once deleted, variables cannot be recovered. "
                                       "Proceed (y/[n])? ").strip().lower() not in ("y", "yes"):
                        print("Nothing done.")
                        return
                if not args:
                        raise TypeError("regex must be a string or compiled pattern")
                m = re.compile(args[0])
                for name in self.magic_who_ls(""):
                        if m.search(name):
                                del self.user_ns[name]

        def _find_object(self, oname):
                """IPython's _object_find: a dotted name in the user's namespace or
                the builtins; (found, obj)."""
                parts = oname.split(".")
                if not oname or not all(p.isidentifier() for p in parts):
                        return False, None
                for ns in (self.user_ns, builtins.__dict__):
                        if parts[0] in ns:
                                obj = ns[parts[0]]
                                try:
                                        for attr in parts[1:]:
                                                obj = getattr(obj, attr)
                                except Exception:
                                        return False, None
                                return True, obj
                return False, None

        def magic_pdef(self, line):
                """IPython's %pdef: the call signature, printed."""
                import inspect
                found, obj = self._find_object(line.strip())
                if not found:
                        print(f"Object `{line.strip()}` not found.")
                        return
                if not callable(obj):
                        print("Object is not callable.")
                        return
                header = "Class constructor information:\n" if inspect.isclass(obj) else ""
                try:
                        hdef = _render_signature(inspect.signature(obj), line.strip())
                except Exception:
                        print(f"No definition header found for {line.strip()}")
                        return
                print(header, hdef + "\n", end=" ")

        def magic_pdoc(self, line):
                """IPython's %pdoc: the docstring goes to the pager (a payload E2B
                drops): only a miss is printed."""
                import inspect
                found, obj = self._find_object(line.strip())
                if not found:
                        print(f"Object `{line.strip()}` not found.")
                elif inspect.getdoc(obj) is None and not callable(obj):
                        print(f"No documentation found for {line.strip()}")

        def magic_psource(self, line):
                """IPython's %psource: the source goes to the pager (a payload E2B drops)."""
                import inspect
                if not line.strip():
                        raise UsageError("Missing object name.")
                found, obj = self._find_object(line.strip())
                if not found:
                        print(f"Object `{line.strip()}` not found.")
                        return
                try:
                        inspect.getsource(obj)
                except Exception:
                        print(f"No source found for {line.strip()}")

        def _find_user_code(self, target):
                """IPython's find_user_code: input history, a file (.py optional), or
                a string in the user's namespace."""
                text = self._history_range(target)
                if text:
                        return text
                for path in (target + ".py", target) if not target.endswith(".py") else (target,):
                        path = os.path.expanduser(path)
                        if os.path.isfile(path):
                                with open(path, encoding="utf-8", errors="replace") as f:
                                        return f.read()
                        if os.path.isdir(path):
                                raise ValueError(f"'{target}' is a directory, not a regular file.")
                try:
                        obj = eval(target, self.user_ns)
                except Exception as e:
                        raise ValueError(f"'{target}' was not found in history, as a file, url, "
                                         "nor in the user namespace.") from e
                if isinstance(obj, str):
                        return obj
                raise TypeError(f"{target} is neither a string nor a macro.")

        def magic_load(self, line):
                """IPython's %load: the code becomes the frontend's next input (a
                payload E2B drops): only errors show."""
                args = [a for a in line.split() if not a.startswith("-")]
                if not args:
                        raise UsageError("Missing filename, URL, input history range, or element in "
                                         "the user namespace.")
                self._find_user_code(args[-1])

        magic_loadpy = magic_load

        def magic_pycat(self, line):
                """IPython's %pycat: the file to the pager (a payload E2B drops)."""
                if not line.strip():
                        raise UsageError("Missing filename, URL, input history range, or element in "
                                         "the user namespace.")
                try:
                        self._find_user_code(line.strip())
                except (ValueError, OSError):
                        print("Error: no such file, variable, URL, history range or macro")

        _RANGE_RE = re.compile(r"((?P<startsess>~?\d+)/)?(?P<start>\d+)?((?P<sep>[\-:])"
                               r"((?P<endsess>~?\d+)/)?(?P<end>\d+))?$")

        def _history_lines(self, ranges):
                """(line, raw input) of this session for IPython's range strings ("4",
                "2-5", "2:5", "~0/3"); other sessions have nothing here."""
                raw = self.kernel.raw_in
                out = []
                for spec in ranges:
                        m = self._RANGE_RE.match(spec)
                        if not m or m.group("startsess") not in (None, "~0", "0") \
                           or m.group("endsess") not in (None, "~0", "0"):
                                continue
                        start = int(m.group("start") or 1)
                        end = int(m.group("end") or start) if m.group("end") or m.group("start") else len(raw) - 1
                        if m.group("sep") == ":":
                                end -= 1
                        out.extend((i, raw[i]) for i in range(start, min(end, len(raw) - 1) + 1))
                return out

        def _history_range(self, target):
                return "\n".join(text for _, text in self._history_lines(target.split())
                                 if text) if target and target[0].isdigit() else ""

        def magic_history(self, line):
                """IPython's %history of this session: [-n] [-p] [-t] [-l [N]] [-g PATTERN]
                [-f FILE] [RANGE...]."""
                import fnmatch
                import shlex
                args = shlex.split(line)
                nums = pyprompts = translated = False
                limit = pattern = filename = None
                ranges = []
                i = 0
                while i < len(args):
                        a = args[i]
                        if a == "-n":
                                nums = True
                        elif a == "-p":
                                pyprompts = True
                        elif a == "-t":
                                translated = True
                        elif a == "-l":
                                limit = 10
                                if i + 1 < len(args) and args[i + 1].isdigit():
                                        i += 1
                                        limit = int(args[i])
                        elif a == "-g":
                                pattern = []
                                while i + 1 < len(args) and not args[i + 1].startswith("-"):
                                        i += 1
                                        pattern.append(args[i])
                        elif a == "-f" and i + 1 < len(args):
                                i += 1
                                filename = args[i]
                        elif not a.startswith("-"):
                                ranges.append(a)
                        i += 1
                source = self.kernel.In if translated else self.kernel.raw_in
                current = len(source) - 1
                if pattern is not None:
                        glob = "*" + " ".join(pattern) + "*"
                        hist = [(n, source[n]) for n in range(1, current + 1) if fnmatch.fnmatch(source[n], glob)]
                        nums = True
                elif limit is not None:
                        hist = [(n, source[n]) for n in range(max(1, current - limit), current)]
                else:
                        hist = [(n, source[n]) for n, _ in self._history_lines(ranges or [""])]
                out = open(os.path.expanduser(filename), "w", encoding="utf-8") if filename else sys.stdout
                try:
                        for n, text in hist:
                                text = text.expandtabs(4).rstrip()
                                multiline = "\n" in text
                                if nums:
                                        print(f"{str(n).rjust(4)}:{chr(10) if multiline else ' '}", end="", file=out)
                                if pyprompts:
                                        print(">>> ", end="", file=out)
                                        if multiline:
                                                text = "\n... ".join(text.splitlines()) + "\n..."
                                print(text, file=out)
                finally:
                        if filename:
                                out.close()

        magic_hist = magic_history

        def get_ipython(self):
                return self

        # What libraries and notebooks use of InteractiveShell beyond magics.
        colors = "Neutral"  # the trait's default (sympy's init_printing picks its colour from it)

        @functools.cached_property
        def events(self):
                return EventManager(self)

        @functools.cached_property
        def display_formatter(self):
                global _display_formatter
                _display_formatter = DisplayFormatter()
                return _display_formatter

        @functools.cached_property
        def config(self):
                """The kernel's traitlets config: notebook detection looks for IPKernelApp."""
                try:
                        from traitlets.config import Config
                except ImportError:
                        Config = dict
                return Config({"IPKernelApp": Config()})

        @property
        def execution_count(self):
                return self.kernel.count

        @property
        def user_ns_hidden(self):
                return self.kernel.ns_hidden()

        def magic(self, arg_s):
                """IPython's deprecated magic('name args')."""
                import warnings as _warnings
                _warnings.warn("`magic(...)` is deprecated since IPython 0.13 (warning added in "
                               "8.1), use run_line_magic(magic_name, parameter_s).",
                               DeprecationWarning, stacklevel=2)
                name, _, rest = arg_s.partition(" ")
                return self.run_line_magic(name.lstrip("%"), rest)

        def showtraceback(self, exc=None, *args, **kwargs):
                """IPython's showtraceback: the error shown, the cell goes on."""
                if exc is None or not isinstance(exc, BaseException):
                        # IPython's _get_exc_info: the error being handled, else the last one.
                        exc = sys.exc_info()[1] or getattr(sys, "last_value", None)
                if exc is None:
                        sys.stderr.write("No traceback available to show.\n")
                else:
                        self.kernel.report_error(exc)

        def enable_gui(self, gui=None):
                return None

        def register_magic_function(self, func, magic_kind="line", magic_name=None):
                """IPython's register_magic_function (@register_line_magic and kin)."""
                name = magic_name or func.__name__
                if magic_kind not in ("line", "cell", "line_cell"):
                        raise ValueError(f"magic_kind must be one of ['line', 'cell', 'line_cell'], "
                                         f"{magic_kind} given")
                for kind in ("line", "cell"):
                        if kind in magic_kind:
                                setattr(self, _magic_attr(kind, name), func)

        def register_magics(self, *objs):
                """IPython's register_magics: Magics classes (or instances)."""
                for m in objs:
                        if isinstance(m, type):
                                m = m(shell=self)
                        for kind, table in getattr(m, "magics", {}).items():
                                for name, meth in table.items():
                                        if isinstance(meth, str):
                                                meth = getattr(m, meth)
                                        setattr(self, _magic_attr(kind, name), meth)

        def find_magic(self, magic_name, magic_kind="line"):
                return getattr(self, _magic_attr(magic_kind, magic_name), None)

        find_line_magic = find_magic

        def find_cell_magic(self, magic_name):
                return self.find_magic(magic_name, "cell")

        def push(self, variables, interactive=True):
                if isinstance(variables, str):
                        frame = sys._getframe(1)
                        variables = {n: eval(n, frame.f_globals, frame.f_locals) for n in variables.split()}
                self.user_ns.update(variables)

        def ev(self, expr):
                return eval(expr, self.user_ns)

        def ex(self, cmd):
                exec(cmd, self.user_ns)

        def automagic(self, cell):
                """IPython's automagic, applied by its prefilter to one-line cells
                only: a line starting with a magic's name runs that magic (`pwd`,
                `ls -l`, `pip install x`) unless a variable, builtin or keyword
                has the name, or the line assigns to it. None if it does not apply."""
                if not cell[:1].isalpha():  # every magic's name starts with a letter
                        return None
                end = cell.find("\n")
                if end != -1 and cell[end:].strip("\n"):
                        return None
                ifun, rest = _AUTOMAGIC_RE.match(cell.rstrip("\n")).groups()
                rest = rest.lstrip()
                if not ifun or rest[:1] in ("=", ","):
                        return None
                if not (ifun in _IPYTHON_LINE_MAGICS or ifun in self.aliases or hasattr(self, "magic_" + ifun)
                        or ifun in ("autoreload", "aimport") and self.kernel.autoreload is not None):
                        return None
                import keyword
                if ifun in self.user_ns or ifun in builtins.__dict__ or keyword.iskeyword(ifun):
                        return None
                return f"get_ipython().run_line_magic({ifun!r}, {rest!r})\n"

        def magic_load_ext(self, line):
                """IPython's %load_ext: autoreload on IPython's own reloader, else
                the module's load_ipython_extension(shell)."""
                if not line:
                        raise UsageError("Missing module name.")
                name = line
                if name == "autoreload":
                        if self.kernel.autoreload is not None:
                                print(f"The {name} extension is already loaded. To reload it, use:")
                                print("  %reload_ext", name)
                                return
                        self.kernel.autoreload = _Autoreload(self)
                        return
                if name in self.extensions:
                        print(f"The {name} extension is already loaded. To reload it, use:")
                        print("  %reload_ext", name)
                        return
                mod = importlib.import_module(name)
                load = getattr(mod, "load_ipython_extension", None)
                if load is None:
                        print(f"The {name} module is not an IPython extension.")
                        return
                load(self)
                self.extensions.add(name)

        def magic_reload_ext(self, line):
                """IPython's %reload_ext: the extension loaded afresh (its module
                reloaded), or loaded if it was not; silent either way."""
                if not line:
                        raise UsageError("Missing module name.")
                if line == "autoreload":
                        self.kernel.autoreload = _Autoreload(self)
                        return
                if line not in self.extensions:
                        return self.magic_load_ext(line)
                mod = sys.modules.get(line)
                if mod is not None:
                        unload = getattr(mod, "unload_ipython_extension", None)
                        if unload is not None:
                                unload(self)
                        mod = importlib.reload(mod)
                        load = getattr(mod, "load_ipython_extension", None)
                        if load is not None:
                                load(self)

        # line magics
        def magic_matplotlib(self, line):
                """IPython's %matplotlib: whatever is asked, our backend (inline's
                stand-in) comes back, even after matplotlib.use('Agg'), through
                switch_backend (which closes every figure, as IPython's does);
                %run then runs files as IPython's mpl_execfile."""
                if {"-l", "--list"} & set(line.split()):
                        print(f"Available matplotlib backends: {_MPL_GUIS}")
                        return None
                self.kernel.mpl_run = True
                _activate_matplotlib()
                import matplotlib
                matplotlib.interactive(True)
                matplotlib.rcParams["backend"] = MPL_BACKEND
                import matplotlib.pyplot as plt
                plt.switch_backend(MPL_BACKEND)
                return None

        def magic_pinfo(self, line):
                return None

        def magic_config(self, line):
                """Only InlineBackend's traits and ast_node_interactivity are read
                and set here."""
                m = re.match(r"^((?:ZMQ)?InteractiveShell)\.ast_node_interactivity\s*(?:=\s*(.+))?$", line.strip())
                if m is not None:
                        if m.group(2) is None:
                                # A query names a configurable's own class.
                                if m.group(1) != "ZMQInteractiveShell":
                                        raise ValueError(f"{m.group(1)!r} is not in list")
                                return self.ast_node_interactivity
                        value = eval(m.group(2), self.user_ns)
                        # Config reaches the trait only while the class has not hidden it.
                        if self._class_interactivity() is None:
                                self.ast_node_interactivity = value
                        return None
                m = re.match(r"^InlineBackend\.(\w+)\s*(?:=\s*(.+))?$", line.strip())
                if m is None or not hasattr(_InlineBackend, m.group(1)) or m.group(1) == "kwargs":
                        return None
                if m.group(2) is None:
                        return getattr(_inline, m.group(1))
                _set_inline_trait(m.group(1), eval(m.group(2), self.user_ns))
                return None

        def magic_pwd(self, line):
                return os.getcwd()

        _XMODES = ["Plain", "Context", "Verbose", "Minimal"]  # FormattedTB.valid_modes

        def _set_xmode(self, mode):
                """FormattedTB.set_mode: no mode steps to the next one."""
                k = self.kernel
                if not mode:
                        k.xmode = self._XMODES[(self._XMODES.index(k.xmode) + 1) % len(self._XMODES)]
                elif mode not in self._XMODES:
                        # As IPython's xmode_switch_err warns (warnings.warn, from its source).
                        sys.stderr.write(f"UserWarning: Error changing user exception modes.\n"
                                         f"Unrecognized mode in FormattedTB: <{mode}>\n"
                                         f"Valid modes: {self._XMODES}\n")
                        return False
                else:
                        k.xmode = mode
                return True

        def magic_xmode(self, line):
                if line.strip() in ("--show", "--hide"):
                        return None
                if self._set_xmode(line.strip().capitalize()):
                        print("Exception reporting mode:", self.kernel.xmode)
                return None

        def magic_tb(self, line):
                """The last error's whole traceback (in another mode if given)."""
                k = self.kernel
                mode = k.xmode
                try:
                        if line.strip() and not self._set_xmode(line.strip().capitalize()):
                                return None
                        exc = getattr(sys, "last_value", None)
                        if exc is None:
                                sys.stderr.write("No traceback available to show.\n")
                                return None
                        k._send_error(exc, full=True)
                finally:
                        k.xmode = mode
                return None

        def magic_cd(self, line):
                target = os.path.expanduser(line or "~")
                if target == "-":
                        target = self.kernel.oldpwd or os.getcwd()
                old = os.getcwd()
                try:
                        os.chdir(target)
                except OSError as e:
                        print(f"[Errno {e.errno}] {e.strerror}: {target!r}")
                        return None
                self.kernel.oldpwd = old
                self.user_ns.setdefault("_dh", []).append(os.getcwd())
                print(os.getcwd())

        def magic_pushd(self, line):
                """IPython's %pushd [DIR]: the current directory onto the stack (home
                as ~), then %cd DIR; returns the stack."""
                stack = self.dir_stack
                cwd = os.getcwd().replace(os.path.expanduser("~"), "~")
                if line:
                        self.magic_cd(line)
                stack.insert(0, cwd)
                return stack

        def magic_popd(self, line):
                stack = self.dir_stack
                if not stack:
                        raise UsageError("%popd on empty stack")
                top = stack.pop(0)
                self.magic_cd(top)
                print("popd ->", top)

        def magic_dirs(self, line):
                return self.dir_stack

        def magic_env(self, line):
                """IPython's %env: the environment (likely secrets hidden), one
                variable, or %set_env."""
                if line:
                        if len(line.split("=" if "=" in line else " ")) > 1:
                                return self.magic_set_env(line)
                        if line in os.environ:
                                return os.environ[line]
                        raise UsageError(f"Environment does not have key: {line}")
                env = dict(os.environ)
                for key in env:
                        if any(s in key.lower() for s in ("key", "token", "secret")):
                                env[key] = "<hidden>"
                return env

        def magic_set_env(self, line):
                bits = line.split("=" if "=" in line else " ", 1)
                if not line or len(bits) < 2:
                        raise UsageError("usage is 'set_env var=val'")
                var, val = bits[0].strip(), bits[1].strip()
                if re.match(r".*\s.*", var):
                        raise UsageError(f"refusing to set env var with whitespace: '{val}'")
                os.environ[var] = val
                print(f"env: {var}={val}")

        def _pip(self, tool, line):
                self.system(f"{sys.executable} -m {tool} {line}")
                print("Note: you may need to restart the kernel to use updated packages.")

        def magic_pip(self, line):
                self._pip("pip", line)

        def magic_time(self, line, cell=None):
                src = cell if cell is not None else line
                ns = self.user_ns
                tree = ast.parse(src)
                code = ecode = None
                if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
                        ecode = compile(ast.Expression(tree.body[0].value), "<timed eval>", "eval")
                else:
                        if len(tree.body) > 1 and isinstance(tree.body[-1], ast.Expr):
                                ecode = compile(ast.Expression(tree.body.pop().value), "<timed exec>", "eval")
                        code = compile(tree, "<timed exec>", "exec")
                w0 = time.time()
                r0 = os.times()
                out = None
                try:
                        if code is not None:
                                exec(code, ns)
                        if ecode is not None:
                                out = eval(ecode, ns)
                except BaseException as e:  # noqa: BLE001 - IPython's bare except
                        # IPython shows the traceback (from the timed code on) and
                        # prints no times; the cell goes on.
                        self.kernel.report_error(e)
                        return None
                wall = time.time() - w0
                r1 = os.times()
                user, sys_ = r1.user - r0.user, r1.system - r0.system
                print(f"CPU times: user {_format_time(user)}, sys: {_format_time(sys_)}, "
                      f"total: {_format_time(user + sys_)}")
                print(f"Wall time: {_format_time(wall)}")
                return out

        def magic_who_ls(self, line):
                """IPython's %who_ls: the user's names, optionally of the given type names."""
                hidden = self.kernel.ns_hidden()
                out = [n for n, v in self.user_ns.items()
                       if not n.startswith("_") and v is not hidden.get(n, _NOT_HIDDEN)]
                types_wanted = set(line.split())
                if types_wanted:
                        out = [n for n in out if type(self.user_ns[n]).__name__ in types_wanted]
                return sorted(out)

        def magic_whos(self, line):
                """IPython's %whos: a table of the user's names, types and values."""
                names = self.magic_who_ls(line)
                if not names:
                        print("No variables match your requested type." if line
                              else "Interactive namespace is empty.")
                        return
                ndarray = getattr(sys.modules.get("numpy"), "ndarray", None)
                values = [self.user_ns[n] for n in names]
                types_ = [type(v).__name__ for v in values]
                varwidth = max(max(map(len, names)), len("Variable")) + 3
                typewidth = max(max(map(len, types_)), len("Type")) + 3
                print("Variable".ljust(varwidth) + "Type".ljust(typewidth) + " Data/Info\n"
                      + "-" * (varwidth + typewidth + len("Data/Info") + 1))
                for name, value, tname in zip(names, values, types_):
                        print(f"{name:<{varwidth}}{tname:<{typewidth}}", end=" ")
                        if tname in ("dict", "list", "tuple"):
                                print("n=" + str(len(value)))
                        elif ndarray is not None and tname == ndarray.__name__:
                                shape = str(value.shape).replace(",", "").replace(" ", "x")[1:-1]
                                nbytes = value.size * value.itemsize
                                info = "%s: %s elems, type `%s`, %s bytes" % (shape, value.size,
                                                                           value.dtype, nbytes)
                                if nbytes < 100000:
                                        print(info)
                                elif nbytes < 1048576:
                                        print(info, "(%s kb)" % (nbytes / 1024,))
                                else:
                                        print(info, "(%s Mb)" % (nbytes / 1048576,))
                        else:
                                try:
                                        text = str(value)
                                except Exception:
                                        text = "<object with id %d (str() failed)>" % id(value)
                                text = text.replace("\n", "\\n")
                                print(text if len(text) < 50 else text[:25] + "<...>" + text[-25:])

        def magic_xdel(self, line):
                """IPython's %xdel NAME: the name and the output history's references to it."""
                name = line.strip()
                if name not in self.user_ns:
                        print(f"NameError: name '{name}' is not defined")  # IPython prints it
                        return
                value = self.user_ns.pop(name)
                for key, out in list(self.kernel.Out.items()):
                        if out is value:
                                del self.kernel.Out[key]
                for under in ("_", "__", "___"):
                        if self.user_ns.get(under) is value:
                                self.user_ns[under] = ""

        def magic_reset(self, line):
                """IPython's %reset [-f]: every user name and the output history
                go; the input history and the execution count stay. Without -f
                it asks with input(), which fails here as in ipykernel without stdin."""
                args = line.split()
                if "-f" not in args and input("Once deleted, variables cannot be recovered. "
                                              "Proceed (y/[n])? ").strip().lower() not in ("y", "yes"):
                        print("Nothing done.")
                        return
                keep = {"__builtins__", "__builtin__", "__name__", "__doc__", "__package__",
                        "__loader__", "__spec__", "In", "Out", "_ih", "_oh", "_dh",
                        "_i", "_ii", "_iii", "get_ipython", "exit", "quit"}
                for name in [n for n in self.user_ns if n not in keep and not re.fullmatch(r"_i\d+", n)]:
                        del self.user_ns[name]
                self.user_ns.update(self.kernel.ns_hidden())  # IPython's init_user_ns again
                self.kernel.Out.clear()
                self.user_ns.update({"_": "", "__": "", "___": ""})
                self.kernel.under = ["", "", ""]

        def magic_run(self, line):
                """IPython's %run [-i] FILE [ARGS]: the file runs as __main__ with
                sys.argv set, in a namespace of its own (the user's with -i);
                what it defines is then the user's."""
                import shlex
                args = shlex.split(line)
                interactive = "-i" in args[:1]
                if interactive:
                        args = args[1:]
                if not args:
                        raise Exception("you must provide at least a filename.")  # IPython's
                path = os.path.expanduser(args[0])
                if not os.path.exists(path) and os.path.exists(path + ".py"):
                        path += ".py"
                try:
                        with open(path, "rb") as f:
                                source = f.read()
                except OSError:
                        raise Exception(f"File `{args[0]!r}` not found.") from None
                code = compile(source, path, "exec", dont_inherit=True)
                # IPython's new_main_mod: a module whose __doc__ then becomes the user's.
                ns = self.user_ns if interactive else {
                    "__builtins__": builtins, "__doc__": "Module created for script run in IPython"}
                saved_main, saved_argv = ns.get("__name__"), sys.argv
                ns.update({"__name__": "__main__", "__file__": path})
                sys.argv = [path] + args[1:]
                try:
                        if self.kernel.mpl_run:
                                _run_file_with_matplotlib(lambda: exec(code, ns))
                        else:
                                exec(code, ns)
                except SystemExit as e:
                        # IPython's safe_execfile: exit(0) is quiet, any other
                        # status shown as the error alone; the cell goes on.
                        if e.code:
                                self.kernel.report_error(e, exit_warning=False)
                except KeyboardInterrupt:
                        raise  # the cell's interrupt, as the agent expects it
                except BaseException as e:  # noqa: BLE001 - IPython's bare except
                        # Shown from the script's frames on (showtraceback(tb_offset=2)),
                        # and the cell goes on.
                        self.kernel.report_error(_from_file(e, path))
                finally:
                        sys.argv = saved_argv
                        if interactive:
                                ns["__name__"] = saved_main
                                ns.pop("__file__", None)
                if not interactive:
                        for name in ("__name__", "__file__", "__builtins__"):
                                ns.pop(name, None)
                        self.user_ns.update(ns)

        def magic_who(self, line):
                names = self.magic_who_ls(line)
                if not names:
                        print("No variables match your requested type." if line
                              else "Interactive namespace is empty.")
                        return
                count = 0
                for name in names:
                        print(name + "\t", end=" ")
                        count += 1
                        if count > 8:
                                count = 0
                                print()
                print()

        def magic_timeit(self, line, cell=None):
                """IPython's %timeit: -n loops, -r runs, -p precision, -q quiet,
                -o return the result (-t/-c, the timer, accepted)."""
                import getopt
                import shlex
                import timeit as timeit_mod
                try:
                        opts, _ = getopt.getopt(shlex.split(line, posix=False), "n:r:tcp:qo")
                except getopt.GetoptError as e:
                        raise UsageError(f'{e.msg} ( allowed: "n:r:tcp:qo" )') from None
                stmt = line
                for o, a in opts:  # IPython's preserve_non_opts: the rest of the line, as written
                        stmt = stmt.replace(o, "", 1).replace(a, "", 1)
                stmt = stmt.lstrip()
                if not stmt and cell is None:
                        return None
                opts = dict(opts)
                number, repeat, precision = 0, 7, 3
                for opt in ("-n", "-r", "-p"):
                        if opt in opts:
                                try:
                                        value = int(opts[opt])
                                except ValueError:
                                        raise ValueError(f"invalid literal for int() with base 10: "
                                                         f"{opts[opt]!r}") from None
                                if opt == "-n":
                                        number = value
                                elif opt == "-r":
                                        repeat = value
                                else:
                                        precision = value
                quiet, ret = "-q" in opts, "-o" in opts
                setup = "pass"
                if cell is not None:
                        setup, stmt = stmt or "pass", cell
                timer = timeit_mod.Timer(stmt, setup, globals=self.user_ns)
                if number == 0:
                        for index in range(10):
                                number = 10 ** index
                                if timer.timeit(number) >= 0.2:
                                        break
                runs = [t / number for t in timer.repeat(repeat, number)]
                result = _TimeitResult(number, repeat, runs, precision)
                if not quiet:
                        worst, best = max(runs), min(runs)
                        if worst > 4 * best and best > 0 and worst > 1e-6:
                                print(f"The slowest run took {worst / best:0.2f} times longer than the fastest. "
                                      "This could mean that an intermediate result is being cached.")
                        print(result)
                return result if ret else None

        # cell magics
        def cell_magic_timeit(self, line, cell):
                return self.magic_timeit(line, cell)

        def cell_magic_time(self, line, cell):
                return self.magic_time("", cell)

        def cell_magic_script(self, line, cell):
                """IPython's %%script CMD: the body on CMD's stdin; a nonzero
                exit fails the cell (CalledProcessError) unless --no-raise-error;
                an interrupt goes to the program, which then ends the cell quietly."""
                import shlex
                argv = shlex.split(line)
                raise_error = "--no-raise-error" not in argv
                argv = [a for a in argv if a != "--no-raise-error"]
                # --out/--err NAME (anywhere, as argparse's parse_known_args takes them).
                into = {}
                for opt in ("--out", "--err"):
                        while opt in argv[:-1]:
                                i = argv.index(opt)
                                into[opt] = argv[i + 1]
                                del argv[i:i + 2]
                if not cell.endswith("\n"):
                        cell += "\n"
                body = cell.encode("utf8", "replace")
                _flush_std()
                try:
                        p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE if "--out" in into else None,
                                             stderr=subprocess.PIPE if "--err" in into else None)
                except OSError as e:
                        # EACCES too when some directory of PATH is unreadable and
                        # none has the program.
                        import shutil
                        if e.errno == errno.ENOENT or shutil.which(argv[0]) is None:
                                print(f"Couldn't find program: {argv[0]!r}")
                                return
                        raise
                try:
                        captured = p.communicate(body)
                        # IPython's _handle_stream: the name holds the last line read.
                        for opt, data in zip(("--out", "--err"), captured):
                                lines = (data or b"").decode("utf8", "replace").splitlines(True)
                                if opt in into and lines:
                                        self.user_ns[into[opt]] = lines[-1]
                except KeyboardInterrupt:
                        def ended():
                                try:
                                        p.wait(timeout=0.1)
                                        return True
                                except subprocess.TimeoutExpired:
                                        return False

                        p.send_signal(signal.SIGINT)
                        if ended():
                                print("Process is interrupted.")
                                return
                        p.terminate()
                        if ended():
                                print("Process is terminated.")
                                return
                        p.kill()
                        print("Process is killed.")
                        return
                if raise_error and p.returncode != 0:
                        raise subprocess.CalledProcessError(p.returncode or -9, body)

        def _script_magic(program):
                def magic(self, line, cell):
                        return self.cell_magic_script(f"{program} {line}" if line else program, cell)
                magic.__name__ = f"cell_magic_{program}"
                return magic

        # IPython's ScriptMagics.script_magics, each %%script with that program.
        cell_magic_bash = _script_magic("bash")
        cell_magic_sh = _script_magic("sh")
        cell_magic_perl = _script_magic("perl")
        cell_magic_ruby = _script_magic("ruby")
        cell_magic_python = _script_magic("python")
        cell_magic_python2 = _script_magic("python2")
        cell_magic_python3 = _script_magic("python3")
        cell_magic_pypy = _script_magic("pypy")
        del _script_magic

        def _display_cell(self, kind, cell, **kw):
                """%%html and its kin: the body shown as IPython.display's `kind`."""
                try:
                        import IPython.display as ipd
                except ImportError:
                        raise UsageError(f"%%{kind.lower()} needs IPython (not installed)") from None
                display(getattr(ipd, kind)(cell), **kw)

        def cell_magic_html(self, line, cell):
                isolated = "--isolated" in line.split() or "-i" in line.split()
                self._display_cell("HTML", cell,
                                   **({"metadata": {"text/html": {"isolated": True}}} if isolated else {}))

        def cell_magic_markdown(self, line, cell):
                self._display_cell("Markdown", cell)

        def cell_magic_latex(self, line, cell):
                self._display_cell("Latex", cell)

        def cell_magic_svg(self, line, cell):
                self._display_cell("SVG", cell)

        def cell_magic_javascript(self, line, cell):
                self._display_cell("Javascript", cell)

        cell_magic_js = cell_magic_javascript

        def cell_magic_capture(self, line, cell):
                """IPython's %%capture [--no-stdout] [--no-stderr] [--no-display] [name]:
                the body runs with its prints and displays kept in a CapturedIO."""
                args = line.split()
                names = [a for a in args if not a.startswith("-")]
                _flush_std()
                saved = sys.stdout, sys.stderr
                out = None if "--no-stdout" in args else io.StringIO()
                err = None if "--no-stderr" in args else io.StringIO()
                outputs = []
                if out is not None:
                        sys.stdout = out
                if err is not None:
                        sys.stderr = err
                if "--no-display" not in args:
                        _capturing.append(outputs)
                try:
                        self.kernel.run_nested(cell)
                finally:
                        sys.stdout, sys.stderr = saved
                        if _capturing and _capturing[-1] is outputs:
                                _capturing.pop()
                if names:
                        if cell.rstrip().endswith(";"):
                                self.user_ns.pop(names[0], None)  # IPython's rule for a silenced cell
                        else:
                                self.user_ns[names[0]] = CapturedIO(out, err, outputs)

        def magic_precision(self, line):
                """IPython's %precision: floats' text/plain format (and numpy's print
                precision); no argument restores repr. Returns the format."""
                import cellvm_pretty
                if "%" in line:
                        fmt = line
                        try:
                                fmt % 3.14159
                        except Exception:
                                raise ValueError(f"Precision must be int or format string, not {line!r}") from None
                elif line:
                        try:
                                digits = int(line)
                                assert digits >= 0
                        except ValueError:
                                raise ValueError(f"Precision must be int or format string, not {line!r}") from None
                        except AssertionError:
                                raise ValueError(f"int precision must be non-negative, not {digits!r}") from None
                        fmt = "%%.%if" % digits
                        if "numpy" in sys.modules:
                                sys.modules["numpy"].set_printoptions(precision=digits)
                else:
                        fmt = "%r"
                        if "numpy" in sys.modules:
                                sys.modules["numpy"].set_printoptions(precision=8)
                global _float_format
                _float_format = cellvm_pretty.float_format = fmt
                return fmt

        def cell_magic_writefile(self, line, cell):
                import shlex
                args = shlex.split(line, posix=False)
                append = "-a" in args or "--append" in args
                name = [a for a in args if not a.startswith("-")][0]
                if re.match(r"^(\'.*\')|(\".*\")$", name):
                        name = name[1:-1]
                path = os.path.expanduser(name)
                if os.path.exists(path):
                        print(f"{'Appending to' if append else 'Overwriting'} {path}")
                else:
                        print(f"Writing {path}")
                with open(path, "a" if append else "w", encoding="utf-8") as f:
                        f.write(cell)


Shell.__name__ = Shell.__qualname__ = "ZMQInteractiveShell"
Shell.__module__ = "ipykernel.zmqshell"


# Cell transformation. Line-based: only lines that start a logical line are
# looked at (not continuation lines of brackets, backslashes or multi-line
# strings), and only these forms, as IPython transforms them:
#   !cmd            -> get_ipython().system('cmd')
#   x = !cmd        -> x = get_ipython().getoutput('cmd')
#   %magic args     -> get_ipython().run_line_magic('magic', 'args')
#   x = %magic args -> x = get_ipython().run_line_magic('magic', 'args')
#   %%magic (first line) -> get_ipython().run_cell_magic('magic', 'args', body)
_ASSIGN_RE = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*([!%])(.*)$")
_MAGIC_RE = re.compile(r"^(\s*)%([A-Za-z_]\w*)\s?(.*)$")
_SHELL_RE = re.compile(r"^(\s*)!(.*)$")
_HELP_RE = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\(\))?)\s*(\?\??)\s*$")


def _protected_rows(cell):
        """Rows (1-based) that continue a logical line: inside brackets, strings, after '\\'."""
        rows = set()
        try:
                depth = 0
                for tok in tokenize.generate_tokens(io.StringIO(cell).readline):
                        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                                rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
                        elif tok.type == tokenize.OP and tok.string in "([{":
                                if depth == 0:
                                        open_row = tok.start[0]
                                depth += 1
                        elif tok.type == tokenize.OP and tok.string in ")]}":
                                depth = max(depth - 1, 0)
                                if depth == 0:
                                        rows.update(range(open_row + 1, tok.end[0] + 1))
        except (tokenize.TokenError, SyntaxError, IndentationError):
                pass
        lines = cell.split("\n")
        for i, line in enumerate(lines[:-1]):
                if line.endswith("\\"):
                        rows.add(i + 2)
        return rows


_CLASSIC_PROMPT_RE = re.compile(r"^(>>>|\.\.\.)( |$)")
_IPYTHON_PROMPT_RE = re.compile(r"^(In \[\d+\]: |\s*\.{3,}: ?)")
_IPYTHON_PROMPT_INITIAL_RE = re.compile(r"^In \[\d+\]: ")


def _strip_prompts(lines, prompt_re, initial_re):
        if lines and (initial_re.match(lines[0]) or (len(lines) > 1 and prompt_re.match(lines[1]))):
                return [prompt_re.sub("", line, count=1) for line in lines]
        return lines


def cleanup_cell(cell):
        """IPython's cleanup transforms, before anything else looks at a cell:
        leading empty lines dropped, the first line's indent removed from every
        line that has it, '>>> '/'... ' and 'In [n]: ' prompts stripped."""
        if cell[:1] not in " \t\r\n\f\v" and ">>>" not in cell and "..." not in cell \
                        and "In [" not in cell:
                return cell  # none of the above can apply
        lines = cell.splitlines(keepends=True)
        for i, line in enumerate(lines):
                if line and not line.isspace():
                        lines = lines[i:]
                        break
        m = re.match(r"^[ \t]+", lines[0]) if lines else None
        if m:
                space = m.group(0)
                lines = [line[len(space):] if line.startswith(space) else line for line in lines]
        lines = _strip_prompts(lines, _CLASSIC_PROMPT_RE, _CLASSIC_PROMPT_RE)
        lines = _strip_prompts(lines, _IPYTHON_PROMPT_RE, _IPYTHON_PROMPT_INITIAL_RE)
        return "".join(lines)


def _may_transform(cell):
        """False when transform_cell() would return `cell` unchanged (no shell
        escape, magic, help or exit/quit): plain Python, the common case."""
        return ("!" in cell or "%" in cell or "?" in cell or "exit" in cell
                or "quit" in cell)


def transform_cell(cell):
        lines = cell.split("\n")
        m = re.match(r"^%%([A-Za-z_]\w*)\s?(.*)$", lines[0]) if lines else None
        if m:
                body = "\n".join(lines[1:])
                return f"get_ipython().run_cell_magic({m.group(1)!r}, {m.group(2)!r}, {body!r})\n"
        if not _may_transform(cell):
                return cell
        protected = _protected_rows(cell)
        out = []
        for row, line in enumerate(lines, 1):
                if row in protected:
                        out.append(line)
                        continue
                m = _ASSIGN_RE.match(line)
                if m and not line.lstrip().startswith(("!=",)) and not m.group(4).startswith("="):
                        indent, target, kind, rest = m.groups()
                        if kind == "!":
                                out.append(f"{indent}{target} = get_ipython().getoutput({rest!r})")
                                continue
                        mm = re.match(r"^([A-Za-z_]\w*)\s?(.*)$", rest)
                        if mm:
                                out.append(f"{indent}{target} = get_ipython().run_line_magic("
                                           f"{mm.group(1)!r}, {mm.group(2)!r})")
                                continue
                m = _HELP_RE.match(line) or re.match(r"^(\s*)(\?\??)([A-Za-z_][\w.]*)\s*$", line)
                if m:
                        out.append(f"{m.group(1)}get_ipython().run_line_magic('pinfo', '')")
                        continue
                m = re.match(r"^(\s*)(exit|quit)\s*$", line)
                if m:
                        out.append(f"{m.group(1)}{m.group(2)}()")
                        continue
                m = _SHELL_RE.match(line)
                if m:
                        out.append(f"{m.group(1)}get_ipython().system({m.group(2)!r})")
                        continue
                m = _MAGIC_RE.match(line)
                if m:
                        out.append(f"{m.group(1)}get_ipython().run_line_magic("
                                   f"{m.group(2)!r}, {m.group(3)!r})")
                        continue
                out.append(line)
        return "\n".join(out)


def _ends_with_semicolon(cell):
        """IPython's DisplayHook.quiet(): the last token of the cell is ';'."""
        if ";" not in cell:
                return False
        try:
                tokens = list(tokenize.generate_tokens(io.StringIO(cell).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
                return False
        for tok in reversed(tokens):
                if tok.type in (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                        continue
                return tok.type == tokenize.OP and tok.string == ";"
        return False


# ---------------------------------------------------------------- tracebacks


def _source_lines(filename, lineno, before=2, after=2):
        """IPython's context lines: '      1 code' and '----> 2 code' for the failing one."""
        lines = linecache.getlines(filename)
        if not lines or lineno < 1 or lineno > len(lines):
                return ""
        out = []
        for n in range(max(lineno - before, 1), min(lineno + after, len(lines)) + 1):
                text = lines[n - 1].rstrip("\n")
                num = str(n)
                mark = ("-" * (5 - len(num)) + "> " + num) if n == lineno else num.rjust(7)
                out.append(f"{mark} {text}")
        return "\n".join(out) + "\n"


def _stack_data():
        """IPython's stack_data (imported in the zygote with IPython's package), or None."""
        mod = sys.modules.get("stack_data")
        if mod is None:
                try:
                        import stack_data as mod
                except Exception:
                        return None
        return mod


def _stack_data_entry(stack_data, tb, context, frame, cell=None):
        """A library frame as IPython's VerboseTB shows it: stack_data's pieces
        around the line, dedented, '(...)' for gaps, none for a Cython frame,
        and executing's qualname of the function."""
        info = stack_data.FrameInfo(tb, stack_data.Options(before=context, after=context))
        func = info.executing.code_qualname() if info.executing is not None else "?"
        where = f"Cell In[{cell}], line {info.lineno}" if cell is not None else f"File {info.filename}:{info.lineno}"
        out = [where
               + ("" if func == "<module>" else f", in {func}{_call_signature(frame)}") + "\n"]
        for line in info.lines:
                if line is stack_data.LINE_GAP:
                        out.append("   (...)\n")
                        continue
                num = str(line.lineno)
                mark = "-" * (5 - len(num)) + "> " + num if line.is_current else num.rjust(7)
                out.append(f"{mark} {line.render().rstrip()}\n")
        return "".join(out)


def _pandas_kernel_defaults():
        """pandas chose display.max_columns at import (in the zygote, before
        get_ipython existed) as for a terminal (0: fit the width); in a kernel
        it is 20, and frames wider than that wrap with '\\' as in ipykernel."""
        pd = sys.modules.get("pandas")
        if pd is None:
                return
        try:
                from pandas._config import config
                key = "display.max_columns"
                opt = config._registered_options.get(key)
                if opt is not None and opt.defval == 0:
                        config._registered_options[key] = opt._replace(defval=20)
                        if pd.get_option(key) == 0:
                                pd.set_option(key, 20)
        except Exception:  # a pandas without these internals: keep its defaults
                pass


def _call_signature(frame):
        """IPython's '(a, b)' after a function's name in a traceback frame."""
        if frame is None:
                return "()"
        import inspect
        try:
                return inspect.formatargvalues(*inspect.getargvalues(frame), formatvalue=lambda v: "")
        except Exception:
                return "()"


def _code_qualname(code):
        """executing's code_qualname: the qualname of a def, class or lambda
        found in the source; a comprehension's, or without source, its name."""
        if (code.co_name.startswith("<") and code.co_name != "<lambda>") \
                        or not linecache.getlines(code.co_filename):
                return code.co_name
        return getattr(code, "co_qualname", code.co_name)


def _collapse_repeated(frames):
        """(frame, lineno, description): stack_data's collapse_repeated as IPython
        uses it. A frame (code, line) seen more than 3 times in the traceback is
        shown only where first, second and last seen in its stretch of such frames;
        each run of the others becomes one '[... skipping similar frames]' entry
        (description set) that counts them (deep or mutual recursion)."""
        import collections
        import itertools
        keys = [(f.f_code, n) for f, n in frames]
        counts = collections.Counter(keys)
        shown = []
        for common, group in itertools.groupby(keys, key=lambda k: counts[k] > 3):
                group = list(group)
                if not common:
                        shown += [True] * len(group)
                        continue
                marks = [False] * len(group)
                for key in set(group):
                        first = group.index(key)
                        marks[first] = True
                        if key in group[first + 1:]:
                                marks[group.index(key, first + 1)] = True
                        marks[len(group) - 1 - group[::-1].index(key)] = True
                shown += marks
        out = []
        i = 0
        while i < len(frames):
                j = i
                while j < len(frames) and shown[j] == shown[i]:
                        j += 1
                if shown[i]:
                        out += [(f, n, None) for f, n in frames[i:j]]
                else:
                        # RepeatedFrames.description: most repeated first, then by name.
                        runs = sorted(collections.Counter(keys[i:j]).items(),
                                      key=lambda item: (-item[1], item[0][0].co_name))
                        out.append((frames[i][0], frames[i][1], ", ".join(
                                f"{_code_qualname(code)} at line {n} ({c} times)"
                                for (code, n), c in runs)))
                i = j
        return out


def _from_file(e, filename):
        """e's traceback from its first frame in `filename` on (the code a
        magic ran, as IPython shows it), or whole if it has none there."""
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != filename:
                tb = tb.tb_next
        e.__traceback__ = tb or e.__traceback__
        return e


def _user_tb(tb):
        """tb less the kernel's frames it starts with."""
        while tb is not None and tb.tb_frame.f_code.co_filename == KERNEL_FILE:
                tb = tb.tb_next
        return tb


def _tokenize_error(cell):
        """The IndentationError IPython's input transformer raises while
        tokenizing the cell (before compiling it), or None."""
        try:
                for _tok in tokenize.generate_tokens(io.StringIO(cell).readline):
                        pass
        except IndentationError as e:
                return e
        except (tokenize.TokenError, SyntaxError):
                pass
        return None


# What compiling a cell may raise: reported as the cell's error.
_COMPILE_ERRORS = (OverflowError, SyntaxError, ValueError, TypeError, MemoryError)


class _State:
        fd = -1
        req_id = 0
        kernel = None


_state = _State()


class Kernel:
        def __init__(self, fd):
                self.fd = fd
                self.count = 1
                self.sandbox_envs = {}  # what apply_sandbox_envs() set last
                self.flags = 0  # __future__ flags the cells have set
                self.serial = 0
                self.oldpwd = None
                self.mpl_run = False  # %matplotlib was used: %run as IPython's mpl_execfile
                self.cell_files = {}
                # ipykernel's cell files: <tmp>/ipykernel_<pid>/<hash of the raw cell>.py
                self.cell_dir = os.path.join(tempfile.gettempdir(), f"ipykernel_{os.getpid()}")
                main = types.ModuleType("__main__", "Automatically created module for IPython "
                                         "interactive environment")  # IPython's, as __doc__ shows
                main.__dict__.update({"__builtin__": builtins, "__builtins__": builtins})
                sys.modules["__main__"] = main
                self.ns = main.__dict__
                self.shell = Shell(self)
                self.In = [""]
                self.raw_in = [""]  # what %history shows (IPython's input_hist_raw)
                self.Out = {}
                self.exiter = _ExitAutocall()
                self.get_ipython = self.shell.get_ipython  # one bound method: %who hides it by identity
                # IPython's init_user_ns, in its order (globals() shows it).
                self.ns.update({"_ih": self.In, "_oh": self.Out, "_dh": [os.getcwd()],
                                "In": self.In, "Out": self.Out, "get_ipython": self.get_ipython,
                                "exit": self.exiter, "quit": self.exiter,
                                "_": "", "__": "", "___": "", "_i": "", "_ii": "", "_iii": ""})
                self.under = ["", "", ""]  # _, __, ___ as the kernel last set them
                self.inputs = ["", "", "", ""]  # _iii, _ii, _i, _i00
                self.cell_text = ""  # the running cell, transformed (IPython's input_hist_parsed[-1])
                sys.displayhook = self._sys_displayhook
                builtins.display = display
                builtins.get_ipython = self.get_ipython
                builtins.__IPYTHON__ = True
                builtins.input = _no_input
                builtins.exit = builtins.quit = self.exiter
                try:
                        import getpass
                        getpass.getpass = _no_getpass
                except Exception:
                        pass
                _pandas_kernel_defaults()
                self.loop = None
                self.in_loop = False  # self.loop stands as the running loop (loop_enter)
                self.autoreload = None  # %load_ext autoreload
                self.cell_running = False
                self.exit_warned = False
                self.xmode = "Context"  # %xmode: how an error's traceback is shown
                self.error_sent = False
                self.in_events = False  # a cell runs through shell.events
                self.cell_started = False
                self.exec_result = None  # its ExecutionResult

        def ns_hidden(self):
                """IPython's user_ns_hidden: names %who leaves out while they hold these."""
                return {"In": self.In, "Out": self.Out, "get_ipython": self.get_ipython,
                        "exit": self.exiter, "quit": self.exiter}

        # --- tracebacks
        def _frame_header(self, filename, lineno, func, frame=None):
                n = self.cell_files.get(filename)
                where = f"Cell In[{n}], line {lineno}" if n is not None else f"File {filename}:{lineno}"
                if func != "<module>":
                        where += f", in {func}{_call_signature(frame)}"
                return where

        def format_traceback(self, exc):
                """IPython's VerboseTB: the chain of causes and contexts, oldest first."""
                blocks = [self._format_one(exc, skip_kernel=True, context=2)]
                seen = {id(exc)}
                while True:
                        cause = exc.__cause__
                        chained = cause or (None if exc.__suppress_context__ else exc.__context__)
                        if chained is None or id(chained) in seen:
                                break
                        seen.add(id(chained))
                        blocks.append(["\nThe above exception was the direct cause of the following exception:\n"
                                       if cause else
                                       "\nDuring handling of the above exception, another exception occurred:\n"])
                        blocks.append(self._format_one(chained, skip_kernel=False, context=1))
                        exc = chained
                out = ["-" * 75]
                for block in reversed(blocks):
                        out += block
                return out

        def structured_traceback(self, exc):
                """IPython's InteractiveTB (FormattedTB) in the current %xmode.
                Verbose is shown as Context (no values of the locals)."""
                if self.xmode in ("Plain", "Minimal"):
                        return self._list_traceback(exc, skip_kernel=True, seen=set())
                return self.format_traceback(exc)

        def _list_traceback(self, exc, skip_kernel, seen):
                """IPython's ListTB: 'Traceback' and one entry a frame (Plain) or the
                exception alone (Minimal), after the errors it was chained to."""
                out = []
                tb = _user_tb(exc.__traceback__) if skip_kernel else exc.__traceback__
                if self.xmode == "Plain" and tb is not None:
                        import traceback
                        out.append("Traceback (most recent call last):\n")
                        for fs in traceback.extract_tb(tb):
                                item = "  " + self._list_location(fs.filename, fs.lineno)
                                item += f" in {fs.name}\n" if fs.name != "<module>" else "\n"
                                if fs.line:
                                        item += f"    {fs.line.strip()}\n"
                                out.append(item)
                if isinstance(exc, SyntaxError):
                        out.append(self.syntax_error_traceback(exc)[-1])
                else:
                        # ListTB's _format_exception_only: an error's .msg before its str.
                        name = type(exc).__name__
                        try:
                                text = exc.msg
                        except Exception:
                                try:
                                        text = str(exc)
                                except Exception:
                                        text = f"<unprintable {name} object>"
                        out.append(f"{name}: {text}\n" if text else f"{name}\n")
                chained = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
                if chained is not None and id(chained) not in seen:
                        seen.add(id(chained))
                        out = (self._list_traceback(chained, False, seen)
                               + ["\nThe above exception was the direct cause of the following exception:\n"
                                  if exc.__cause__ else
                                  "\nDuring handling of the above exception, another exception occurred:\n"]
                               + out)
                return out

        def _format_one(self, exc, skip_kernel, context):
                name = type(exc).__name__
                tb = _user_tb(exc.__traceback__) if skip_kernel else exc.__traceback__
                frames = []
                tbs = {}
                while tb is not None:
                        frames.append((tb.tb_frame, tb.tb_lineno))
                        tbs[id(tb.tb_frame)] = tb
                        tb = tb.tb_next
                entries = []
                stack_data = _stack_data()
                for frame, lineno, skipped in _collapse_repeated(frames):
                        code = frame.f_code
                        if skipped:
                                entries.append(f"    [... skipping similar frames: {skipped}]\n")
                                continue
                        if stack_data is not None:
                                try:
                                        entries.append(_stack_data_entry(stack_data, tbs[id(frame)], context, frame,
                                                                         self.cell_files.get(code.co_filename)))
                                        continue
                                except Exception:
                                        pass
                        entries.append(self._frame_header(code.co_filename, lineno, code.co_name, frame)
                                       + "\n" + _source_lines(code.co_filename, lineno, context, context))
                # VerboseTB writes 'Name: value' even when the value is empty.
                try:
                        last = f"{name}: {exc}"
                except Exception as err:
                        # VerboseTB.format_exception's fallback: str and the error as a tuple.
                        try:
                                last = f"<class 'str'>: {(type(err), err)}"
                        except Exception:
                                last = f"{name}: <exception str() failed>"
                return [f"{name:<42}Traceback (most recent call last)"] + entries + [last]

        def _exc_only(self, exc):
                try:
                        s = str(exc)
                except Exception:
                        s = "<exception str() failed>"
                return f"{type(exc).__name__}: {s}" if s else type(exc).__name__

        def _list_location(self, filename, lineno):
                """IPython's _format_filename: where a ListTB entry is."""
                n = self.cell_files.get(filename)
                if n is not None:
                        return f"Cell In[{n}]" + (f", line {lineno}" if lineno is not None else "")
                return f"File {filename}" + (f":{lineno}" if lineno is not None else "")

        def syntax_error_traceback(self, exc, running=False):
                """IPython's showsyntaxerror (SyntaxTB). running: raised by the cell's
                code (eval, ast.parse, a library), not by compiling the cell; the
                frames that raised it are listed first then."""
                out = []
                frames = []
                if running:
                        import traceback
                        frames = traceback.extract_tb(exc.__traceback__)
                # A magic compiling a file (%run) shows its error as IPython's does:
                # alone, as a cell's own.
                if frames and frames[-1].filename != KERNEL_FILE:
                        out.append("Traceback (most recent call last):\n")
                        for fs in frames:
                                if fs.filename == KERNEL_FILE:
                                        continue
                                item = "  " + self._list_location(fs.filename, fs.lineno)
                                item += f" in {fs.name}\n" if fs.name != "<module>" else "\n"
                                if fs.line:
                                        item += f"    {fs.line.strip()}\n"
                                out.append(item)
                filename = exc.filename or "<string>"
                lines = ["  " + self._list_location(filename, exc.lineno or None)]
                text = (linecache.getline(filename, exc.lineno) if exc.lineno else "") or exc.text
                if text is not None:
                        i = len(text) - len(text.lstrip())
                        lines.append("    " + text.strip())
                        if exc.offset is not None:
                                # IPython's slice, [i:offset - 1], even when offset is 0.
                                lines.append("    " + "".join(c if c.isspace() else " "
                                                              for c in text[i:exc.offset - 1]) + "^")
                lines.append(f"{type(exc).__name__}: {exc.msg}" if exc.msg else type(exc).__name__)
                out.append("\n".join(lines) + "\n")
                return out

        # --- one execution
        def _cell_filename(self, raw):
                """ipykernel's name for a cell's file (compiler.get_file_name): a
                hash of the raw cell, so the same source always gets the same name."""
                try:
                        return f"{self.cell_dir}/{_cellvm.cell_hash(raw)}.py"
                except UnicodeEncodeError:  # lone surrogates: not UTF-8
                        self.serial += 1
                        return f"{self.cell_dir}/cell{self.serial}.py"

        def _register_source(self, source, filename):
                """IPython's compiler.cache: the source for tracebacks and inspect,
                and the execution count its file name shows as (In[n])."""
                lines = source.splitlines(keepends=True)
                linecache.cache[filename] = (len(source), None, lines, filename)
                self.cell_files[filename] = self.count
                return filename

        def _store_inputs(self, raw, transformed):
                n = self.count
                self.In.append(transformed)
                self.raw_in.append(raw)
                self.inputs = self.inputs[1:] + [raw]
                _iii, _ii, _i, _i00 = self.inputs
                self.ns.update({"_i": _i, "_ii": _ii, "_iii": _iii, f"_i{n}": _i00})

        def _sys_displayhook(self, value):
                """sys.displayhook, as ipykernel's: what 'single'-mode code shows
                (ast_node_interactivity 'all' or 'last') becomes the cell's result."""
                self._displayhook(value, self.cell_text, more=True)

        def _displayhook(self, value, cell, more=False):
                """more: the cell may still run and write after this result."""
                if value is None or _ends_with_semicolon(cell):
                        return
                n = self.count
                if value is not self.Out:
                        update = all(self.ns.get(u, None) is mine for u, mine in
                                     zip(("_", "__", "___"), self.under) if u in self.ns)
                        self.under = [value, self.under[0], self.under[1]]
                        if update and "_" not in builtins.__dict__:
                                self.ns.update(zip(("_", "__", "___"), self.under))
                        self.ns[f"_{n}"] = value
                        self.Out[n] = value
                        if self.exec_result is not None:
                                self.exec_result.result = value
                data, md = format_bundle(value)
                if data:
                        body = {"execution_count": n, "data": data}
                        if md:
                                body["metadata"] = md
                        # Nothing runs between the result and X_END unless figures are pending.
                        _send(RESULT, body, defer=not more and not _figures_pending())

        def _run_code(self, code, ctx=None):
                """ctx: the contextvars context of a cell with a top-level await."""
                result = eval(code, self.ns) if ctx is None else ctx.run(eval, code, self.ns)
                if code.co_flags & 0x80 and result is not None:  # CO_COROUTINE: top-level await
                        import asyncio
                        if self.loop is None:
                                self.loop = asyncio.new_event_loop()
                        inside = self.in_loop
                        self.loop_leave()  # the loop really runs now
                        try:
                                result = self.loop.run_until_complete(
                                        result if ctx is None else self.loop.create_task(result, context=ctx))
                        finally:
                                if inside:
                                        self.loop_enter()
                return result

        def loop_enter(self):
                """ipykernel runs every cell inside its running asyncio loop, so
                there asyncio.get_event_loop() is that loop (running=True) and
                asyncio.run() or loop.run_until_complete() fail. Once asyncio is
                imported, a cell sees this kernel's loop as the running one; it
                only really runs for a top-level await (_run_code)."""
                asyncio = sys.modules.get("asyncio")
                if asyncio is None or self.in_loop or threading.current_thread() is not threading.main_thread():
                        return
                if self.loop is None:
                        self.loop = asyncio.new_event_loop()
                self.loop.is_running = _running  # shadows the method (and its repr's running=)
                asyncio._set_running_loop(self.loop)
                self.in_loop = True

        def loop_leave(self):
                if self.in_loop:
                        self.in_loop = False
                        del self.loop.is_running
                        sys.modules["asyncio"]._set_running_loop(None)

        def _parse(self, cell, filename):
                # IPython's CachingCompiler parses with codeop.Compile's flags: a cell
                # cut short (an unclosed bracket) is "incomplete input".
                return compile(cell, filename, "exec",
                               self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | ast.PyCF_ONLY_AST
                               | PARSE_FLAGS, dont_inherit=True)

        def _compile(self, cell, filename, tree=None):
                """(module code or None, trailing expression code or None); `tree`:
                the cell already parsed (_parse) under this filename."""
                flags = self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                if tree is None:
                        tree = self._parse(cell, filename)
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                        last = ast.Expression(tree.body.pop().value)
                code = None
                if tree.body or last is None:
                        code = compile(tree, filename, "exec", flags, dont_inherit=True)
                        self.flags |= code.co_flags & FUTURE_FLAGS
                if last is not None:
                        last = compile(last, filename, "eval", self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                                       dont_inherit=True)
                return code, last

        def _compile_nodes(self, cell, filename, tree, interactivity):
                """IPython's run_ast_nodes for an ast_node_interactivity other than
                'last_expr': statement by statement, those run interactively in
                'single' mode (each expression they hold goes to sys.displayhook).
                (codes of the statements up to the first that does not compile,
                None, its error)."""
                if tree is None:
                        tree = self._parse(cell, filename)
                nodes = tree.body
                if interactivity == "last_expr_or_assign":
                        node = nodes[-1] if nodes else None
                        target = None
                        if isinstance(node, ast.Assign) and len(node.targets) == 1:
                                target = node.targets[0]
                        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                                target = node.target
                        if isinstance(target, ast.Name):
                                nodes.append(ast.fix_missing_locations(ast.Expr(ast.Name(target.id, ast.Load()))))
                        interactivity = "last_expr"
                if interactivity == "last_expr":
                        interactivity = "last" if nodes and isinstance(nodes[-1], ast.Expr) else "none"
                if interactivity not in ("none", "last", "all"):
                        return [], None, ValueError(f"Interactivity was {interactivity!r}")
                first_single = {"none": len(nodes), "last": len(nodes) - 1, "all": 0}[interactivity]
                codes = []
                flags = self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                try:
                        for i, node in enumerate(nodes):
                                mod, mode = (ast.Module([node], []), "exec") if i < first_single \
                                    else (ast.Interactive([node]), "single")
                                code = compile(mod, filename, mode, flags, dont_inherit=True)
                                self.flags |= code.co_flags & FUTURE_FLAGS
                                flags = self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                                codes.append(code)
                except _COMPILE_ERRORS as e:
                        return codes, None, e
                return codes, None, None

        def _compile_statements(self, cell, filename, error):
                """The cell parsed but does not compile as a whole ('break' outside
                a loop, a late `from __future__`...). IPython compiles and runs a
                cell statement by statement: (codes of the statements before the
                first that does not compile, None, its error); or, when each one
                compiles alone, (all but a trailing expression, its code, None)."""
                try:
                        tree = self._parse(cell, filename)
                except _COMPILE_ERRORS:
                        return (), None, error
                body = tree.body
                last = body.pop() if body and isinstance(body[-1], ast.Expr) else None
                codes = []
                try:
                        for node in body:
                                code = compile(ast.Module([node], []), filename, "exec",
                                               self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
                                self.flags |= code.co_flags & FUTURE_FLAGS
                                codes.append(code)
                        if last is not None:
                                last = compile(ast.Expression(last.value), filename, "eval",
                                               self.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
                except _COMPILE_ERRORS as e:
                        return codes, None, e
                return codes, last, None

        def run_cell(self, raw):
                """Runs one cell; returns the exception it raised (or None)."""
                if not raw or raw.isspace():
                        return None
                # IPython's pre_execute: each cell warns afresh where an earlier one
                # already did (the "default" action shows a warning once per registry).
                self.ns.pop("__warningregistry__", None)
                events = self.shell.__dict__.get("events")
                if events is not None and events._user_callbacks():
                        return self._run_cell_events(raw, events)
                if self.autoreload is None:
                        err = self._run_cell(raw)
                else:
                        self.autoreload.pre_run_cell()
                        try:
                                err = self._run_cell(raw)
                        finally:
                                self.autoreload.post_execute()
                if self.exec_result is not None:  # the cell registered the first callback
                        result, self.exec_result = self.exec_result, None
                        self._post_events(self.shell.events, result, err)
                return err

        def _events_registered(self):
                """A callback was registered while a cell ran outside the events:
                its post_execute and post_run_cell still fire for it, as in IPython."""
                if self.cell_running and not self.in_events and self.exec_result is None:
                        self.exec_result = ExecutionResult(
                            ExecutionInfo(self.inputs[-1], True, False, True, None))
                        self.exec_result.execution_count = self.count

        def _run_cell_events(self, raw, events):
                """run_cell with shell.events triggered as IPython does: pre_execute,
                pre_run_cell(info), the cell, then post_execute (which flushes the
                figures, where the inline backend registered it) and post_run_cell(result)."""
                info = ExecutionInfo(raw, True, False, True, None)
                result = self.exec_result = ExecutionResult(info)
                result.execution_count = self.count
                self.cell_started = False
                events.trigger("pre_execute")
                if self.autoreload is not None:
                        self.autoreload.pre_run_cell()
                events.trigger("pre_run_cell", info)
                self.in_events = True
                try:
                        err = self._run_cell(raw)
                finally:
                        self.in_events = False
                        self.exec_result = None
                if self.autoreload is not None:
                        self.autoreload.post_execute()
                if _flush_figures_callback not in events.callbacks["post_execute"]:
                        try:
                                _flush_figures()  # figures of a backend activated some other way
                        except Exception as e:
                                self.report_error(e)
                return self._post_events(events, result, err)

        def _post_events(self, events, result, err):
                if err is not None:
                        if self.cell_started:
                                result.error_in_exec = err
                        else:
                                result.error_before_exec = err
                _set_sigint(True)
                try:
                        events.trigger("post_execute")
                        events.trigger("post_run_cell", result)
                finally:
                        _set_sigint(False)
                return err

        def _run_cell(self, raw):
                cleaned = cleanup_cell(raw)
                filename = self._cell_filename(raw)
                # Plain Python (nothing to transform) is parsed here, under the name
                # the cell gets below: a cell that parses cannot fail IPython's
                # tokenizer check, whose pure-Python tokenize is then skipped.
                plain = not _may_transform(cleaned)
                tree = parse_err = None
                if plain:
                        try:
                                tree = self._parse(cleaned, filename)
                        except _COMPILE_ERRORS as e:
                                parse_err = e
                # A cell magic's body is not Python: IPython never tokenizes it.
                if tree is not None or cleaned.startswith("%%"):
                        tok_err = None
                else:
                        tok_err = _tokenize_error(cleaned)
                if tok_err is not None:
                        # IPython 8.5 counts a cell failing there twice (run_cell_async
                        # and its error_before_exec both increment).
                        self._store_inputs(raw, raw)
                        self.count += 1
                        self._send_error(tok_err)
                        return tok_err
                cell = cleaned if plain else transform_cell(cleaned)
                magic = self.shell.automagic(cell)
                if magic is not None:
                        cell, tree, parse_err = magic, None, None
                self._store_inputs(raw, cell)
                self._register_source(cell, filename)
                self.cell_text = cell
                compile_err = None
                interactivity = self.shell.ast_node_interactivity
                try:
                        if parse_err is not None:
                                raise parse_err
                        if interactivity == "last_expr":
                                code, last = self._compile(cell, filename, tree)
                                codes = (code,) if code is not None else ()
                        else:
                                codes, last, compile_err = self._compile_nodes(cell, filename, tree, interactivity)
                except _COMPILE_ERRORS as e:
                        codes, last, compile_err = ((), None, e) if parse_err is not None \
                            else self._compile_statements(cell, filename, e)
                if compile_err is not None and not codes and last is None:
                        self._send_error(compile_err)
                        return compile_err
                err = running = None
                self.cell_running = self.cell_started = True
                self.loop_enter()
                _set_sigint(True)
                # ipykernel runs a cell with a top-level await as a task of its own:
                # in a copy of the context (a ContextVar set there is gone after it).
                ctx = None
                if last is not None and last.co_flags & 0x80 or any(c.co_flags & 0x80 for c in codes):
                        import contextvars
                        ctx = contextvars.copy_context()
                try:
                        try:
                                for code in codes:
                                        self._run_code(code, ctx)
                                if last is not None:
                                        value = self._run_code(last, ctx)
                                        if ctx is None:
                                                self._displayhook(value, cell)
                                        else:
                                                ctx.run(self._displayhook, value, cell)
                                err = compile_err
                        except BaseException as e:  # noqa: BLE001 - every cell error is reported
                                err = running = e
                        try:
                                if not self.in_events:
                                        _flush_figures()
                        except BaseException as e:  # noqa: BLE001
                                err = err or e
                finally:
                        _set_sigint(False)
                        self.cell_running = False
                        self.loop_leave()
                if err is not None:
                        self._send_error(err, running=err is running)
                return err

        def run_nested(self, raw):
                """Runs `raw` as part of the current cell (a %%capture body): the
                same transformations, no execution count, nothing displayed for
                a trailing expression (IPython sends that outside the capture)."""
                cell = transform_cell(cleanup_cell(raw))
                filename = self._register_source(cell, self._cell_filename(raw))
                try:
                        code, last = self._compile(cell, filename)
                        if code is not None:
                                self._run_code(code)
                        if last is not None:
                                self._run_code(last)
                except KeyboardInterrupt:
                        raise
                except BaseException as e:  # noqa: BLE001
                        # IPython's nested run_cell shows the error (from the body's
                        # frames on) and returns: the magic goes on.
                        self.report_error(_from_file(e, filename))

        def report_error(self, e, exit_warning=True):
                """An error shown while the cell goes on (a formatter's, as IPython's
                showtraceback); the cell's status becomes "error"."""
                if not exit_warning:
                        saved, self.exit_warned = self.exit_warned, True
                        try:
                                self._send_error(e)
                        finally:
                                self.exit_warned = saved
                        return
                self._send_error(e)

        def _send_error(self, e, running=False, full=False):
                """running: e was raised by the cell's code (IPython's
                showtraceback(running_compiled_code=True)). full: a SystemExit's
                whole traceback too (%tb)."""
                # IPython's _get_exc_info: sys.last_* (traceback.print_last, pdb.pm)
                # hold the error, so its frames live until the next one (as there:
                # a coroutine it held warns "never awaited" then, not now). The
                # kernel's own frames are left out.
                last_tb = _user_tb(e.__traceback__)
                sys.last_type, sys.last_value, sys.last_traceback = type(e), e, last_tb
                # The protocol carries one EXEC_ERROR per execution; E2B keeps the first.
                if self.error_sent:
                        e.__traceback__ = last_tb
                        return
                self.error_sent = True
                if isinstance(e, SyntaxError):
                        tb = self.syntax_error_traceback(e, running)
                elif isinstance(e, UsageError):
                        # IPython's show_usage_error: one line on stderr and no
                        # traceback (E2B gets the error from execute_reply alone).
                        sys.stderr.write(f"UsageError: {e}\n")
                        tb = []
                elif isinstance(e, SystemExit) and not full:
                        tb = ["An exception has occurred, use %tb to see the full traceback.\n",
                              self._exc_only(e) + "\n"]
                        # IPython warns through warnings.warn: once per context.
                        if not self.exit_warned:
                                self.exit_warned = True
                                sys.stderr.write("UserWarning: To exit: use 'exit', 'quit', or Ctrl-D.\n")
                else:
                        tb = None
                try:
                        value = str(e)
                except Exception as err:
                        value = "<exception str() failed>"
                        if tb is None:
                                # ipykernel's own str(evalue) raises in turn: the cell shows
                                # that error, raised while handling e (less the kernel's frames).
                                e.__traceback__ = last_tb
                                err.__context__ = e
                                err.__cause__ = None
                                err.__suppress_context__ = False
                                e = err
                                last_tb = _user_tb(err.__traceback__)
                                sys.last_type, sys.last_value, sys.last_traceback = type(e), e, last_tb
                                try:
                                        value = str(e)
                                except Exception:
                                        pass
                if tb is None:
                        tb = self.structured_traceback(e)
                _send(EXEC_ERROR, {"name": type(e).__name__, "value": value, "traceback": tb})
                sys.last_value.__traceback__ = last_tb

        def apply_sandbox_envs(self, envs):
                """The sandbox's own environment (Sandbox(envs=...)) is set once, as
                E2B's server does at a context's first execution, so a cell that
                changes such a variable keeps its change. A client with other
                sandbox envs sets them anew."""
                if not isinstance(envs, dict) or envs == self.sandbox_envs:
                        return
                for k, v in envs.items():
                        os.environ[str(k)] = str(v)
                self.sandbox_envs = {str(k): str(v) for k, v in envs.items()}

        def execute(self, req_id, body):
                import cellvm_reseed  # a copy of a snapshot reseeds before its cell (docs/SNAPSHOTS.md)
                cellvm_reseed.before_cell(body)
                _state.req_id = req_id
                code = body.get("code", "")
                if not isinstance(code, str):
                        code = ""
                envs = body.get("envs")
                self.apply_sandbox_envs(body.get("sandbox_envs"))
                saved = {k: os.environ.get(k) for k in envs} if envs else None
                count = self.count
                try:
                        if envs:
                                for k, v in envs.items():
                                        os.environ[str(k)] = str(v)
                        # SIGINT raises from here on: the agent signals only after it has
                        # seen EXEC_INPUT, so no interrupt falls between the two.
                        self.error_sent = False
                        _set_sigint(True)
                        _send(EXEC_INPUT, {"execution_count": count})
                        _cellvm.flusher_active(True)
                        err = self.run_cell(code)
                        if code and not code.isspace():
                                self.count += 1
                finally:
                        _set_sigint(False)
                        _cellvm.flusher_active(False)
                        if saved:
                                for k, v in saved.items():
                                        # E2B resets a sandbox-wide variable to its
                                        # sandbox value, whatever the cell did to it.
                                        v = self.sandbox_envs.get(k, v)
                                        if v is None:
                                                os.environ.pop(k, None)
                                        else:
                                                os.environ[k] = v
                # A formatter's error (IPython's showtraceback) fails the cell too.
                status = "error" if err is not None or self.error_sent else "ok"
                _send(X_END, {"status": status, "execution_count": count})

        def serve(self):
                while True:
                        try:
                                msg = _cellvm.recv(self.fd)
                        except KeyboardInterrupt:
                                continue
                        if msg is None:
                                return
                        mtype, req_id, body = msg
                        if mtype != X_EXECUTE:
                                print(f"cellvm-executor: ignoring message type {mtype:#x}", file=sys.stderr)
                                continue
                        self._execute_guarded(req_id, body)

        def _execute_guarded(self, req_id, body):
                # A SIGINT landing in kernel code right at a cell's edge must still
                # end the request with exactly one X_END.
                try:
                        self.execute(req_id, body)
                except KeyboardInterrupt as e:
                        _state.req_id = req_id
                        _send(EXEC_ERROR, {"name": "KeyboardInterrupt", "value": "",
                                           "traceback": self.format_traceback(e)})
                        _send(X_END, {"status": "error", "execution_count": self.count - 1})


def _set_sigint(running):
        # ipykernel: SIGINT raises KeyboardInterrupt only while a cell runs.
        # _signal.signal: the signal module's wrapper costs enum conversions per call.
        # getsignal() reads Python's own table (no syscall): a handler already
        # in place is not installed again.
        handler = _signal.default_int_handler if running else _SIG_IGN
        if _signal.getsignal(_SIGINT) != handler:
                _signal.signal(_SIGINT, handler)


# ---------------------------------------------------------------- entry points


def _default_mplconfigdir():
        if "MPLCONFIGDIR" in os.environ:
                return
        home = os.environ.get("HOME")
        if home:
                cfg = os.path.join(home, ".config", "matplotlib")
                try:
                        os.makedirs(cfg, exist_ok=True)
                        if os.access(cfg, os.W_OK):
                                return
                except OSError:
                        pass
        path = os.path.join(tempfile.gettempdir(), f"cellvm-matplotlib-{os.getuid()}")
        try:
                os.makedirs(path, mode=0o700, exist_ok=True)
                os.environ["MPLCONFIGDIR"] = path
        except OSError:
                pass


def zygote_preload(modules):
        """Imports the preloads in the zygote; returns (preloaded, errors)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # Under matplotlib_inline's name: the real package (with IPython) then
        # imports this one as its backend_inline.
        sys.modules["_cellvm_mpl"] = sys.modules["matplotlib_inline.backend_inline"] = _make_mpl_backend()
        _default_mplconfigdir()
        _install_finders()
        import cellvm_reseed  # noqa: F401 - the zygote's epoch, which its forks inherit (docs/SNAPSHOTS.md)
        preloaded, errors = [], []
        for name in modules:
                if not name:
                        continue
                try:
                        importlib.import_module(name)
                        preloaded.append(name)
                except BaseException as e:  # noqa: BLE001 - report, never die
                        errors.append(f"{name}: {type(e).__name__}: {e}")
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
                try:
                        _warm_matplotlib(plt)
                except Exception as e:
                        errors.append(f"matplotlib warm-up: {type(e).__name__}: {e}")
                try:  # compiled once here rather than at each context's first figure
                        import cellvm_charts  # noqa: F401
                except Exception:
                        pass
        # Every executor's Kernel imports getpass (and termios, a shared library);
        # stack_data (IPython's) formats library frames of tracebacks.
        for name in ("cellvm_pretty", "getpass", "stack_data"):
                try:
                        importlib.import_module(name)
                except Exception:
                        pass
        # What the preloads built lives as long as the zygote: out of the collector's
        # sight, a child's collections do not write to (and so copy) all its pages.
        gc.collect()
        gc.freeze()
        return preloaded, errors


def _warm_matplotlib(plt):
        """Select the backend and render text once so contexts start with fonts loaded."""
        plt.switch_backend(plt.rcParams["backend"])
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        fig = Figure()
        FigureCanvasAgg(fig)
        fig.add_subplot().set_title("cellvm")
        fig.canvas.draw()
        mpl = sys.modules.get("_cellvm_mpl")
        if mpl is not None and "show" in mpl.__dict__:
                mpl.show._draw_called = False
                mpl.show._to_draw = []
        if hasattr(plt.draw_if_interactive, "called"):
                plt.draw_if_interactive.called = False  # as after a fresh import


def _reset_after_fork():
        for sig in signal.valid_signals():
                if sig in (signal.SIGKILL, signal.SIGSTOP):
                        continue
                handler = signal.SIG_DFL
                if sig in (signal.SIGPIPE, getattr(signal, "SIGXFSZ", None)):
                        handler = signal.SIG_IGN  # what Python's startup sets
                if sig == signal.SIGINT:
                        handler = signal.SIG_IGN  # until a cell runs (ipykernel)
                try:
                        signal.signal(sig, handler)
                except (OSError, ValueError, RuntimeError):
                        pass
        np = sys.modules.get("numpy")
        if np is not None:
                try:
                        np.random.seed()  # the zygote's global RandomState is shared otherwise
                except Exception:
                        pass
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        _install_output_streams()
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        sys.argv = [""]
        # IPython imports jedi, which raises the limit to 3000 at import: a
        # recursion 1000-3000 deep works in ipykernel and must work here.
        sys.setrecursionlimit(3000)
        # Python's own default filters, whatever the preloads changed (resetwarnings
        # alone would show every ResourceWarning, which ipykernel hides)...
        warnings.resetwarnings()
        for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning,
                         DeprecationWarning):
                warnings.filterwarnings("ignore", category=category)
        # ...and, as IPython, DeprecationWarnings raised by code in the cells.
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")


def executor_prepare():
        """Runs in a forked executor before it knows its context (a spare waits
        for one after this): what the zygote's state needs undone or redone."""
        _reset_after_fork()
        _install_finders()
        if "matplotlib" not in sys.modules:
                _default_mplconfigdir()  # as the sandbox user: the zygote's may not be writable
        tempfile.gettempdir()  # its first call probes the disk, as the sandbox user


def _set_import_path(launch_dir):
        """sys.path as a kernel started in `launch_dir` has it: that directory
        first (python -m ipykernel_launcher's), and '' (the current directory,
        wherever %cd goes) ahead of the installed packages, as IPython adds
        it; so a module written next to the notebook imports."""
        if launch_dir and launch_dir not in sys.path:
                sys.path.insert(0, launch_dir)
        if "" not in sys.path:
                at = next((i for i, p in enumerate(sys.path)
                           if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
                sys.path.insert(at, "")


def executor_main(fd):
        """Runs in an executor attached to its context (after executor_prepare):
        X_READY, then one X_EXECUTE at a time until EOF."""
        _set_import_path(os.getcwd())
        kernel = Kernel(fd)
        _state.fd = fd
        _state.kernel = kernel
        _state.req_id = 0
        _cellvm.send(fd, X_READY, 0, {"pid": os.getpid()})
        kernel.serve()
        _flush_std()
        _cellvm.flusher_stop()

"""ipykernel.kernelapp's counterpart: the entry points the C side calls,
zygote_preload() in the zygote, executor_prepare() and executor_main() in
each forked executor."""

import gc
import importlib
import io
import os
import signal
import sys
import tempfile
import warnings

import _cellvm

from .backend_inline import MPL_BACKEND, _make_mpl_backend, _on_matplotlib_import, _on_pyplot_import
from .capture import _on_ipython_capture_import
from .debugger import _on_pdb_import, install_breakpointhook
from .display import _on_ipython_display_import, _on_pil_image_import
from .formatters import _on_pandas_printing_import
from .getipython import _on_ipython_getipython_import
from .importhook import _post_import
from .iostream import _flush_std, _install_output_streams
from .ipkernel import Kernel, _on_asyncio_import
from .session import X_READY, _state
from .text import _on_ipython_text_import
from .usersite import prepare as _prepare_user_environment
from .zmqshell import _on_ipython_magic_import, _on_ipython_shell_import


def _install_finders():
        if _post_import not in sys.meta_path:
                sys.meta_path.insert(0, _post_import)
        _post_import.add("matplotlib", _on_matplotlib_import)
        _post_import.add("matplotlib.pyplot", _on_pyplot_import)
        _post_import.add("IPython.core.display_functions", _on_ipython_display_import)
        _post_import.add("IPython.core.getipython", _on_ipython_getipython_import)
        _post_import.add("IPython.core.interactiveshell", _on_ipython_shell_import)
        _post_import.add("IPython.core.magic", _on_ipython_magic_import)
        _post_import.add("IPython.utils.capture", _on_ipython_capture_import)
        _post_import.add("IPython.utils.text", _on_ipython_text_import)
        _post_import.add("PIL.Image", _on_pil_image_import)
        _post_import.add("asyncio", _on_asyncio_import)
        _post_import.add("pandas.io.formats.printing", _on_pandas_printing_import)
        _post_import.add("pdb", _on_pdb_import)


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


# The warning filters the preloads' imports added (numpy's: 'always' for
# RankWarning, its Cython size messages ignored), which a context keeps, as a
# kernel that imported them itself would.
_PRELOAD_FILTERS = []


def zygote_preload(modules):
        """Imports the preloads in the zygote; returns (preloaded, errors)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # Under matplotlib_inline's name: the real package (with IPython) then
        # imports this one as its backend_inline.
        sys.modules["_cellvm_mpl"] = sys.modules["matplotlib_inline.backend_inline"] = _make_mpl_backend()
        _default_mplconfigdir()
        _install_finders()
        install_breakpointhook()  # a sys attribute: every fork inherits it
        import cellvm_reseed  # noqa: F401 - the zygote's epoch, which its forks inherit (docs/SNAPSHOTS.md)
        preloaded, errors = [], []
        before = list(warnings.filters)
        for name in modules:
                if not name:
                        continue
                try:
                        importlib.import_module(name)
                        preloaded.append(name)
                except BaseException as e:  # noqa: BLE001 - report, never die
                        errors.append(f"{name}: {type(e).__name__}: {e}")
        _PRELOAD_FILTERS[:] = [f for f in warnings.filters if f not in before]
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


# What Python's startup chose for stdin's errors (surrogateescape under the
# C locale or UTF-8 mode, else strict), before anything replaced it.
_STARTUP_STDIN_ERRORS = getattr(sys.__stdin__, "errors", None) or "strict"


def _stdin():
        """fd 0 as Python's startup makes sys.stdin (ipykernel's is that one):
        buffered, its raw file named '<stdin>', its mode 'r'."""
        raw = io.FileIO(0, "r", closefd=False)
        raw.name = "<stdin>"
        stdin = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors=_STARTUP_STDIN_ERRORS)
        stdin.mode = "r"
        return stdin


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
        sys.stdin = _stdin()
        _install_output_streams()
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
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
        warnings.filters[:0] = _PRELOAD_FILTERS
        warnings._filters_mutated()


_IPYKERNEL_ARGV = ["/usr/lib/python3/dist-packages/ipykernel_launcher.py", "-f"]


def _uuid4():
        """uuid.uuid4()'s text, without importing uuid in every executor."""
        b = bytearray(os.urandom(16))
        b[6] = b[6] & 0x0F | 0x40
        b[8] = b[8] & 0x3F | 0x80
        h = b.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def executor_prepare():
        """Runs in a forked executor before it knows its context (a spare waits
        for one after this): what the zygote's state needs undone or redone."""
        _reset_after_fork()
        _install_finders()
        _prepare_user_environment()  # HOME, the user site on sys.path (pip), PATH
        # ipykernel's init_gui_pylab: the inline backend's name, which a
        # process started from a cell (!python plot.py) imports matplotlib with.
        if not os.environ.get("MPLBACKEND"):
                os.environ["MPLBACKEND"] = MPL_BACKEND
        # ipykernel's: the launcher and its connection file (argparse in a cell
        # sees "-f ..." and refuses it, as there).
        sys.argv = _IPYKERNEL_ARGV + [os.path.join(
            os.path.expanduser("~"), ".local/share/jupyter/runtime", f"kernel-{_uuid4()}.json")]
        sys.orig_argv = [sys.executable, "-m", "ipykernel_launcher"] + sys.argv[1:]
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
        try:
                kernel.serve()
                _flush_std()
        finally:
                # The flusher thread holds a thread state of its own: it must be
                # joined before the interpreter finalizes, however serve() ended.
                _cellvm.flusher_stop()

"""IPython.core.magics.pylab's counterpart: %matplotlib, %pylab."""

import builtins
import functools
import sys

from ..backend_inline import MPL_BACKEND, _activate_matplotlib, _configure_inline_support
from ..error import UsageError
from ..foreign_frames import as_if_in_ipython, chained, ipython_calling_on, ipython_compiled_at
from ..pylabtools import _inline


# IPython 8.5's pylabtools.backends: each GUI %matplotlib takes and its
# backend; the names, in this order, are what %matplotlib --list shows.
_BACKENDS = {"tk": "TkAgg", "gtk": "GTKAgg", "gtk3": "GTK3Agg", "gtk4": "GTK4Agg", "wx": "WXAgg",
             "qt4": "Qt4Agg", "qt5": "Qt5Agg", "qt6": "QtAgg", "qt": "Qt5Agg", "osx": "MacOSX",
             "nbagg": "nbAgg", "notebook": "nbAgg", "agg": "agg", "svg": "svg", "pdf": "pdf", "ps": "ps",
             "inline": "module://matplotlib_inline.backend_inline",
             "ipympl": "module://ipympl.backend_nbagg", "widget": "module://ipympl.backend_nbagg"}
_MPL_GUIS = list(_BACKENDS)


# A GUI IPython does not know fails in its find_gui_and_backend (a KeyError
# from its backends table), called through enable_matplotlib (and
# enable_pylab), each frame at its line there.
def _find_gui_and_backend(gui, gui_select):
        return gui_select[gui]  # the backends table, given as gui_select


_FIND_GUI_AND_BACKEND = functools.partial(
    as_if_in_ipython(_find_gui_and_backend, "core/pylabtools.py", 321, qualname="find_gui_and_backend"),
    gui_select=dict.fromkeys(_MPL_GUIS))
_ENABLE_MATPLOTLIB = ipython_calling_on("core/interactiveshell.py", 3461, "InteractiveShell.enable_matplotlib",
                                        ("self", "gui"), carets=9)
_ENABLE_PYLAB = ipython_calling_on("core/interactiveshell.py", 3512, "InteractiveShell.enable_pylab",
                                   ("self", "gui", "import_all", "welcome_message"), carets=9)
_MATPLOTLIB_UNKNOWN_GUI = [ipython_calling_on("core/magics/pylab.py", 99, "PylabMagics.matplotlib", ("self", "line"),
                                              carets=9), _ENABLE_MATPLOTLIB]
_PYLAB_UNKNOWN_GUI = [ipython_calling_on("core/magics/pylab.py", 155, "PylabMagics.pylab", ("self", "line"), carets=9),
                      _ENABLE_PYLAB, _ENABLE_MATPLOTLIB]


# The GUIs whose backend %matplotlib switches to as IPython does: a GUI
# toolkit's or ipympl's widget fails to load in a sandbox (no display, no
# toolkit, and E2B's template has no ipympl), with the error loading it
# raises; agg, svg, pdf and ps load, and then figures are not shown after each
# cell (svg, pdf and ps then fail in ipykernel's enable_gui). Each through
# IPython's enable_matplotlib and activate_matplotlib, each statement at its
# line. inline, nbagg and notebook keep the inline backend (docs/NOTEBOOK.md).
_SWITCHED = set(_BACKENDS) - {"inline", "nbagg", "notebook"}
# ipykernel's eventloops.loop_map: the GUIs its enable_gui takes.
_LOOP_MAP_KEYS = ['inline', 'nbagg', 'webagg', 'notebook', 'ipympl', 'widget', None, 'qt4', 'qt', 'qt5', 'wx',
                  'tk', 'gtk', 'gtk3', 'osx', 'asyncio']
_ACTIVATE_MATPLOTLIB = ipython_compiled_at({
        343: "def activate_matplotlib(backend):",
        346: "    import matplotlib",
        347: "    matplotlib.interactive(True)",
        352: "    matplotlib.rcParams['backend'] = backend",
        357: "    from matplotlib import pyplot as plt",
        359: "    plt.switch_backend(backend)",
        361: "    plt.show._needmain = False",
        364: "    plt.draw_if_interactive = flag_calls(plt.draw_if_interactive)",
}, "core/pylabtools.py", "activate_matplotlib", flag_calls=lambda func: func)  # pyplot's is flagged at its import
_ENABLE_MATPLOTLIB_ACTIVATE = ipython_calling_on("core/interactiveshell.py", 3473, "InteractiveShell.enable_matplotlib",
                                                ("self", "gui"), carets=9)
_MATPLOTLIB_ACTIVATE = [_MATPLOTLIB_UNKNOWN_GUI[0], _ENABLE_MATPLOTLIB_ACTIVATE]
_PYLAB_ACTIVATE = _PYLAB_UNKNOWN_GUI[:2] + [_ENABLE_MATPLOTLIB_ACTIVATE]


class PylabMagics:
        """IPython's PylabMagics (IPython.core.magics.pylab), mixed into zmqshell.Shell."""

        def magic_matplotlib(self, line):
                """IPython's %matplotlib: inline (also for nbagg and notebook) brings
                our backend (inline's stand-in) back, even after
                matplotlib.use('Agg'), through switch_backend (which closes every
                figure, as IPython's does); the others switch as IPython does
                (_enable_matplotlib). %run then runs files as IPython's mpl_execfile."""
                if {"-l", "--list"} & set(line.split()):
                        print(f"Available matplotlib backends: {_MPL_GUIS}")
                        return None
                gui = next((a for a in line.split() if not a.startswith("-")), None)
                if gui and gui != "auto" and gui.lower() not in _MPL_GUIS:
                        chained(_MATPLOTLIB_UNKNOWN_GUI, _FIND_GUI_AND_BACKEND, gui.lower())()
                self.kernel.mpl_run = True
                gui = self._asked_gui(gui)
                if gui and gui.lower() in _SWITCHED:
                        self._enable_matplotlib(gui.lower(), _MATPLOTLIB_ACTIVATE)
                        return None
                _activate_matplotlib()
                _configure_inline_support(True)
                import matplotlib
                matplotlib.interactive(True)
                matplotlib.rcParams["backend"] = MPL_BACKEND
                import matplotlib.pyplot as plt
                plt.switch_backend(MPL_BACKEND)
                matplotlib.rcParams.update(_inline.rc)  # configure_inline_support, each time
                return None

        def _asked_gui(self, gui):
                """IPython's find_gui_and_backend: no GUI (or 'auto') is the one
                selected before, if any."""
                if (not gui or gui == "auto") and self.kernel.__dict__.get("pylab_gui_select"):
                        return self.kernel.pylab_gui_select
                return gui

        def _enable_matplotlib(self, gui, frames):
                """IPython's enable_matplotlib for a backend other than inline's,
                called through `frames`: the first GUI asked for is the one later
                ones get (its pylab_gui_select; agg's GUI is None), then
                activate_matplotlib loads the backend, configure_inline_support
                stops showing figures after each cell, and ipykernel's enable_gui
                refuses a GUI without an event loop (svg, pdf, ps)."""
                backend = _BACKENDS[gui]
                gui = None if gui == "agg" else gui
                select = self.kernel.__dict__.get("pylab_gui_select")
                if select is None:
                        self.kernel.pylab_gui_select = gui
                elif gui != select:
                        print(f"Warning: Cannot change to a different GUI toolkit: {gui}. Using {select} instead.")
                        gui, backend = select, _BACKENDS[select]
                chained(frames, _ACTIVATE_MATPLOTLIB, backend)()
                _configure_inline_support(False)
                if gui not in _LOOP_MAP_KEYS:
                        raise UsageError(f"Invalid GUI request {gui!r}, valid ones are:dict_keys({_LOOP_MAP_KEYS!r})")
                self.active_eventloop = gui

        def magic_pylab(self, line):
                """IPython's %pylab [--no-import-all] [GUI]: %matplotlib with that GUI
                (through enable_pylab's frames), then numpy and pyplot as np/plt, everything
                from matplotlib.pylab and numpy (unless --no-import-all), figsize,
                getfigs and display in the namespace, hidden from %who."""
                args = line.split()
                import_all = "--no-import-all" not in args
                gui = next((a for a in args if not a.startswith("-")), None)
                if gui and gui != "auto" and gui not in _MPL_GUIS:
                        # As given: IPython's %pylab does not lower it.
                        chained(_PYLAB_UNKNOWN_GUI, _FIND_GUI_AND_BACKEND, gui)()
                asked = self._asked_gui(gui)
                if asked in _SWITCHED:
                        self.kernel.mpl_run = True
                        self._enable_matplotlib(asked, _PYLAB_ACTIVATE)
                else:
                        self.magic_matplotlib("inline")
                ns = {}
                exec("import numpy\nimport matplotlib\nfrom matplotlib import pylab, mlab, pyplot\n"
                     "np = numpy\nplt = pyplot\n", ns)
                if import_all:
                        exec("from matplotlib.pylab import *\nfrom numpy import *\n", ns)
                ns.pop("__builtins__", None)
                try:
                        from IPython.core.pylabtools import figsize, getfigs
                        ns.update(figsize=figsize, getfigs=getfigs)
                except ImportError:
                        pass
                ns["display"] = builtins.display  # the kernel's, IPython's if it imports
                try:
                        from IPython.display import display
                        ns["display"] = display
                except ImportError:
                        pass
                clobbered = [n for n in ns if n in self.user_ns and self.user_ns[n] is not ns[n]]
                self.user_ns.update(ns)
                self.kernel.pylab_names.update(ns)
                if not gui or gui == "auto":
                        print(f"Using matplotlib backend: {MPL_BACKEND}")
                print("%pylab is deprecated, use %matplotlib inline and import the required libraries.")
                print("Populating the interactive namespace from numpy and matplotlib")
                if clobbered:
                        # IPython's warn() from its own source file.
                        sys.stderr.write(f"UserWarning: pylab import has clobbered these variables: {clobbered}\n"
                                         "`%matplotlib` prevents importing * from pylab and numpy\n")

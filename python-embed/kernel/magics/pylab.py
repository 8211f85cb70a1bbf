"""IPython.core.magics.pylab's counterpart: %matplotlib."""

from ..backend_inline import MPL_BACKEND, _activate_matplotlib


# What IPython 8.5's %matplotlib --list shows (pylabtools.backends).
_MPL_GUIS = ["tk", "gtk", "gtk3", "gtk4", "wx", "qt4", "qt5", "qt6", "qt", "osx", "nbagg",
             "notebook", "agg", "svg", "pdf", "ps", "inline", "ipympl", "widget"]


class PylabMagics:
        """IPython's PylabMagics (IPython.core.magics.pylab), mixed into zmqshell.Shell."""

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

"""IPython.core.magics.display's counterpart: %%html, %%markdown, %%latex,
%%svg, %%javascript."""

from ..display import display
from ..error import UsageError


class DisplayMagics:
        """IPython's DisplayMagics (IPython.core.magics.display), mixed into zmqshell.Shell."""

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

        def magic_autosave(self, line):
                """ipykernel's %autosave SECONDS: the notebook frontend's autosave
                interval, set by a Javascript display; 0 turns it off."""
                try:
                        interval = int(line)
                except ValueError:
                        raise UsageError(f"%autosave requires an integer, got {line!r}") from None
                try:
                        from IPython.display import Javascript
                except ImportError:
                        Javascript = None
                code = "IPython.notebook.set_autosave_interval(%i)" % (1000 * interval)
                if Javascript is not None:
                        display(Javascript(code), include=["application/javascript"])
                else:
                        display({"application/javascript": code}, raw=True)
                print(f"Autosaving every {interval} seconds" if interval else "Autosave disabled")

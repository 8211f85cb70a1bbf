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

"""IPython.core.displayhook's counterpart: the value of a cell's trailing
expression becomes Out[n], _, __, ___ and the execute result."""

import builtins
import io
import tokenize

from .formatters import format_bundle
from .backend_inline import _figures_pending
from .session import RESULT, _send


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


class DisplayHook:
        """Kernel's displayhook (ipkernel.Kernel mixes it in)."""

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

"""IPython.core.displayhook's counterpart: the value of a cell's trailing
expression becomes Out[n], _, __, ___ and the execute result."""

import ast
import builtins
import io
import sys
import tokenize

from .formatters import format_bundle
from .backend_inline import _figures_pending
from .session import RESULT, _send


def _semicolon_after_last_expression(cell):
        """_ends_with_semicolon's answer from the parser, for a cell that parses
        and ends with an expression statement (None for any other): after that
        statement only blanks, line continuations, comments and at most one ';'
        can follow, so the last token is ';' exactly when the rest holds one.
        Python's tokenize is pure Python over the regex engine: in a clone of a
        template that engine's code is translated afresh under TCG, ~130 ms of a
        first cell such as `import numpy; 1 + 1` (docs/BENCHMARKS.md)."""
        if "\r" in cell:
                return None  # line ends other than the parser's "\n": tokenize decides
        try:
                tree = compile(cell, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                               dont_inherit=True)
        except Exception:  # noqa: BLE001 - SyntaxError, a future flag's syntax, ...
                return None
        if not tree.body or not isinstance(tree.body[-1], ast.Expr):
                return None  # a block may end in a DEDENT, which IPython counts
        last = tree.body[-1]
        lines = cell.split("\n")
        try:  # end_col_offset counts UTF-8 bytes
                tail = lines[last.end_lineno - 1].encode()[last.end_col_offset:].decode()
        except (IndexError, UnicodeError):
                return None
        tail = "\n".join([tail] + lines[last.end_lineno:])
        semicolon = False
        i = 0
        while i < len(tail):
                c = tail[i]
                if c == "#":
                        end = tail.find("\n", i)
                        i = len(tail) if end < 0 else end
                        continue
                if c == ";" and not semicolon:
                        semicolon = True
                elif c == "\\" and tail.startswith("\n", i + 1):
                        i += 1
                elif c not in " \t\f\n":
                        return None  # a second ';' included: tokenize decides
                i += 1
        return semicolon


def _ends_with_semicolon(cell):
        """IPython's DisplayHook.quiet(): the last token of the cell is ';'."""
        if ";" not in cell:
                return False
        quick = _semicolon_after_last_expression(cell)
        if quick is not None:
                return quick
        try:
                tokens = list(tokenize.generate_tokens(io.StringIO(cell).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
                return False
        for tok in reversed(tokens):
                if tok.type in (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                        continue
                return tok.type == tokenize.OP and tok.string == ";"
        return False


class ZMQShellDisplayHook:
        """ipykernel's displayhook object as a cell sees it: sys.displayhook
        while a cell runs and get_ipython().displayhook, one object. Called
        with a value (as 'single'-mode code calls it), it makes that value
        the cell's result."""

        cache_size = 1000  # IPython's: Out's limit
        do_full_cache = True

        def __init__(self, kernel):
                self.shell = kernel.shell
                self._kernel = kernel

        def __call__(self, result=None):
                """What 'single'-mode code shows (ast_node_interactivity 'all' or
                'last') becomes the cell's result."""
                self._kernel._displayhook(result, self._kernel.cell_text, more=True)

        @property
        def prompt_count(self):
                return self._kernel.count

        def quiet(self):
                """IPython's: the last input stored in history ends with ';' (the
                running cell's, or a nested cell's stored after it)."""
                return _ends_with_semicolon(self._kernel.cell_text)

        def flush(self):
                """IPython's: Out, _N and _, __, ___ emptied (as %reset out does)."""
                self.shell._flush_output()


ZMQShellDisplayHook.__module__ = "ipykernel.displayhook"


class DisplayHook:
        """Kernel's displayhook (ipkernel.Kernel mixes it in)."""

        # The outputs list of a %%capture body that captures displays: its
        # results go there (IPython's CapturingDisplayHook), not to Out or out.
        capture_outputs = None

        def _cull_cache(self):
                """IPython's cull_cache: the oldest fifth of Out (and their _N) dropped,
                with its warning (from IPython's source there; normalised by the test)."""
                sz = len(self.Out)
                cull_count = max(int(sz * 0.2), 2)
                sys.stderr.write(f"UserWarning: Output cache limit (currently {sz} entries) hit.\n"
                                 f"Flushing oldest {cull_count} entries.\n")
                for n in sorted(self.Out)[:cull_count]:
                        self.ns.pop(f"_{n}", None)
                        self.Out.pop(n, None)

        def _display_target(self, value, more=False):
                """Where a cell's last value goes, as IPython's 'single'-mode code sends
                it to sys.displayhook: the kernel's own path, or a hook the cell set
                (which gets any value, None too). (callable, args, kwargs), returned
                to be called by the caller: a call from here would add a frame, and a
                deep repr's RecursionError would come at another depth than ipykernel's."""
                if sys.displayhook is self.sys_displayhook:
                        return self._displayhook, (value, self.cell_text), {"more": more}
                return sys.displayhook, (value,), {}

        def _displayhook(self, value, cell, more=False):
                """more: the cell may still run and write after this result."""
                if self.capture_outputs is not None:
                        if value is not None:
                                data, md = format_bundle(value)
                                self.capture_outputs.append({"data": data, "metadata": md})
                        return
                if value is None or _ends_with_semicolon(cell):
                        return
                n = self.count
                # IPython's order: the value is formatted, then stored (Out, _N, _),
                # so a repr that reads Out or _ sees them as before this result.
                data, md = format_bundle(value)
                if value is not self.Out:
                        if len(self.Out) >= 1000:  # IPython's cache_size
                                self._cull_cache()
                        update = all(self.ns.get(u, None) is mine for u, mine in
                                     zip(("_", "__", "___"), self.under) if u in self.ns)
                        self.under = [value, self.under[0], self.under[1]]
                        if update and "_" not in builtins.__dict__:
                                self.ns.update(zip(("_", "__", "___"), self.under))
                        self.ns[f"_{n}"] = value
                        self.Out[n] = value
                if self.exec_result is not None:  # IPython's fill_exec_result, Out's own too
                        self.exec_result.result = value
                if "text/plain" in data:
                        self.shell.logger.log_write(data["text/plain"], "output")
                if data:
                        body = {"execution_count": n, "data": data}
                        if md:
                                body["metadata"] = md
                        # Nothing runs between the result and X_END unless figures are pending.
                        _send(RESULT, body, defer=not more and not _figures_pending())

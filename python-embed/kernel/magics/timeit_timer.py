"""%timeit's timer as IPython builds it (IPython.core.magics.execution's
Timer and timeit template): the user's code compiled into `inner` at its own
lines, so an error in it shows the frames ipykernel shows."""

import ast
import codeop
import functools
import itertools
import timeit

from ..foreign_frames import as_if_in, as_if_in_ipython, chained, ipython_calling_on
from ..inputtransformer2 import cleanup_cell, transform_cell

_AST_PARSE_FLAGS = ast.PyCF_ONLY_AST | codeop.PyCF_DONT_IMPLY_DEDENT | codeop.PyCF_ALLOW_INCOMPLETE_INPUT

# timeit.template as IPython fills it: `setup` and `stmt` stand for the code.
_TEMPLATE = ("def inner(_it, _timer):\n"
             "    setup\n"
             "    _t0 = _timer()\n"
             "    for _i in _it:\n"
             "        stmt\n"
             "    _t1 = _timer()\n"
             "    return _t1 - _t0\n")


class _TemplateFiller(ast.NodeTransformer):
        def __init__(self, code):
                self.code = code  # {"setup": [statements], "stmt": [statements]}

        def visit_Expr(self, node):
                if isinstance(node.value, ast.Name) and node.value.id in self.code:
                        return self.code[node.value.id]
                return node


# IPython's compile.ast_parse, and the lines of %timeit's and %time's calls of
# it: a SyntaxError in the code shows those frames.
def _ast_parse(self, source, filename, symbol):
        return compile(source, filename, symbol, _AST_PARSE_FLAGS, 1)


_AST_PARSE = functools.partial(as_if_in_ipython(_ast_parse, "core/compilerop.py", 105,
                                                qualname="CachingCompiler.ast_parse", _AST_PARSE_FLAGS=_AST_PARSE_FLAGS),
                               None, filename="<unknown>", symbol="exec")


def _magic_frame(line, magic):
        """A frame at `line` of IPython's %magic (ExecutionMagics.time or
        .timeit) that calls on."""
        return ipython_calling_on("core/magics/execution.py", line, "ExecutionMagics." + magic,
                                  ("self", "line", "cell", "local_ns"), carets=9)


# The shell's compile (a codeop.Compile) called at a line of %timeit's or
# %time's: an error compiling the parsed code ('await' outside a function)
# shows those frames.
_CODEOP_FLAGS = codeop.PyCF_DONT_IMPLY_DEDENT | codeop.PyCF_ALLOW_INCOMPLETE_INPUT


def _codeop_compile(self, source, filename, symbol):
        return compile(source, filename, symbol, _CODEOP_FLAGS, True)


_SHELL_COMPILE = functools.partial(as_if_in(_codeop_compile, "codeop", "/usr/lib/python3.11/codeop.py", 118,
                                            qualname="Compile.__call__", _CODEOP_FLAGS=_CODEOP_FLAGS), None)


def shell_compile(line, magic, tree, filename, symbol):
        """`tree` compiled as IPython's %magic does at `line` of its file."""
        return chained([_magic_frame(line, magic)], _SHELL_COMPILE, tree, filename=filename, symbol=symbol)()


# The lines of %timeit's parse of its setup (the cell magic's line; "pass"
# for the line magic, which never fails) and of its statement (line magic,
# cell magic), and of %time's parse.
_TIMEIT_SETUP_AT = _magic_frame(1107, "timeit")
_TIMEIT_STMT_AT = {False: _magic_frame(1105, "timeit"), True: _magic_frame(1108, "timeit")}
_TIME_AT = _magic_frame(1272, "time")


def time_parse(source):
        """%time's parse of `source`, a callable of nothing: called from the
        magic, no frame of this module's shows between."""
        return chained([_TIME_AT], _AST_PARSE, source)


def compile_inner(setup, stmt, namespace, cell_magic):
        """`inner(_it, _timer)` running `setup` once and `stmt` _it times (each
        as a cell is transformed), globals `namespace`; a SyntaxError names
        <magic-timeit-setup> or <magic-timeit-stmt>, as IPython checks them."""
        trees = {}
        for name, src, frame in (("setup", setup, _TIMEIT_SETUP_AT),
                                 ("stmt", stmt, _TIMEIT_STMT_AT[cell_magic])):
                trees[name] = chained([frame], _AST_PARSE, transform_cell(cleanup_cell(src)))()
                shell_compile(1117 if name == "setup" else 1118, "timeit", trees[name], f"<magic-timeit-{name}>", "exec")
        module = _TemplateFiller({k: t.body for k, t in trees.items()}).visit(ast.parse(_TEMPLATE))
        code = compile(ast.fix_missing_locations(module), "<magic-timeit>", "exec")
        local = {}
        exec(code, namespace, local)
        return local["inner"]


def _timer_timeit(self, number):
        return self.inner(itertools.repeat(None, number), self.timer)


class Timer(timeit.Timer):
        """IPython's Timer: `inner` is compiled by compile_inner; the caller
        keeps the garbage collector off while it times."""

        def __init__(self, inner):
                self.timer = timeit.default_timer
                self.inner = inner

        timeit = as_if_in_ipython(_timer_timeit, "core/magics/execution.py", 156, qualname="Timer.timeit",
                                  itertools=itertools)


Timer.__module__ = "IPython.core.magics.execution"


# The %timeit magic's own frame at its two calls of the timer (finding the
# number of loops, then the runs).
def _time_number(timer, number, cell, local_ns):
        return timer.timeit(number)


def _all_runs(timer, repeat, number, local_ns):
        return timer.repeat(repeat, number)


_MAGIC_PARAMS = ("self", "line", "cell", "local_ns")
time_number = as_if_in_ipython(_time_number, "core/magics/execution.py", 1162, qualname="ExecutionMagics.timeit",
                               params=_MAGIC_PARAMS)
all_runs = as_if_in_ipython(_all_runs, "core/magics/execution.py", 1166, qualname="ExecutionMagics.timeit",
                            params=_MAGIC_PARAMS)

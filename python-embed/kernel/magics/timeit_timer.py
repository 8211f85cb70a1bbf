"""%timeit's timer as IPython builds it (IPython.core.magics.execution's
Timer and timeit template): the user's code compiled into `inner` at its own
lines, so an error in it shows the frames ipykernel shows."""

import ast
import codeop
import itertools
import timeit

from ..foreign_frames import as_if_in_ipython
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


def compile_inner(setup, stmt, namespace):
        """`inner(_it, _timer)` running `setup` once and `stmt` _it times (each
        as a cell is transformed), globals `namespace`; a SyntaxError names
        <magic-timeit-setup> or <magic-timeit-stmt>, as IPython checks them."""
        trees = {}
        for name, src in (("setup", setup), ("stmt", stmt)):
                # IPython's compile.ast_parse: codeop's flags ("incomplete input").
                trees[name] = compile(transform_cell(cleanup_cell(src)), "<unknown>", "exec", _AST_PARSE_FLAGS, True)
                compile(trees[name], f"<magic-timeit-{name}>", "exec")
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

"""A trailing ';' hides a cell's result exactly as IPython 8.5's
DisplayHook.quiet() decides, whether the executor answers from the parser
(displayhook._semicolon_after_last_expression) or from tokenize."""

import itertools
import json

from test_executor_harness import ex, zygote  # noqa: F401

EXPRESSIONS = [
    "1 + 1", "(1 + 1)", "((1))", "x[0]", "a.b", "f(1, 2)", "'a;b'", '"#;"', "'''\n;\n'''",
    "f'{1};'", "[1,\n 2]", "(1 # c;\n)", "lambda: 1", "{'k': ';'}", "b'x'", "await g()",
    "(yield_ := 3)", "not x", "x if y else z",
]
SUFFIXES = [
    "", ";", " ;", ";  ", "; # c", " # c", " # ;", ";\n", ";\n# c;", "\n# c", " \\\n;",
    "\n\n", ";\n\n", "\t;\t", "\f;",
]
PREFIXES = ["", "x = 1; ", "import sys\n", "for i in []:\n    pass\n", "def f():\n    return 1;\n"]
# Cells the parser path leaves to tokenize: blocks last, other line ends, errors.
OTHERS = [
    "for i in []:\n    1;", "if 1:\n    1;\n", "1;\r\n", "1\r;", "x = 1;", "1;;", "1 +", "pass;",
    "class A: x = 1;", "while 0: pass;", "\n;", ";",
]

CHECK = r"""
import json, types
from IPython.core.displayhook import DisplayHook
from _cellvm_kernel import displayhook as mine

def ipython(cell):
    shell = types.SimpleNamespace(history_manager=types.SimpleNamespace(input_hist_parsed=[cell]))
    try:
        return DisplayHook.quiet(types.SimpleNamespace(shell=shell))
    except Exception as e:
        return type(e).__name__

out = {"differ": [], "parser": 0, "cells": 0}
for cell in json.loads(CELLS):
    out["cells"] += 1
    want = ipython(cell)
    if mine._semicolon_after_last_expression(cell) is not None:
        out["parser"] += 1
    got = mine._ends_with_semicolon(cell)
    if want in (True, False) and got != want:
        out["differ"].append([cell, want, got])
json.dumps(out)
"""


def cells():
    base = ["".join(p) for p in itertools.product(PREFIXES, EXPRESSIONS, SUFFIXES)]
    return base + OTHERS


def run_check(ex, corpus):  # noqa: F811
    r = ex.ok(f"CELLS = {json.dumps(json.dumps(corpus))}\n" + CHECK)
    return json.loads(eval(r.text))


def test_quiet_matches_ipython_on_every_cell(ex):  # noqa: F811
    corpus = cells()
    out = run_check(ex, corpus)
    assert out["cells"] == len(corpus)
    assert out["differ"] == []
    # The parser answers for the cells that end in an expression (await
    # included: the executor allows it at the top level); the rest go to tokenize.
    assert out["parser"] >= len(PREFIXES) * len(EXPRESSIONS) * len(SUFFIXES) * 0.9


def test_a_semicolon_hides_the_result_in_a_cell(ex):  # noqa: F811
    assert ex.ok("x = 1; x").text == "1"
    assert ex.ok("x = 2; x;").result is None
    assert ex.ok("(x # c;\n)").text == "2"
    assert ex.ok("(x # c\n);").result is None
    assert ex.ok("'a;b'").text == "'a;b'"
    assert ex.ok("x \\\n;").result is None
    assert ex.ok("for i in []:\n    pass\nx;").result is None

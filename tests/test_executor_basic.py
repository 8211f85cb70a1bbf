"""Notebook semantics of a real cellvm-executor: namespace, results, output, errors, envs."""

import os
import re
import time

from test_executor_harness import (DISPLAY, EXEC_ERROR, EXEC_INPUT, RESULT, STREAM,  # noqa: F401
                                   ex, zygote)


def test_namespace_persists_and_counts(ex):
    r = ex.ok("x = 41")
    assert r.events[0] == (EXEC_INPUT, {"execution_count": 1})
    assert r.result is None and r.end["execution_count"] == 1
    r = ex.ok("x + 1")
    assert r.result == {"execution_count": 2, "data": {"text/plain": "42"}}
    assert ex.ok("__name__").text == "'__main__'"
    assert ex.ok("import builtins; __builtins__ is builtins").text == "True"


def test_count_increments_on_error_and_syntax_error(ex):
    assert ex.run("1/0").end == {"status": "error", "execution_count": 1}
    assert ex.run("x = (").end == {"status": "error", "execution_count": 2}
    assert ex.ok("3").result["execution_count"] == 3


def test_future_flags_carry_across_cells(ex):
    ex.ok("from __future__ import annotations")
    r = ex.ok("def f(a: UndefinedName) -> None: pass\nf.__annotations__['a']")
    assert r.text == "'UndefinedName'"


def test_semicolon_none_and_underscores(ex):
    assert ex.ok("1;").result is None
    assert ex.ok("1; # comment").result is None
    assert ex.ok("None").result is None
    ex.ok("10")
    ex.ok("20")
    ex.ok("30")
    assert ex.ok("(_, __, ___)").text == "(30, 20, 10)"
    assert ex.ok("Out[5], _5, type(Out).__name__").text == "(20, 20, 'dict')"
    assert ex.ok("In[5], _i5, _i").text == "('20', '20', 'Out[5], _5, type(Out).__name__')"


def test_stream_order_print_display_print(ex):
    r = ex.ok("print('a')\ndisplay('b')\nprint('c')")
    kinds = []
    for t, b in r.events[1:]:
        if t == STREAM and kinds and kinds[-1][0] == STREAM:
            kinds[-1] = (STREAM, kinds[-1][1] + b["text"])
        else:
            kinds.append((t, b["text"] if t == STREAM else b["data"]["text/plain"]))
    assert kinds == [(STREAM, "a\n"), (DISPLAY, "'b'"), (STREAM, "c\n")]


def test_fd_level_output(ex):
    r = ex.ok("import os, subprocess, ctypes\n"
              "os.write(1, b'fd1\\n')\n"
              "subprocess.run(['echo', 'sub'])\n"
              "libc = ctypes.CDLL(None); libc.printf(b'libc\\n'); libc.fflush(None)\n"
              "os.write(2, b'fd2\\n')\n"
              "print('py');")
    assert r.stdout == "fd1\nsub\nlibc\npy\n"
    assert r.stderr == "fd2\n"


def test_error_name_value_and_traceback_shows_cell_source(ex):
    r = ex.run("def f():\n    raise ValueError('bad thing')\nf()")
    e = r.error
    assert (e["name"], e["value"]) == ("ValueError", "bad thing")
    tb = "\n".join(e["traceback"])
    assert "raise ValueError('bad thing')" in tb and "----> 3 f()" in tb
    assert "cellvm kernel" not in tb
    assert r.end["status"] == "error"


def test_syntax_and_indentation_errors(ex):
    # IPython parses with codeop's flags: a cell cut short is incomplete input.
    e = ex.run("x = (").error
    # IPython parses with codeop's flags: a cell cut short is "incomplete input".
    assert e["name"] == "SyntaxError" and e["value"].startswith("incomplete input (")
    assert "never closed" in ex.run("x = (\ny = 2").error["value"]
    assert "x = (" in e["traceback"][0]
    assert ex.run("if 1:\nprint(1)").error["name"] == "IndentationError"


def test_system_exit_is_an_error_and_kernel_survives(ex):
    e = ex.run("import sys; sys.exit(3)").error
    assert (e["name"], e["value"]) == ("SystemExit", "3")
    assert ex.ok("1+1").text == "2"


def test_os_exit_kills_only_the_executor(zygote):
    a, b = zygote.spawn(), zygote.spawn()
    r = a.run("import os; os._exit(7)")
    assert r.end is None and a.dead
    deadline = time.monotonic() + 5
    while a.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not a.alive()
    assert b.ok("2*3").text == "6"
    assert zygote.spawn().ok("1").text == "1"


def test_envs_set_for_one_execution_then_deleted_as_e2b_does(ex):
    os.environ.pop("CELLVM_T_NEW", None)
    ex.ok("import os; os.environ['CELLVM_T_OLD'] = 'old'")
    r = ex.ok("os.environ.get('CELLVM_T_NEW'), os.environ['CELLVM_T_OLD']",
              envs={"CELLVM_T_NEW": "new", "CELLVM_T_OLD": "changed"})
    assert r.text == "('new', 'changed')"
    assert ex.ok("!echo $CELLVM_T_NEW-x", envs={"CELLVM_T_NEW": "sh"}).stdout == "sh-x\r\n"  # a pty, as ipykernel's !cmd
    # E2B's server deletes each of a run's variables after it (unless it is
    # sandbox-wide), even one the notebook had set before: so does cellvm.
    assert ex.ok("'CELLVM_T_NEW' in os.environ, 'CELLVM_T_OLD' in os.environ").text == \
        "(False, False)"


def test_sandbox_envs_are_set_once_and_win_over_a_runs_envs(ex):
    sbx = {"CELLVM_T_SBX": "s"}
    assert ex.ok("import os; os.environ['CELLVM_T_SBX']", sandbox_envs=sbx).text == "'s'"
    # As E2B's server: set at the first execution, so a cell's change stays.
    ex.ok("os.environ['CELLVM_T_SBX'] = 'changed'", sandbox_envs=sbx)
    assert ex.ok("os.environ['CELLVM_T_SBX']", sandbox_envs=sbx).text == "'changed'"
    # A run's envs win for that run; after it the sandbox value is back.
    assert ex.ok("v = os.environ['CELLVM_T_SBX']; os.environ['CELLVM_T_SBX'] = 'cell'; v",
                 sandbox_envs=sbx, envs={"CELLVM_T_SBX": "run"}).text == "'run'"
    assert ex.ok("os.environ['CELLVM_T_SBX']", sandbox_envs=sbx).text == "'s'"
    # Other sandbox envs (another client's) are set anew.
    assert ex.ok("os.environ['CELLVM_T_SBX']", sandbox_envs={"CELLVM_T_SBX": "t"}).text == "'t'"


def test_shell_lines_and_capture(ex):
    r = ex.ok("for i in range(2):\n    !echo loop{i}\nx = !printf 'a\\nb\\n'\nx")
    assert r.stdout == "loop0\r\nloop1\r\n"  # on a pty, as ipykernel
    assert r.text == "['a', 'b']"
    s = ex.ok("s = '''\n!not a command\n'''\ns")
    assert s.text == "'\\n!not a command\\n'"


def test_magics(ex, tmp_path):
    assert ex.ok("%matplotlib inline").events[1:] == []
    assert ex.ok("%cd " + str(tmp_path)).stdout == str(tmp_path) + "\n"
    assert ex.ok("%pwd").text == repr(str(tmp_path))
    assert ex.ok("%env CELLVM_T_MAGIC=1").stdout == "env: CELLVM_T_MAGIC=1\n"
    assert ex.ok("%env CELLVM_T_MAGIC").text == "'1'"
    r = ex.ok("%time sum(range(10))")
    assert r.text == "45"
    assert r.stdout.startswith("CPU times: user ") and "\nWall time: " in r.stdout
    e = ex.run("%nosuchmagic").error
    assert (e["name"], e["value"]) == ("UsageError", "Line magic function `%nosuchmagic` not found.")


def test_pdb_on_shows_where_an_error_was_raised_and_ends_the_cell(ex):
    # ipykernel's debugger asks for a command, which E2B's kernel cannot read:
    # its handler fails and the cell never ends. Here the cell ends with its
    # error, after what the debugger shows first (as %debug does).
    assert ex.ok("%pdb on").stdout == "Automatic pdb calling has been turned ON\n"
    r = ex.run("def inner():\n    return 1 / 0\ninner()")
    assert r.end["status"] == "error" and r.error["name"] == "ZeroDivisionError"
    entry = r.stdout.splitlines()
    assert re.match(r"^> .*\(2\)inner\(\)$", entry[0]), entry
    assert "----> 2     return 1 / 0" in entry
    # Syntax errors and usage errors open no debugger.
    assert ex.run("x = (").stdout == "" and ex.run("%nosuchmagic").stdout == ""
    assert ex.ok("%pdb").stdout == "Automatic pdb calling has been turned OFF\n"
    assert ex.run("1 / 0").stdout == ""
    assert ex.ok("%pdb maybe").stdout == "Incorrect argument. Use on/1, off/0, or nothing for a toggle.\n"
    assert ex.ok("get_ipython().call_pdb").text == "False"


def test_top_level_await(ex):
    assert ex.ok("import asyncio\nawait asyncio.sleep(0)\n5").text == "5"


def test_contexts_are_forked_with_preloads(zygote):
    e = zygote.spawn()
    r = e.ok("import sys; all(m in sys.modules for m in "
             "('numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'))")
    assert r.text == "True"
    # numpy works after fork (OpenBLAS threads) and random state differs per context
    a = e.ok("import numpy as np; (np.ones((64, 64)) @ np.ones((64, 64)))[0, 0]").text
    assert a == "64.0"
    r1 = e.ok("np.random.rand()").text
    r2 = zygote.spawn().ok("import numpy as np; np.random.rand()").text
    assert r1 != r2


def test_cwd_and_isolated_fds(zygote, tmp_path):
    e = zygote.spawn(cwd=str(tmp_path))
    assert e.ok("import os; os.getcwd()").text == repr(str(tmp_path))
    # 0-3, then the fd capture's four (the agent's pipes moved off 1 and 2, the
    # read ends of the pipes 1 and 2 now are), then listdir's own.
    fds = ["0", "1", "2", "3", "4", "5", "6", "7"]
    assert e.ok("sorted(os.listdir('/proc/self/fd'), key=int)").text in (repr(fds), repr(fds + ["8"]))
    assert e.ok("os.getsid(0) == os.getpid()").text == "True"


def test_libpython_is_linked_in_not_loaded(ex):
    """The executor carries libpython (as Debian's python3.11 does): the
    shared libpython3.11.so runs Python code slower (python-embed/build.mk),
    and the guest image does not ship it."""
    import subprocess
    from test_executor_harness import EXECUTOR
    needed = subprocess.run(["readelf", "-d", EXECUTOR], capture_output=True, text=True, check=True).stdout
    assert "(NEEDED)" in needed and "libpython" not in needed
    maps = ex.ok("open('/proc/self/maps').read()").result["data"]["text/plain"]
    assert "cellvm-executor" in maps and "libpython3" not in maps
    # extension modules find the C API in the executable itself
    assert ex.ok("import _ctypes, _decimal, numpy; numpy.arange(4).sum()").result["data"]["text/plain"] == "6"


def test_kernel_is_the_embedded_package_compiled_at_build_time(ex):
    """The kernel's modules (python-embed/kernel/) come from the binary as code
    compiled by the build's Python, named after their files; a module is
    compiled from its embedded source only where the bytecode would not fit."""
    r = ex.ok("import sys, importlib.util, _cellvm, _cellvm_import\n"
              "mods = {n: m for n, m in sys.modules.items() if n.split('.')[0] == '_cellvm_kernel'}\n"
              "(_cellvm.code_magic == importlib.util.MAGIC_NUMBER, len(mods),\n"
              " sorted({type(m.__spec__.loader).__name__ for m in mods.values()}),\n"
              " mods['_cellvm_kernel'].__path__, mods['_cellvm_kernel.magics.osm'].__spec__.origin,\n"
              " mods['_cellvm_kernel.iostream'].__spec__.origin)")
    compiled, count, loaders, path, osm, iostream = eval(r.text)
    assert compiled and count > 30 and loaders == ["EmbeddedFinder"] and path == []
    assert (osm, iostream) == ("<cellvm kernel/magics/osm.py>", "<cellvm kernel/iostream.py>")
    # A kernel frame inside a traceback: its file and source line; the cell's own frame first.
    tb = "\n".join(ex.run("get_ipython().run_line_magic('cd', 1)").error["traceback"])
    assert "File <cellvm kernel/zmqshell.py>:" in tb and "line.strip()" in tb
    assert tb.index("Cell In[") < tb.index("<cellvm kernel/")
    # The fallback: compiled from the source (a module not imported yet).
    r = ex.ok("import sys, _cellvm_import\n_cellvm_import._COMPILED = False\n"
              "sys.modules.pop('cellvm_bash', None)\nimport cellvm_bash\n"
              "_cellvm_import._COMPILED = True\n"
              "(callable(cellvm_bash.executor_main), cellvm_bash.__spec__.origin)")
    assert r.text == "(True, '<cellvm cellvm_bash>')"

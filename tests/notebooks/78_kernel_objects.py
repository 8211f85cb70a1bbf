# The kernel's own objects as a cell sees them: its streams, its launcher's
# command line, and sys.excepthook, which is the shell's while a cell runs
# (libraries call it to report an error: the cell goes on) and is put back
# after it.
# %%
import sys, builtins
sys.stdout, sys.stderr, sys.stdout.softspace
# %%
sys.orig_argv[1:3], sys.orig_argv[3:] == sys.argv[1:]
# %%
builtins.get_ipython, sys.excepthook
# %%
try:
    1 / 0
except Exception:
    sys.excepthook(*sys.exc_info())
print("after")
# %%
def f():
    raise KeyError("k")
try:
    f()
except Exception:
    get_ipython().showtraceback(tb_offset=0)
print("still after")
# %%
sys.excepthook = lambda *a: print("mine")
# %%
sys.excepthook.__qualname__

# The kernel's own objects as a cell sees them: its streams, its launcher's
# command line, sys.excepthook, which is the shell's while a cell runs
# (libraries call it to report an error: the cell goes on) and is put back
# after it, and sys.displayhook.
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
# %%
# The displayhook object, sys's and the shell's; a cell may set its own,
# which gets every value of that cell (None and a ';' one included) until
# the next cell, which has the kernel's again.
import sys
sys.displayhook, sys.displayhook is get_ipython().displayhook, get_ipython().displayhook.prompt_count
# %%
sys.displayhook = lambda v: print("hook got", repr(v))
5
# %%
6
# %%
sys.displayhook = lambda v: print("hook got", repr(v))
print("printed")
# %%
sys.displayhook = lambda v: print("hook got", repr(v))
7;
# %%
get_ipython().displayhook.quiet(), 8
# %%
x = 9;
get_ipython().displayhook.quiet()
# %%
# exit and quit: ipykernel's ZMQExitAutocall objects.
type(quit).__name__, type(exit).__module__, repr(exit), quit is exit

# %%
# breakpoint() does nothing (ipykernel's debugpy hook, no debugger attached);
# pdb is IPython's: its stack entry, then a prompt E2B's kernel cannot answer.
import sys
x = 5
breakpoint()
'after'
# %%
import pdb
pdb.set_trace()
'after pdb'
# %%
def divide(a, b):
    return a / b
try:
    divide(1, 0)
except ZeroDivisionError:
    pdb.post_mortem(sys.exc_info()[2])
# %%
list(_oh.values())[-1]
# %%
type(_dh).__name__, _ih[-1]
# %%
print(__doc__)
# %%
sorted(k for k in vars() if not k.startswith('_'))[:5]
# %%
display = print
display('shadowed display')
# %%
del display
from IPython.display import display
display('restored')
# %%
input = lambda prompt='': 'fake'
input('q')
# %%
del input
# %%
def gen():
    try:
        yield 1
    finally:
        print('closed')
g = gen(); next(g)
# %%
del g
# %%
import sys
sys.settrace(None)
'ok'
# %%
help(len)
# %%
help()

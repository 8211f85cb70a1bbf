# %%
# IPython's autocall on one-line cells: `f x` runs as f(x), shown as
# "------> f(x)" (twice, as ipykernel transforms a cell twice); mode 2 calls
# a lone callable too. Multi-line cells are never autocalled.
%autocall
# %%
%autocall
# %%
%autocall
# %%
def f(*a):
    return a
# %%
f 1, 2
# %%
f
# %%
len "abc"
# %%
f = 3
# %%
def g(x=0):
    return x + 1
# %%
g 41;
# %%
%autocall 2
# %%
g
# %%
g (5)
# %%
g + 1
# %%
import math
# %%
math.sqrt 16
# %%
r"raw"
# %%
d = {'a': 1}
# %%
d ['a']
# %%
print "hello", "world"
# %%
g is None
# %%
not_defined 3
# %%
%autocall 7
# %%
%autocall x
# %%
get_ipython().autocall
# %%
%autocall 0
# %%
g 1
